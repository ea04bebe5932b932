"""Issue 34, point 6: the smaller faults, each against a real server, each one sentence.

Each case failed on the code before its fix: the sentence quoted here is the one a user now
reads instead of a long wait, a traceback, or a sentence that was not true.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from explorer import cli
from explorer.lab.run.runner import Runner
from explorer.server.connect import Target
from tests.support.cli import FINISHED
from tests.support.faults import (
    FaultServer,
    Gate,
    finish,
    profile_toml,
    read_until,
    run_status,
    sigkill,
    start_pgwx,
)
from tests.support.truth import last_line


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
    say_leftovers = Runner._say_leftovers

    async def terminated_late(self: Runner, scope: object) -> None:
        os.kill(os.getpid(), signal.SIGTERM)  # the settings are back; the undo goes on
        await say_leftovers(self, scope)  # type: ignore[arg-type]

    monkeypatch.setattr(Runner, "_say_leftovers", terminated_late)
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
    owned: FaultServer, tmp_path: Path
) -> None:
    """pgwx's own server whose postmaster was SIGKILLed mid-run (fsync off) was waited for
    120 s, then the run ended with fsync still off; pgwx now sees the postmaster gone,
    starts the server again at once, says so, and the run goes on and puts fsync back."""
    before = await owned.state()
    path = tmp_path / "crash.toml"
    path.write_text(profile_toml({"fsync-off": "fsync = false"}, repeats=2))
    run = ["run", str(path), "--data-dir", str(owned.server.data_dir), "--no-sample"]
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
