"""Sessions and statements that must not outlive pgwx, and trials that must not outlive them.

Issue 12, findings 2 and 4, on real servers: a killed pgwx's statement ends on the server
within the connection check interval; recovery ends a dead pgwx's backends and never hangs on
a lock; a workload session terminated mid-COPY fails its trial within seconds and the matrix
goes on, also across a restart of the server.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import asyncpg
import pytest

from explorer.lab.run.runner import Runner, RunOptions
from explorer.lab.run.session import recover
from explorer.lab.scope import create_marked_schema
from explorer.lab.store.results import ResultStore
from explorer.lab.workloads.base import TrialContext, session_settings, statement_timeout_ms
from explorer.lab.workloads.bulk_write import BulkWriteParams
from explorer.models import (
    Event,
    Knobs,
    Notice,
    PhaseStarted,
    Profile,
    RunRecord,
    TrialEnded,
    Variant,
)
from explorer.server.capabilities import probe
from explorer.server.connect import Target
from explorer.server.embedded import LocalServer
from tests.support.paths import ROOT as REPO
from tests.support.runs import small_profile
from tests.support.server import drop_pgwx_schemas, server_state


async def run_live(
    target: Target, profile: Profile, store: ResultStore, on_event: Callable[[Event], None]
) -> RunRecord:
    """Run through the real Runner, events seen as they happen; the server is left clean."""
    before = await server_state(target)
    runner = Runner(target, profile, store, RunOptions(sample=False, settle_seconds=0))
    record = await asyncio.wait_for(runner.run(on_event), timeout=600)
    after = await server_state(target)
    assert after["pgwx_lab"] is False
    assert after["auto_conf"] == before["auto_conf"]
    return record


def dsn_of(target: Target) -> str:
    """A keyword/value DSN for a bundled test server (so a child can reach it)."""
    assert target.bundled is not None
    kw = target.bundled.connect_kwargs()
    return f"host={kw['host']} port={kw['port']} user={kw['user']} dbname={kw['database']}"


async def helper_conn(target: Target, appname: str) -> asyncpg.Connection:
    """A session that is not pgwx's (or pretends to be one of a dead pgwx's)."""
    return await asyncpg.connect(
        **target.connect_kwargs(), server_settings={"application_name": appname}
    )


async def wait_until(check, timeout: float, poll: float = 0.1) -> bool:  # type: ignore[no-untyped-def]
    """Poll `check()` (async) until it is true or `timeout` runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if await check():
            return True
        await asyncio.sleep(poll)
    return False


# --------------------------------------------------------------------------- finding 2

