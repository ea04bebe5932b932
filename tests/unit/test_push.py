"""`pgwx push` copies ended runs only: one still going is refused (issue 40, promise 8)."""

from __future__ import annotations

from pathlib import Path

import pytest

from explorer import cli
from explorer.lab.store.results import ResultStore
from tests.support.stored import record, trial


def test_push_refuses_a_run_that_is_still_going(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    local, team = tmp_path / "local.sqlite", tmp_path / "team.sqlite"
    store = ResultStore(local)
    store.begin_run(record("20260101-000000-aaaaa1", minutes_ago=10))
    store.add_trial("20260101-000000-aaaaa1", trial("20260101-000000-aaaaa1"))
    store.end_run("20260101-000000-aaaaa1", "finished")
    # Begun by this process, which is alive: the run is still going in "another terminal".
    store.begin_run(record("20260101-000000-aaaaa2", minutes_ago=1))
    store.add_trial("20260101-000000-aaaaa2", trial("20260101-000000-aaaaa2"))
    argv = ["push", "20260101-000000-aaaaa2", "20260101-000000-aaaaa1"]
    code = cli.main([*argv, "--from", str(local), "--to", str(team)])
    out, err = capsys.readouterr()
    assert code == 1
    assert f"copied 20260101-000000-aaaaa1 to {team}" in out
    assert "pgwx: 20260101-000000-aaaaa2 is still running; push it when it has ended" in err
    assert "aaaaa2" not in out
    received = ResultStore(team)
    assert [r.id for r in received.list_runs()] == ["20260101-000000-aaaaa1"]
    received.close()
    # Once it has ended, it goes.
    store.end_run("20260101-000000-aaaaa2", "finished")
    store.close()
    assert cli.main([*argv, "--from", str(local), "--to", str(team)]) == 0
    assert "copied 20260101-000000-aaaaa2" in capsys.readouterr().out
