"""Faults, tried for real: restarts, crashes, kills, a full disk, hostile roles, Ctrl-C, quit.

Each case breaks something while a trial runs — on clusters of the module's own, the bundled
PostgreSQL 18 (which pgwx owns) and a Debian PostgreSQL 15 reached through a DSN with a
password — and then checks what pgwx promises: server settings and postgresql.auto.conf as
they were, no pgwx schema or session left, the results store intact (SQLite's integrity check,
and a run finished before the fault byte for byte as it was), and the interrupted run marked
with its reason. Trials are held mid-run by a gate (tests/support/faults.py), never by timing.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import tempfile
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import pytest_asyncio

from explorer.lab.profiles.catalog import load_profile
from explorer.lab.run.runner import Runner, RunOptions
from explorer.lab.run.session import Session
from explorer.lab.store.results import INTERRUPTED, ResultStore
from explorer.models import Event, Notice, Profile, RunRecord, TrialEnded
from explorer.server.connect import Target
from explorer.server.embedded import LocalServer
from tests.support.cli import FINISHED
from tests.support.faults import (
    LIMITED,
    PASSWORD,
    PAUSED,
    ROLE,
    FaultServer,
    Gate,
    finish,
    integrity,
    profile_toml,
    read_until,
    run_ids,
    run_status,
    sigkill,
    small_tmpfs,
    start_pgwx,
    stored_rows,
    wait_until,
)
from tests.support.server import PG15_BIN

CANCELLED = "cancelled by the user"


# --------------------------------------------------------------------------- the servers


@pytest.fixture(scope="module")
def fault_base() -> Iterator[Path]:
    """A short, world-traversable directory for this module's clusters."""
    base = Path(tempfile.mkdtemp(prefix="pgwx-f-", dir="/tmp"))
    base.chmod(0o755)
    yield base
    shutil.rmtree(base, ignore_errors=True)


SERVERS: list[FaultServer] = []
"""This module's clusters, put back after every case."""


def _own_server(path: Path, bindir: Path | None) -> FaultServer:
    server = LocalServer(path, bindir=bindir)
    server.start()
    fs = FaultServer(server)
    asyncio.run(fs.add_roles())
    SERVERS.append(fs)
    return fs


@pytest_asyncio.fixture(autouse=True)
async def put_back_servers() -> AsyncIterator[None]:
    """Whatever a case left (an xfail case leaves what its defect leaves), the next starts
    from a clean, running cluster."""
    yield
    for fs in SERVERS:
        await fs.reset()


@pytest.fixture(scope="module")
def f18(fault_base: Path) -> Iterator[FaultServer]:
    fs = _own_server(fault_base / "f18", None)
    yield fs
    SERVERS.remove(fs)
    fs.server.stop()


@pytest.fixture(scope="module")
def f15(fault_base: Path) -> Iterator[FaultServer]:
    if not (PG15_BIN / "initdb").exists():
        if os.environ.get("CI"):
            pytest.fail("Debian's postgresql-15 is not installed; .ci/run must apt-get it.")
        pytest.skip("Debian's postgresql-15 is not installed (apt-get install -y postgresql-15)")
    fs = _own_server(fault_base / "f15", PG15_BIN)
    yield fs
    SERVERS.remove(fs)
    fs.server.stop()


@dataclass
class Case:
    """One server as pgwx sees it in a fault case."""

    fs: FaultServer
    """The cluster, for the test's own hands (restart, kill, superuser checks)."""
    target: Target
    """How pgwx reaches it: the bundled server it owns, or a password DSN."""
    cli: list[str]
    """The same for `pgwx run`'s command line."""


@pytest.fixture(params=["pg18", "pg15"])
def case(request: pytest.FixtureRequest) -> Case:
    """Each case on the bundled PG 18 (owned) and on PG 15 through a password DSN."""
    if request.param == "pg18":
        fs: FaultServer = request.getfixturevalue("f18")
        return Case(fs, Target(bundled=fs.server), ["--data-dir", str(fs.server.data_dir)])
    fs = request.getfixturevalue("f15")
    return Case(fs, Target(dsn=fs.dsn()), ["--dsn", fs.dsn()])