SLEEPY_PGWX = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path
    from explorer.lab.store.results import ResultStore
    from explorer.lab.run.runner import Runner, RunOptions
    from explorer.lab.workloads.table_kind import TableKindWorkload
    from explorer.models import Profile, Variant
    from explorer.server.connect import Target

    async def sleepy(self, ctx):
        # a statement that never reads from its client, like INSERT ... generate_series
        await ctx.db.execute("SELECT pg_sleep(600)")

    TableKindWorkload.trial = sleepy
    profile = Profile(name="t", title="t", workload="table-kind", params={"rows": 10},
                      repeats=1, settle_seconds=0, variants=[Variant(name="a")])
    runner = Runner(Target(dsn=sys.argv[1]), profile, ResultStore(Path(sys.argv[2])),
                    RunOptions(sample=False, settle_seconds=0))
    asyncio.run(runner.run())
    """
)


@pytest.fixture
def sleepy_pgwx(tmp_path: Path) -> Iterator[Callable[[Target], subprocess.Popen[bytes]]]:
    procs: list[subprocess.Popen[bytes]] = []

    def start(target: Target) -> subprocess.Popen[bytes]:
        env = {**os.environ, "PYTHONPATH": str(REPO), "PGWX_STATE_DIR": str(tmp_path / "st")}
        proc = subprocess.Popen(
            [sys.executable, "-c", SLEEPY_PGWX, dsn_of(target), str(tmp_path / "r.sqlite")],
            env=env,
            cwd=tmp_path,
        )
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


async def test_statement_of_a_killed_pgwx_ends_on_the_server(
    any_pg: Target,
    sleepy_pgwx,  # type: ignore[no-untyped-def]
) -> None:
    admin = await helper_conn(any_pg, "test-observer")
    find = (
        "SELECT pid FROM pg_stat_activity WHERE application_name LIKE 'pgwx-work-%main' "
        "AND query LIKE '%pg_sleep(600)%' AND state = 'active'"
    )
    try:
        proc = sleepy_pgwx(any_pg)

        async def running() -> bool:
            return bool(await admin.fetchval(find))

        assert await wait_until(running, 120), "the child's statement never started"
        proc.send_signal(signal.SIGKILL)
        proc.wait()

        async def gone() -> bool:
            return not await admin.fetchval(find)

        # client_connection_check_interval is 2 s; allow a loaded machine plenty more
        assert await wait_until(gone, 30), "the dead client's statement still runs"
    finally:
        await admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE application_name LIKE 'pgwx-%' AND query LIKE '%pg_sleep(600)%'"
        )
        await drop_pgwx_schemas(admin)
        await admin.close()


async def _caps(target: Target):  # type: ignore[no-untyped-def]
    conn = await target.connect("admin")
    try:
        return await probe(conn, owned=target.owned)
    finally:
        await conn.close()


DEAD_RUN = "20240101-000000-dead01"
"""A run no pgwx is running: its marked schema is what a killed pgwx left (issue 19)."""


async def test_recovery_ends_a_dead_pgwx_backend_holding_its_schema(pg18: Target) -> None:
    setup = await helper_conn(pg18, "test-setup")
    # what a killed pgwx leaves: its marked schema, and a busy workload backend holding a
    # lock in it
    dead = await create_marked_schema(setup, DEAD_RUN)
    await setup.execute(f"CREATE TABLE {dead}.t (a int)")
    await setup.close()
    orphan = await helper_conn(pg18, "pgwx-work-main")
    busy = asyncio.ensure_future(
        orphan.execute(f"BEGIN; LOCK {dead}.t; SELECT pg_sleep(600); COMMIT")
    )
    said: list[str] = []
    observer = await helper_conn(pg18, "test-observer")
    try:

        async def locked() -> bool:
            return bool(
                await observer.fetchval(
                    "SELECT count(*) FROM pg_stat_activity WHERE application_name = "
                    "'pgwx-work-main' AND query LIKE '%pg_sleep%' AND state = 'active'"
                )
            )

        assert await wait_until(locked, 30)
        await asyncio.wait_for(recover(pg18, await _caps(pg18), said.append), 60)
    finally:
        if not busy.done():  # recovery left it running: end it here
            await observer.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE application_name = 'pgwx-work-main'"
            )
        await asyncio.gather(busy, return_exceptions=True)
        orphan.terminate()
        await observer.close()
    assert any("ended" in m and "pgwx-work-main" in m for m in said), said
    assert any(f"dropped schema {dead}" in m for m in said), said
    check = await pg18.connect("test")
    try:
        assert not await check.fetchval(f"SELECT to_regnamespace('{dead}') IS NOT NULL")
    finally:
        await check.close()


async def test_recovery_names_a_lock_it_cannot_take_instead_of_hanging(pg18: Target) -> None:
    other = await helper_conn(pg18, "someone-else")
    dead = await create_marked_schema(other, DEAD_RUN)  # a killed pgwx's schema
    await other.execute(f"CREATE TABLE {dead}.t (a int)")
    pid = await other.fetchval("SELECT pg_backend_pid()")
    await other.execute("BEGIN")
    await other.execute(f"LOCK {dead}.t IN ACCESS SHARE MODE")
    said: list[str] = []
    try:
        await asyncio.wait_for(recover(pg18, await _caps(pg18), said.append), 60)
    finally:
        await other.execute("ROLLBACK")
        await drop_pgwx_schemas(other)
        await other.close()
    sentence = next((m for m in said if f"could not drop schema {dead}" in m), None)
    assert sentence is not None, said
    assert str(pid) in sentence and "someone-else" in sentence and f"LOCK {dead}.t" in sentence


# --------------------------------------------------------------------------- finding 4

COPY_ROWS = 1_000_000
"""Big enough that the COPY is seen in pg_stat_activity before it ends."""


def one_failure_then_ok(record: RunRecord) -> str:
    """The one failed trial's reason; every trial after it must have run and succeeded."""
    statuses = [t.status for t in record.trials]
    assert statuses.count("failed") == 1, [(t.status, t.reason) for t in record.trials]
    at = statuses.index("failed")
    assert at < len(statuses) - 1, "the failure hit the last trial: nothing came after it"
    assert statuses[at + 1 :] == ["ok"] * (len(statuses) - at - 1)
    return record.trials[at].reason or ""


def bulk(repeats: int = 2):  # type: ignore[no-untyped-def]
    return small_profile("bulk-write", [Variant(name="a")], rows=COPY_ROWS, repeats=repeats)


