"""Issue 34, point 6: the smaller faults, each against a real server, each one sentence.

Each case failed on the code before its fix: the sentence quoted here is the one a user now
reads instead of a long wait, a traceback, or a sentence that was not true.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio

from explorer import cli
from explorer.lab.run import closing
from explorer.lab.run.context import RunContext
from explorer.server.connect import Target
from explorer.server.embedded import LocalServer
from tests.support.cli import FINISHED
from tests.support.faults import (
    FaultServer,
    Gate,
    child_env,
    finish,
    profile_toml,
    read_until,
    run_status,
    sigkill,
    start_pgwx,
)
from tests.support.server import PG15_BIN
from tests.support.truth import force_stop, last_line


@pytest.fixture(scope="module")
def owned15_cluster(owned_base: Path) -> Iterator[FaultServer]:
    """The module's own cluster of Debian's PostgreSQL 15, as a dead pgwx leaves it."""
    if not (PG15_BIN / "initdb").exists():
        if os.environ.get("CI"):
            pytest.fail("Debian's postgresql-15 is not installed; .ci/run must apt-get it.")
        pytest.skip("Debian's postgresql-15 is not installed (apt-get install -y postgresql-15)")
    server = LocalServer(owned_base / "pg15", PG15_BIN)
    server.start()
    server.release()
    yield FaultServer(server)
    force_stop(server.data_dir)


@pytest_asyncio.fixture(params=["18", pytest.param("15", marks=pytest.mark.pg15)])
async def mine(request: pytest.FixtureRequest) -> AsyncIterator[tuple[FaultServer, list[str]]]:
    """A cluster pgwx owns (bundled 18, Debian's 15), running and clean before and after, and
    the options that name it on pgwx's command line."""
    if request.param == "18":
        fs: FaultServer = request.getfixturevalue("owned_cluster")
        named = ["--data-dir", str(fs.server.data_dir)]
    else:
        fs = request.getfixturevalue("owned15_cluster")
        named = ["--pg", "15", "--data-dir", str(fs.server.data_dir)]
    await fs.reset()
    fs.server.release()
    yield fs, named
    await fs.reset()
    fs.server.release()


def test_sigterm_during_a_finished_runs_undo_does_not_call_it_cancelled(
    pg18: Target,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A SIGTERM while a run that had finished put its settings back printed `SIGTERM: run …
    cancelled` under `run … finished`; the run is stored as finished, and the last line says
    the signal came after it had."""
    for var in ("PGHOST", "PGPORT", "PGUSER", "PGDATABASE", "PGSERVICE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PGWX_RESULTS", str(tmp_path / "results.sqlite"))
    monkeypatch.setenv("PGWX_STATE_DIR", str(tmp_path / "state"))
    (tmp_path / "quick.toml").write_text(
        profile_toml({"sync-off": 'synchronous_commit = "off"'}, gate=False, rows=100)
    )
    say_leftovers = closing.say_leftovers

    async def terminated_late(ctx: RunContext) -> None:
        os.kill(os.getpid(), signal.SIGTERM)  # the settings are back; the undo goes on
        await say_leftovers(ctx)

    monkeypatch.setattr(closing, "say_leftovers", terminated_late)
    assert pg18.bundled is not None
    data_dir = str(pg18.bundled.data_dir)
    status = cli.main(["run", str(tmp_path / "quick.toml"), "--data-dir", data_dir, "--no-sample"])
    err = capsys.readouterr().err
    run_id = run_ids_of(tmp_path)
    assert run_status(tmp_path / "results.sqlite", run_id)[0] == "finished"
    assert f"run {run_id} finished" in err, err
    assert "cancelled" not in err, err
    assert last_line(err) == (
        f"SIGTERM came after run {run_id} had finished; it is stored "
        f"(`pgwx report {run_id}`); server settings put back (synchronous_commit)"
    ), err
    assert status == 128 + signal.SIGTERM


@pytest.mark.pg15
async def test_settings_lock_refusal_on_two_servers_names_the_server(
    pg15: Target, pg18: Target, tmp_path: Path
) -> None:
    """Of two servers, the one whose settings lock another pgwx holds is named: the refusal
    said only "another pgwx … has server settings changed on this server"."""
    from explorer.lab.profiles.catalog import load_profile
    from explorer.lab.run.bench import Bench, ServerChoice
    from explorer.lab.run.request import RunOptions
    from explorer.lab.safety.owner import RunOwner, ServerBusy
    from explorer.lab.store.results import ResultStore

    (tmp_path / "two.toml").write_text(
        profile_toml({"sync-off": 'synchronous_commit = "off"'}, gate=False, rows=100)
    )
    profile = load_profile(str(tmp_path / "two.toml"))
    store = ResultStore(tmp_path / "results.sqlite")
    holder = RunOwner(pg15, "20261127-000000-holder")
    await holder.open(settings=True)  # a pgwx with settings in force on 15
    said: list[str] = []
    try:
        bench = Bench(store, [ServerChoice(target=pg15), ServerChoice(target=pg18)])
        bench.resolve(said.append)
        await bench.open(lambda _i: said.append)
        with pytest.raises(ServerBusy) as refused:
            await bench.take_turns(
                range(2), profile, RunOptions(), said.append, lambda _tag: lambda _e: None
            )
    finally:
        await holder.close()
        store.close()
    text = str(refused.value)
    assert text.startswith(f"on 15 ({pg15.label()}): another pgwx (pid {os.getpid()} on "), text
    assert "has server settings changed on this server" in text and "\n" not in text


def run_ids_of(tmp_path: Path) -> str:
    """The one run in the test's store."""
    from tests.support.faults import run_ids

    (run_id,) = run_ids(tmp_path / "results.sqlite")
    return run_id


async def test_a_killed_postmaster_of_pgwxs_own_server_is_started_again_at_once(
    mine: tuple[FaultServer, list[str]], tmp_path: Path
) -> None:
    """pgwx's own server whose postmaster was SIGKILLed mid-run (fsync off) was waited for
    120 s, then the run ended with fsync still off; pgwx now sees the postmaster gone,
    starts the server again at once, says so, and the run goes on and puts fsync back."""
    owned, named = mine
    before = await owned.state()
    path = tmp_path / "crash.toml"
    path.write_text(profile_toml({"fsync-off": "fsync = false"}, repeats=2))
    run = ["run", str(path), *named, "--no-sample"]
    seen: list[str] = []
    async with Gate(owned) as gate:
        child = await start_pgwx(tmp_path, *run, "--settle", "0")
        try:
            await gate.reached()
            owned.kill_postmaster()
            await gate.close()
            await read_until(child, "is not running", seen, 60)
            # the next trial reaches the gate again, on the server started again: let it by
            _out, err = await finish(child, 150)
        finally:
            await sigkill(child)
    err = "".join(seen) + err
    assert "waiting up to" not in err and "still waiting" not in err, err
    assert (
        f"PostgreSQL in {owned.server.data_dir} is not running (its postmaster is gone: killed "
        "or crashed); starting it again, so the run can go on and put its settings back"
    ) in err, err
    assert "started it again" in err, err
    assert child.returncode in FINISHED, err
    assert last_line(err).endswith("server settings put back (fsync)"), err
    await owned.assert_as_before(before)


async def test_a_postmaster_killed_but_not_yet_seen_dead_is_started_without_a_wait(
    owned: FaultServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A SIGKILLed postmaster closes its socket before the kernel marks it dead: on a loaded
    machine (CI) pgwx looked in that moment, said "waiting up to 120 s" and found it dead only
    at the wait's first look. It now looks again while nothing listens (`hopeless_soon`)."""
    from types import SimpleNamespace

    from explorer.lab.run import trial
    from explorer.lab.safety import guard

    real_state = guard._postmaster_state
    looked: list[float] = []

    def late_state(server: LocalServer) -> str | None:
        looked.append(0)
        return "S" if len(looked) <= 3 else real_state(server)  # alive for the first looks

    ctx = SimpleNamespace(target=SimpleNamespace(bundled=owned.server), log_from=0)
    pid = owned.kill_postmaster()
    try:
        monkeypatch.setattr(guard, "_postmaster_state", late_state)
        for _ in range(100):  # as the trial found it: nothing listening
            if not owned.server.listening():
                break
            await asyncio.sleep(0.05)
        with pytest.raises(guard.PostmasterGone):
            await trial.hopeless_soon(ctx)  # type: ignore[arg-type]
        assert len(looked) > 3
    finally:
        monkeypatch.undo()
        await owned.start_again(killed=pid)
    # A server that listens (up, or in crash recovery) is not waited for: one look.
    asked: list[bool] = []
    listening = owned.server.listening
    monkeypatch.setattr(owned.server, "listening", lambda: asked.append(listening()) or True)
    await trial.hopeless_soon(ctx)  # type: ignore[arg-type]
    assert asked == [True]


INTERRUPTED_WHILE_LOADING = """
import os, signal, sys

class CtrlC:
    # Ctrl-C as pgwx loads its parser (the second or two before it can say anything)
    def find_spec(self, name, path=None, target=None):
        if name == "explorer.cli.parser":
            os.kill(os.getpid(), signal.SIGINT)
        return None

sys.meta_path.insert(0, CtrlC())
sys.argv = ["pgwx", *sys.argv[1:]]
from explorer.cli import main
sys.exit(main())
"""


def test_ctrl_c_while_pgwx_loads_is_one_line(tmp_path: Path) -> None:
    """Ctrl-C before pgwx had loaded its parser printed a KeyboardInterrupt traceback."""
    done = subprocess.run(
        [sys.executable, "-c", INTERRUPTED_WHILE_LOADING, "run", "quick-demo"],
        env=child_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.stderr == "pgwx: cancelled\n", done.stderr
    assert done.returncode == 130


@pytest.mark.parametrize(
    ("made", "after"),
    [(False, 0.0), (False, 0.4), (False, 1.0), (False, 2.0), (True, 0.0), (True, 0.3)],
)
async def test_ctrl_c_while_the_bundled_server_is_made_leaves_nothing(
    owned_base: Path, tmp_path: Path, made: bool, after: float
) -> None:
    """Ctrl-C while pgwx made and started its server (initdb, pg_ctl start, connecting):
    one sentence, the exit status of a cancel, no server left running, and no half-made
    directory (initdb cut short left one, which every later pgwx refused as "a cluster pgwx
    did not make")."""
    data_dir = owned_base / f"made-{made}-{after}"
    if made:  # a cluster pgwx made earlier, stopped: only pg_ctl start and connecting remain
        earlier = LocalServer(data_dir)
        await asyncio.to_thread(earlier.start)
        await asyncio.to_thread(earlier.stop)
    (tmp_path / "plain.toml").write_text(profile_toml({"plain": ""}, gate=False, rows=10))
    child = await start_pgwx(
        tmp_path, "run", str(tmp_path / "plain.toml"), "--data-dir", str(data_dir)
    )
    seen: list[str] = []
    try:
        await read_until(child, "starting bundled PostgreSQL", seen, 60)
        await asyncio.sleep(after)
        # On a quick machine the run may have finished before this moment: then the signal
        # finds no process, and the run must simply have ended well (checked below).
        with contextlib.suppress(ProcessLookupError):
            child.send_signal(signal.SIGINT)
        _out, err = await finish(child, 120)
    finally:
        await sigkill(child)
    err = "".join(seen) + err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    if last_line(err).startswith("saved as run "):
        # a busy machine's moment came after the run had finished: counted, not raised
        assert child.returncode in (*FINISHED, -signal.SIGINT), err
    else:
        assert child.returncode == 130, err
        assert last_line(err).startswith(("cancelled", "pgwx: cancelled", "Ctrl-C came")), err
    server = LocalServer(data_dir)
    try:
        assert not server.is_running(), "a server was left running"
        # nothing half-made: the directory is gone, or a cluster the next pgwx starts
        started = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-m", "explorer.cli", "server", "start", "--data-dir", str(data_dir)],
            env=child_env(tmp_path),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert started.returncode == 0, started.stderr
    finally:
        force_stop(data_dir)


def pg_ctl_of(data_dir: Path, action: str) -> int | None:
    """The pid of a `pg_ctl … ACTION` running on `data_dir`, None when there is none."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        words = [a.decode(errors="replace") for a in argv]
        if words and words[0].endswith("/pg_ctl") and str(data_dir) in words and action in words:
            return int(entry.name)
    return None


async def test_pg_ctl_killed_during_a_restart_is_said_as_such(
    mine: tuple[FaultServer, list[str]], tmp_path: Path
) -> None:
    """Killing pgwx's own `pg_ctl` during a wal_level restart was reported as `could not
    start with wal_level='minimal'`, quoting the sampler's own `FATAL: terminating
    connection`; the sentence now says the restart was cut short and what pgwx did, and the
    server ends as it was."""
    owned, named = mine
    before = await owned.state()
    path = tmp_path / "minimal.toml"
    path.write_text(profile_toml({"minimal": 'wal_level = "minimal"'}, gate=False, rows=100))
    data_dir = owned.server.data_dir
    child = await start_pgwx(tmp_path, "run", str(path), *named)
    seen: list[str] = []
    try:
        await read_until(child, "restarting the server", seen, 120)
        killed = None
        for _ in range(400):  # pg_ctl restart: a few seconds on a busy machine
            killed = pg_ctl_of(data_dir, "restart")
            if killed is not None:
                os.kill(killed, signal.SIGKILL)
                break
            await asyncio.sleep(0.01)
        assert killed is not None, "no pg_ctl restart seen"
        _out, err = await finish(child, 150)
    finally:
        await sigkill(child)
    err = "".join(seen) + err
    assert "could not start with" not in err, err
    # the sampler may say its session was ended; no sentence about the restart quotes that
    said = [line for line in err.splitlines() if "restart" in line or "could not" in line]
    assert not [line for line in said if "terminating connection" in line], err
    assert (
        "the restart for wal_level, max_wal_senders was cut short: pg_ctl restart was ended by "
        f"SIGKILL before it finished, leaving PostgreSQL in {data_dir} "
    ) in err, err
    assert (
        "pgwx finished it itself, and the server runs with wal_level, max_wal_senders as set"
    ) in err, err
    assert "server settings put back (wal_level, max_wal_senders)" in last_line(err), err
    await owned.assert_as_before(before)


async def test_an_ascii_only_terminal_after_a_real_run_is_no_internal_error(
    owned: FaultServer, tmp_path: Path
) -> None:
    """`pgwx run` with an ASCII-only stdout and stderr (PYTHONIOENCODING=ascii): its table
    and its progress (× · … ✗) used to end in an internal error once the run was saved; they
    are written with escapes, and the run ends as it would anywhere."""
    path = tmp_path / "plain.toml"
    path.write_text(
        profile_toml({"plain": "", "sync-off": 'synchronous_commit = "off"'}, gate=False, rows=100)
    )
    child = await start_pgwx(
        tmp_path,
        "run",
        str(path),
        "--data-dir",
        str(owned.server.data_dir),
        PYTHONIOENCODING="ascii",
    )
    out, err = await finish(child, 150)
    assert child.returncode in FINISHED, err
    assert "internal error" not in err and "Traceback" not in err, err
    (out + err).encode("ascii")  # nothing but ASCII reached the streams
    assert "\\u2026" in err or "\\xb7" in err or "\\xd7" in out, out + err  # escapes, not lost
    assert last_line(err).startswith("saved as run "), err


def test_ctrl_c_between_the_data_directorys_mkdir_and_initdb_leaves_nothing(
    owned_base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Ctrl-C of a full run that came as the directory was made, before pgwx had noted it
    made it: the directory stayed, and every later pgwx refused it as "a cluster pgwx did not
    make" (seen once in `test_ctrl_c_while_the_bundled_server_is_made_leaves_nothing`)."""
    data_dir = owned_base / "mkdir-then-ctrl-c"
    real_mkdir = Path.mkdir

    def mkdir_then_ctrl_c(self: Path, *args: object, **kwargs: object) -> None:
        real_mkdir(self, *args, **kwargs)  # type: ignore[arg-type]
        if self == data_dir:
            raise KeyboardInterrupt

    monkeypatch.setattr(Path, "mkdir", mkdir_then_ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        LocalServer(data_dir).init()
    monkeypatch.undo()
    assert not data_dir.exists()
