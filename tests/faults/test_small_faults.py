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
from tests.support.faults import profile_toml, run_status
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


def run_ids_of(tmp_path: Path) -> str:
    """The one run in the test's store."""
    from tests.support.faults import run_ids

    (run_id,) = run_ids(tmp_path / "results.sqlite")
    return run_id