async def first_copy_backend(observer: asyncpg.Connection) -> int | None:
    pid = await observer.fetchval(
        "SELECT pid FROM pg_stat_activity WHERE application_name LIKE 'pgwx-work-%main' "
        "AND state = 'active' AND query LIKE 'COPY%'"
    )
    return int(pid) if pid else None


async def test_session_terminated_mid_copy_fails_the_trial_and_the_run_goes_on(
    any_pg: Target, store: ResultStore
) -> None:
    observer = await helper_conn(any_pg, "test-observer")
    ended_at: list[float] = []
    killed_at: list[float] = []
    events: list[Event] = []

    def seen(event: Event) -> None:
        events.append(event)
        if isinstance(event, TrialEnded):
            ended_at.append(time.monotonic())

    async def terminate_first_copy() -> None:
        async def in_copy() -> bool:
            pid = await first_copy_backend(observer)
            if pid is None:
                return False
            await observer.execute("SELECT pg_terminate_backend($1)", pid)
            killed_at.append(time.monotonic())
            return True

        await wait_until(in_copy, 600, poll=0.05)

    killer = asyncio.create_task(terminate_first_copy())
    try:
        record = await run_live(any_pg, bulk(repeats=3), store, seen)
    finally:
        killer.cancel()
        await asyncio.gather(killer, return_exceptions=True)
        await observer.close()
    assert killed_at, "the COPY was never seen"
    reason = one_failure_then_ok(record)
    assert "terminated the workload session" in reason, reason
    assert "administrator command" in reason, reason
    noticed = next(t for t in ended_at if t > killed_at[0]) - killed_at[0]
    assert noticed < 60, "the failed trial took too long to notice"
    assert record.status == "finished"


@pytest.fixture
def own_server(pg_base: Path, tmp_path: Path) -> Iterator[LocalServer]:
    """A server only this test uses, so it may be restarted at will."""
    server = LocalServer(pg_base / f"own-{os.getpid()}-{tmp_path.name[-8:]}")
    server.start()
    yield server
    server.stop()


async def test_a_restart_of_an_external_server_mid_trial_does_not_end_the_run(
    own_server: LocalServer, store: ResultStore
) -> None:
    kw = own_server.connect_kwargs()
    external = Target(
        dsn=f"host={kw['host']} port={kw['port']} user={kw['user']} dbname={kw['database']}"
    )
    restarted = threading.Event()
    events: list[Event] = []

    def seen(event: Event) -> None:
        events.append(event)
        if isinstance(event, PhaseStarted) and event.phase == "copy" and event.repeat == 1:
            # restart once the first COPY runs, as an administrator would
            threading.Thread(target=lambda: (own_server.restart(), restarted.set())).start()

    record = await run_live(external, bulk(repeats=3), store, seen)
    assert restarted.wait(120)
    one_failure_then_ok(record)
    notes = notes_of(events)
    assert any("answers again" in n for n in notes), notes
    assert record.status == "finished"


def notes_of(events: list[Event]) -> list[str]:
    return [e.message for e in events if isinstance(e, Notice)]


def test_statement_timeout_follows_the_profile_size() -> None:
    small = BulkWriteParams(rows=1000)
    big = BulkWriteParams(rows=50_000_000)
    assert statement_timeout_ms(small) == 10 * 60 * 1000  # never below ten minutes
    assert statement_timeout_ms(big) == 50_000_000  # 1 ms a row
    assert statement_timeout_ms(big.scaled(2)) == 100_000_000


async def test_workload_sessions_and_tools_carry_the_guards(any_pg: Target, tmp_path: Path) -> None:
    caps = await _caps(any_pg)
    params = BulkWriteParams(rows=50_000_000)
    ctx = TrialContext(
        target=any_pg,
        caps=caps,
        knobs=Knobs(),
        variant="a",
        repeat=1,
        workdir=tmp_path,
        emit=lambda _e: None,
        settle=lambda: asyncio.sleep(0),
        clock=time.monotonic,
        session_settings=session_settings(caps, params),
    )
    show = (
        "SELECT current_setting('statement_timeout'), "
        "current_setting('client_connection_check_interval')"
    )
    conn = await ctx.connect("main")
    try:
        assert tuple(await conn.fetchrow(show)) == ("50000s", "2s")
        out = await ctx.run_tool([any_pg.tool("psql"), "-XAtc", show])
        assert out.strip() == "50000s|2s"
    finally:
        await ctx.close()
