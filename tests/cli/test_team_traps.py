"""The small traps of a team's set-up, closed (issue 38, point 7): `push` reads the store in
force and never succeeds by copying nothing; every hint names the `--results` in use;
`server start --keep-server` parses wherever the option is written."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from explorer import cli, paths
from explorer.lab.store.results import ResultStore
from explorer.models import PhaseResult, TrialResult
from tests.support.paths import ROOT
from tests.support.stored import record


def _one_run(path: Path, run_id: str = "20260101-000000-aaaaaa") -> str:
    store = ResultStore(path)
    try:
        store.begin_run(record(run_id))
        for rep in range(1, 3):
            store.add_trial(
                run_id,
                TrialResult(
                    run_id=run_id,
                    variant="logged",
                    repeat=rep,
                    status="ok",
                    started_at=dt.datetime.now(dt.UTC),
                    phases=[PhaseResult(name="load", seconds=1.0, rows=1)],
                ),
            )
        store.end_run(run_id, "finished")
    finally:
        store.close()
    return run_id


def test_push_copies_from_the_store_in_force_not_the_default_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    mine, team = tmp_path / "mine.sqlite", tmp_path / "team.sqlite"
    run_id = _one_run(mine)
    monkeypatch.setenv("PGWX_RESULTS", str(mine))
    assert cli.main(["push", "all", "--to", str(team)]) == 0
    assert f"copied {run_id} to {team}" in capsys.readouterr().out
    assert not paths.local_results_path().exists()  # the default store was neither read nor made
    # the same through --results
    other = tmp_path / "other.sqlite"
    assert cli.main(["--results", str(mine), "push", run_id, "--to", str(other)]) == 0
    assert ResultStore(other).has_run(run_id)


def test_a_push_that_copies_nothing_says_so_and_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    empty, team = tmp_path / "empty.sqlite", tmp_path / "team.sqlite"
    ResultStore(empty).close()
    monkeypatch.setenv("PGWX_RESULTS", str(empty))
    assert cli.main(["push", "all", "--to", str(team)]) == 1
    assert capsys.readouterr().err == f"pgwx: copied 0 runs: {empty} holds none\n"
    # a store that is not there is not created by looking
    missing = tmp_path / "missing.sqlite"
    assert cli.main(["push", "all", "--from", str(missing), "--to", str(team)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"pgwx: copied 0 runs: {missing} holds none") and not missing.exists()


def test_hints_carry_the_results_in_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("PGWX_RESULTS", raising=False)
    recording = ROOT / "profiles" / "recordings" / "quick-demo.pgwx"
    private = tmp_path / "private store.sqlite"  # a space: quoted in the hint
    assert cli.main(["--results", str(private), "import", str(recording)]) == 0
    out = capsys.readouterr().out
    run_id = ResultStore(private).list_runs()[0].id
    assert f"`pgwx --results '{private}' report {run_id}` shows it" in out
    # without --results, the hint is the plain command (PGWX_RESULTS is in force in that shell)
    monkeypatch.setenv("PGWX_RESULTS", str(tmp_path / "env.sqlite"))
    assert cli.main(["import", str(recording)]) == 0
    assert f"`pgwx report {run_id}` shows it" in capsys.readouterr().out
    empty = tmp_path / "empty.sqlite"
    assert cli.main(["--results", str(empty), "runs"]) == 0
    assert f"`pgwx --results {empty} run quick-demo`" in capsys.readouterr().out
    # a team URL's password never reaches the hint
    from explorer.lab.store import hints

    hints.remember("postgresql://lab:s3cret@db.internal/perf")
    try:
        assert hints.hint("runs") == "pgwx --results postgresql://lab@db.internal/perf runs"
    finally:
        hints.remember(None)


@pytest.mark.parametrize(
    "argv",
    [
        ["server", "start", "--keep-server"],
        ["--keep-server", "server", "start"],
        ["server", "--keep-server", "status"],
    ],
)
def test_keep_server_is_accepted_wherever_it_is_written(argv: list[str]) -> None:
    args = cli.parse_args(argv)
    assert args.command == "server" and args.keep_server is True