# --------------------------------------------------------------------------- the store


@pytest.fixture(scope="module")
def earlier_store(f18: FaultServer, fault_base: Path) -> tuple[Path, str]:
    """A store holding one finished run, made once; each test gets a copy."""
    path = fault_base / "earlier.sqlite"
    profile = _profile(fault_base, "earlier", profile_toml({"plain": ""}, gate=False, rows=50))
    store = ResultStore(path)
    try:
        record = asyncio.run(Runner(Target(bundled=f18.server), profile, store, _options()).run())
    finally:
        store.close()
    assert record.status == "finished"
    return path, record.id


@dataclass
class Store:
    """A test's results store, with the run finished before the fault."""

    path: Path
    earlier: str
    """Id of the run finished before the fault."""
    earlier_rows: dict[str, list[tuple[object, ...]]]
    """That run as stored before the fault."""

    def assert_intact(self) -> None:
        """SQLite says ok, and the earlier run is exactly as it was."""
        assert integrity(self.path) == "ok"
        assert stored_rows(self.path, self.earlier) == self.earlier_rows
        assert PASSWORD.encode() not in self.path.read_bytes()


@pytest.fixture
def results(
    tmp_path: Path, earlier_store: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> Store:
    monkeypatch.setenv("PGWX_STATE_DIR", str(tmp_path / "state"))
    path = tmp_path / "results.sqlite"
    shutil.copyfile(earlier_store[0], path)
    return Store(path, earlier_store[1], stored_rows(path, earlier_store[1]))


def _profile(folder: Path, name: str, text: str) -> Profile:
    path = folder / f"{name}.toml"
    path.write_text(text)
    return load_profile(str(path))


def _options(**kw: object) -> RunOptions:
    kw.setdefault("settle_seconds", 0.0)
    kw.setdefault("sample", False)
    return RunOptions(**kw)  # type: ignore[arg-type]


async def _start_run(
    target: Target, profile: Profile, path: Path, **kw: object
) -> tuple[asyncio.Task[RunRecord], ResultStore, list[Event]]:
    store = ResultStore(path)
    events: list[Event] = []
    runner = Runner(target, profile, store, _options(**kw))
    return asyncio.create_task(runner.run(events.append)), store, events


def _notices(events: list[Event]) -> str:
    return "\n".join(e.message for e in events if isinstance(e, Notice))


# --------------------------------------------------------------------------- 1. restart


async def test_server_restarted_mid_run(case: Case, results: Store, tmp_path: Path) -> None:
    before = await case.fs.state()
    profile = _profile(tmp_path, "restart", profile_toml())
    async with Gate(case.fs) as gate:
        task, store, events = await _start_run(case.target, profile, results.path)
        try:
            await gate.reached()
            # A restart in two steps, so the run surely meets the server down: stopped, and
            # started again once the trial in flight has ended.
            await asyncio.to_thread(case.fs.server.stop)
            await gate.close()  # the stop ended it already; the second trial walks through

            async def trial_ended() -> bool:
                return any(isinstance(e, TrialEnded) for e in events)

            await wait_until(trial_ended, "the trial in flight to end", 60)
            await asyncio.to_thread(case.fs.server.start)
            record = await asyncio.wait_for(task, 120)
        finally:
            task.cancel()
            store.close()
    await case.fs.assert_as_before(before)
    results.assert_intact()
    first, second = record.trials
    assert first.status == "failed"
    # The server's own reason, or pgwx's sentence that the server went away under the trial.
    why = first.reason or ""
    assert any(s in why for s in ("administrator command", "shutting down", "restarted")), why
    # the server answers again: the matrix goes on
    assert second.status == "ok", (second.reason, _notices(events))
    assert record.status == "finished"


# --------------------------------------------------------------------------- 2. postmaster


async def test_postmaster_killed_mid_run(case: Case, results: Store, tmp_path: Path) -> None:
    before = await case.fs.state()
    profile = _profile(tmp_path, "crash", profile_toml())
    async with Gate(case.fs) as gate:
        task, store, events = await _start_run(case.target, profile, results.path)
        try:
            await gate.reached()
            killed = case.fs.kill_postmaster()
            await gate.close()

            async def trial_ended() -> bool:
                return any(isinstance(e, TrialEnded) for e in events)

            # The trial in flight fails within seconds; the run then waits for the server.
            await wait_until(trial_ended, "the trial in flight to end", 60)
            await case.fs.start_again(killed)
            record = await asyncio.wait_for(task, 180)  # goes on once it answers, not hangs
        finally:
            task.cancel()
            store.close()
    # An orphaned backend may still finish the trial in flight after its postmaster died;
    # either way the run ends by itself (no hang), and a lost trial says why.
    assert record.status in ("finished", "failed"), record
    assert all(t.reason for t in record.trials if t.status == "failed"), record.trials
    # the run put its settings back itself, once the server was up again
    await case.fs.assert_as_before(before)
    results.assert_intact()


# --------------------------------------------------------------------------- 3. SIGKILL pgwx


async def test_pgwx_sigkilled_repeatedly(case: Case, results: Store, tmp_path: Path) -> None:
    before = await case.fs.state()
    (tmp_path / "kill.toml").write_text(profile_toml())
    run = ["run", str(tmp_path / "kill.toml"), *case.cli, "--no-sample", "--settle", "0"]
    seen: list[str] = []
    killed: list[str] = []

    async def newest_run() -> str:
        await asyncio.sleep(0)
        return run_ids(results.path)[-1]

    # 1: at the gate — settings changed, schema made, a workload statement on the server
    async with Gate(case.fs) as gate:
        child = await start_pgwx(tmp_path, *run)
        try:
            await gate.reached()
        finally:
            await sigkill(child)
        killed.append(await newest_run())
    # 2: inside a store write (the first trial's, after its INSERT, before COMMIT)
    child = await start_pgwx(tmp_path, *run, PGWX_FAULT_PAUSE_IN_WRITE="1")
    try:
        await read_until(child, PAUSED, seen)
    finally:
        await sigkill(child)
    killed.append(await newest_run())
    # 3: just after the settings were changed
    child = await start_pgwx(tmp_path, *run)
    try:
        await read_until(child, "applied ", seen)
    finally:
        await sigkill(child)
    killed.append(await newest_run())
    assert len(set(killed)) == 3, killed
    # the next `pgwx run` puts everything back, and runs
    child = await start_pgwx(tmp_path, *run)
    out, err = await finish(child)
    assert child.returncode in FINISHED, err
    await case.fs.assert_as_before(before)
    results.assert_intact()
    for run_id in killed:
        assert run_status(results.path, run_id) == ("incomplete", INTERRUPTED)
    # the killed runs' scratch directories (prepared data, dumps) went with the next run
    assert not list((tmp_path / "tmp").glob("pgwx-run-*"))
    store = ResultStore(results.path)
    try:
        # the trial being written when pgwx died is lost, and only that
        assert [t.status for t in store.load(killed[1]).trials] == []
        assert store.load(run_ids(results.path)[-1]).status == "finished"
    finally:
        store.close()
    assert PASSWORD not in out + err + "".join(seen)


async def test_killed_pgwxs_statement_does_not_outlive_it(
    f15: FaultServer, results: Store, tmp_path: Path
) -> None:
    before = await f15.state()
    (tmp_path / "hang.toml").write_text(profile_toml())
    (tmp_path / "next.toml").write_text(profile_toml({"plain": ""}, gate=False, rows=10))
    dsn = ["--dsn", f15.dsn(), "--no-sample", "--settle", "0"]
    async with Gate(f15) as gate:
        child = await start_pgwx(tmp_path, "run", str(tmp_path / "hang.toml"), *dsn)
        try:
            await gate.reached()
        finally:
            await sigkill(child)
        # the gate stays shut: the dead pgwx's statement would wait forever
        child = await start_pgwx(tmp_path, "run", str(tmp_path / "next.toml"), *dsn)
        _out, err = await finish(child)
        assert child.returncode in FINISHED, err
        await f15.assert_as_before(before, session_wait=10)


# --------------------------------------------------------------------------- 4. full disk


@pytest.fixture
def tmpfs() -> Iterator[Path]:
    """A 96 MB tmpfs, its server stopped and the tmpfs unmounted afterwards (root only)."""
    with small_tmpfs() as mount:
        server = LocalServer(mount / "pg")
        try:
            yield mount
        finally:
            (mount / "ballast").unlink(missing_ok=True)
            try:
                server.stop()
            except Exception:
                pid = mount / "pg" / "postmaster.pid"
                if pid.exists():
                    os.kill(int(pid.read_text().split()[0]), signal.SIGKILL)


async def _run_on_a_full_disk(
    mount: Path, results: Store, tmp_path: Path
) -> tuple[RunRecord, list[Event], FaultServer, dict[str, object]]:
    """The bundled server on a tmpfs with ~6 MB free; a run whose trials want ~25 MB each."""
    server = LocalServer(mount / "pg")
    await asyncio.to_thread(server.start)
    fs = FaultServer(server)
    before = await fs.state()
    free = os.statvfs(mount)
    with (mount / "ballast").open("wb") as f:
        os.posix_fallocate(f.fileno(), 0, free.f_bavail * free.f_frsize - 6 * 1024 * 1024)
    variants = {"unlogged": 'table_kind = "unlogged", synchronous_commit = "off"', "logged": ""}
    profile = _profile(tmp_path, "full", profile_toml(variants, gate=False, rows=100_000))
    task, store, events = await _start_run(Target(bundled=server), profile, results.path)
    try:
        record = await asyncio.wait_for(task, 120)  # fails, does not hang
    finally:
        task.cancel()
        store.close()
    return record, events, fs, before


async def test_full_disk_fails_the_trial_with_a_sentence(
    tmpfs: Path, results: Store, tmp_path: Path
) -> None:
    record, _events, fs, before = await _run_on_a_full_disk(tmpfs, results, tmp_path)
    assert [t.status for t in record.trials] == ["failed", "failed"], record.trials
    for trial in record.trials:
        assert "No space left on device" in (trial.reason or ""), trial.reason
        assert "\n" not in (trial.reason or "")
    assert record.status == "failed" and record.reason == "no trial finished"
    # space again: the cluster serves, and the next start puts back what the undo could not
    (tmpfs / "ballast").unlink()
    if not fs.server.is_running():
        await asyncio.to_thread(fs.server.start)
    store = ResultStore(results.path)
    try:
        await Session(Target(bundled=fs.server), store).open()
    finally:
        store.close()
    await fs.assert_as_before(before)
    results.assert_intact()


async def test_full_disk_undo_failure_says_what_is_left(
    tmpfs: Path, results: Store, tmp_path: Path
) -> None:
    _record, events, _fs, _before = await _run_on_a_full_disk(tmpfs, results, tmp_path)
    failed = [line for line in _notices(events).splitlines() if "could not put back" in line]
    assert failed, _notices(events)
    assert "synchronous_commit" in failed[0] and "postgresql.auto.conf" in failed[0], failed


# --------------------------------------------------------------------------- 5. statement_timeout


@pytest_asyncio.fixture
async def role_timeout(case: Case) -> AsyncIterator[Case]:
    """statement_timeout = 200ms on the role pgwx logs in as, for this test only."""
    role = "pgwx" if case.target.owned else ROLE
    await case.fs.sql(f"ALTER ROLE {role} SET statement_timeout = '200ms'")
    try:
        yield case
    finally:
        await case.fs.sql(f"ALTER ROLE {role} RESET statement_timeout")


async def test_role_statement_timeout(role_timeout: Case, results: Store, tmp_path: Path) -> None:
    case = role_timeout
    before = await case.fs.state()
    profile = _profile(tmp_path, "timeout", profile_toml())
    async with Gate(case.fs):  # shut for the whole run: every gate phase outlasts 200 ms
        task, store, events = await _start_run(case.target, profile, results.path)
        try:
            record = await asyncio.wait_for(task, 120)
        finally:
            task.cancel()
            store.close()
    assert [t.status for t in record.trials] == ["failed", "failed"]
    for trial in record.trials:
        assert "canceling statement due to statement timeout" in (trial.reason or "")
    assert record.status == "failed" and record.reason
    assert "could not" not in _notices(events)
    await case.fs.assert_as_before(before)
    results.assert_intact()


# --------------------------------------------------------------------------- 6. limited role


async def test_role_without_privileges(case: Case, results: Store, tmp_path: Path) -> None:
    before = await case.fs.state()
    target = Target(dsn=case.fs.dsn(LIMITED))
    variants = {
        "plain": "",
        "unlogged": 'table_kind = "unlogged"',
        "sync-off": 'synchronous_commit = "off"',
    }
    profile = _profile(tmp_path, "limited", profile_toml(variants, gate=False, rows=500))
    # No CREATEROLE either, so its own SQL cannot be fenced (issue 19): --trust-sql runs it.
    task, store, events = await _start_run(
        target, profile, results.path, sample=True, trust_sql=True
    )
    try:
        record = await asyncio.wait_for(task, 120)
    finally:
        task.cancel()
        store.close()
    by_name = {t.variant: t for t in record.trials}
    assert by_name["plain"].status == by_name["unlogged"].status == "ok"
    assert by_name["sync-off"].status == "skipped"
    assert "ALTER SYSTEM" in (by_name["sync-off"].reason or "")
    assert record.status == "finished"
    # said once a run, not once a trial (issue 20: it was printed four times)
    assert _notices(events).count("CHECKPOINT needs superuser") == 1, _notices(events)
    assert len(record.trials) > 1
    assert "--trust-sql: the profile's SQL runs unfenced" in _notices(events)
    await case.fs.assert_as_before(before)
    results.assert_intact()


# --------------------------------------------------------------------------- 7. Ctrl-C and quit


async def test_ctrl_c_in_the_cli(case: Case, results: Store, tmp_path: Path) -> None:
    before = await case.fs.state()
    (tmp_path / "ctrlc.toml").write_text(profile_toml())
    run = ["run", str(tmp_path / "ctrlc.toml"), *case.cli, "--no-sample", "--settle", "0"]
    async with Gate(case.fs) as gate:
        child = await start_pgwx(tmp_path, *run)
        try:
            await gate.reached()
            child.send_signal(signal.SIGINT)
            out, err = await finish(child, 60)
        finally:
            if child.returncode is None:
                await sigkill(child)
    assert child.returncode == 130, err
    assert "cancelled" in err and "Traceback" not in err
    await case.fs.assert_as_before(before)
    results.assert_intact()
    assert run_status(results.path, run_ids(results.path)[-1]) == ("cancelled", CANCELLED)
    assert PASSWORD not in out + err


async def test_quit_in_the_app(case: Case, results: Store, tmp_path: Path) -> None:
    from explorer.tui.app import PgwxApp
    from tests.support.app import connected, wait_for

    before = await case.fs.state()
    profile = _profile(tmp_path, "quit", profile_toml())
    store = ResultStore(results.path)
    app = PgwxApp(target=case.target, store=store, profiles=[profile])
    try:
        async with Gate(case.fs) as gate:
            async with app.run_test(size=(120, 36)) as pilot:
                lab = await connected(pilot)
                lab.knob_panel.choose_profile(profile.name)
                await pilot.pause()
                await pilot.press("m")
                await gate.reached()
                await pilot.press("q")
                await wait_for(pilot, lambda: not app.is_running, 60)
    finally:
        store.close()
    await case.fs.assert_as_before(before)
    results.assert_intact()
    assert run_status(results.path, run_ids(results.path)[-1]) == ("cancelled", CANCELLED)
