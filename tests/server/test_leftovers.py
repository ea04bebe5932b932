"""Settings left behind (issue 12, finding 5), on real servers.

A risky setting someone else left off its default is named before measuring and in the
report; an undo that fails because the server is down names each value still in force and
its file; the bundled cluster that cannot start with a value pgwx journaled is repaired
offline and started; the journal is private to its user.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from explorer.analysis.report import render
from explorer.lab.run.runner import Runner, RunOptions
from explorer.lab.run.session import recover, resolve_target
from explorer.lab.safety.settings import Journal
from explorer.lab.store.results import ResultStore
from explorer.models import Event, Knobs, Notice, TrialEnded, TrialStarted, Variant
from explorer.server.capabilities import probe
from explorer.server.connect import LIBPQ_ENV, Target
from explorer.server.datadir import ServerError
from explorer.server.embedded import LocalServer
from tests.support.runs import RunProfile, small_profile


@pytest.fixture
def own_server(pg_base: Path, tmp_path: Path) -> Iterator[LocalServer]:
    """A server only this test uses, so it may be stopped, broken and repaired."""
    server = LocalServer(pg_base / f"lo-{os.getpid()}-{tmp_path.name[-10:]}")
    server.start()
    yield server
    server.stop()


def external(server: LocalServer) -> Target:
    """The same server reached as a user's server (a DSN), not as pgwx's own."""
    kw = server.connect_kwargs()
    return Target(
        dsn=f"host={kw['host']} port={kw['port']} user={kw['user']} dbname={kw['database']}"
    )


async def caps_of(target: Target):  # type: ignore[no-untyped-def]
    conn = await target.connect("admin")
    try:
        return await probe(conn, owned=target.owned)
    finally:
        await conn.close()


async def test_a_risky_setting_left_by_someone_else_is_named_before_measuring(
    any_pg: Target, run_profile: RunProfile
) -> None:
    conn = await any_pg.connect("test")
    try:
        # what a pgwx of another OS account left: its journal is not ours to read
        await conn.execute("ALTER SYSTEM SET fsync = off")
        await conn.execute("SELECT pg_reload_conf()")
        profile = small_profile("table-kind", [Variant(name="a")], rows=1000)
        record, events = await run_profile(any_pg, profile)
    finally:
        await conn.execute("ALTER SYSTEM RESET fsync")
        await conn.execute("SELECT pg_reload_conf()")
        await conn.close()
    first_trial = next(i for i, e in enumerate(events) if isinstance(e, TrialStarted))
    warned = [
        e.message
        for e in events[:first_trial]
        if isinstance(e, Notice) and e.level == "warning" and "fsync=off" in e.message
    ]
    assert warned, [e for e in events if isinstance(e, Notice)]
    assert "postgresql.auto.conf" in warned[0] and "not set by this pgwx" in warned[0]
    report = render(record, "md")
    assert "Off their defaults on this server, not set by pgwx: fsync=off" in report


async def test_undo_that_fails_on_a_stopped_server_names_values_and_file(
    own_server: LocalServer, store: ResultStore
) -> None:
    target = external(own_server)
    knobs = Knobs(synchronous_commit="off")
    profile = small_profile("table-kind", [Variant(name="async", knobs=knobs)], rows=1000)
    events: list[Event] = []

    def seen(event: Event) -> None:
        events.append(event)
        if isinstance(event, TrialEnded):
            own_server.stop()  # the server goes away before pgwx can put anything back

    runner = Runner(target, profile, store, RunOptions(sample=False, settle_seconds=0))
    await runner.run(seen)
    auto_conf = own_server.data_dir / "postgresql.auto.conf"
    said = [e.message for e in events if isinstance(e, Notice) and e.level == "error"]
    left = [m for m in said if "synchronous_commit='off'" in m]
    assert left, said
    assert str(auto_conf) in left[0]
    assert not any("restored" in m and "could not" not in m for m in said)
    # it is really there, and the next session puts it back
    assert "synchronous_commit" in auto_conf.read_text()
    own_server.start()
    told: list[str] = []
    await recover(target, await caps_of(target), told.append)
    assert "synchronous_commit" not in auto_conf.read_text()


async def test_bundled_cluster_that_cannot_start_is_repaired_offline(
    own_server: LocalServer, store: ResultStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in LIBPQ_ENV:
        monkeypatch.delenv(var, raising=False)
    target = Target(bundled=own_server)
    caps = await caps_of(target)
    journal = Journal(caps.system_identifier)
    # What a pgwx killed during its restart for shared_buffers = 7TB leaves (a live pgwx
    # repairs at once: tests/faults/test_truth_restarts.py): the value journaled and set,
    # and a server that cannot start with it.
    journal.save({"shared_buffers": {"auto": None, "set": "7TB"}})
    conn = await target.connect("test")
    try:
        await conn.execute("ALTER SYSTEM SET shared_buffers = '7TB'")
    finally:
        await conn.close()
    assert own_server.stop()
    with pytest.raises(ServerError):
        own_server.start()
    own_server.release()

    said: list[str] = []
    again = resolve_target(None, own_server.data_dir, said.append)
    assert again.bundled is not None and again.bundled.is_running()
    repaired = [m for m in said if "shared_buffers='7TB'" in m]
    assert repaired and "postgresql.auto.conf" in repaired[0], said
    conn = await again.connect("test")
    try:
        assert await conn.fetchval("SHOW shared_buffers") != "7TB"
    finally:
        await conn.close()
    assert "shared_buffers" not in journal.load()
    again.bundled.stop()
    own_server.start()  # the fixture stops what it started


def test_journal_is_private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    state = tmp_path / "fresh" / "state"
    monkeypatch.setenv("PGWX_STATE_DIR", str(state))
    old = os.umask(0o022)
    try:
        journal = Journal("123")
        journal.save({"fsync": {"auto": None, "set": "off"}})
    finally:
        os.umask(old)
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    assert stat.S_IMODE(journal.path.stat().st_mode) == 0o600
