"""`latest` means the latest run with results that has ended; a run still going comes last."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from explorer.lab.store.results import ResultStore
from explorer.models import PhaseResult, TrialResult
from tests.support.stored import bundled_record as _record


def _ok_trial(run_id: str) -> TrialResult:
    return TrialResult(
        run_id=run_id,
        variant="logged",
        repeat=1,
        status="ok",
        started_at=dt.datetime.now(dt.UTC),
        phases=[PhaseResult(name="load", seconds=1.0, rows=10)],
    )


def test_latest_skips_a_run_still_in_progress(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "r.sqlite")
    store.begin_run(_record("ended", minutes_ago=30))
    store.add_trial("ended", _ok_trial("ended"))
    store.end_run("ended", "finished")
    store.begin_run(_record("going", minutes_ago=5))  # this process owns it: alive
    store.add_trial("going", _ok_trial("going"))
    run_id, said = store.choose("latest")
    assert run_id == "ended"
    assert said is not None and "still running" not in said
    store.close()


def test_a_run_in_progress_is_latest_only_when_nothing_ended_has_results(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "r.sqlite")
    store.begin_run(_record("going", minutes_ago=5))
    store.add_trial("going", _ok_trial("going"))
    run_id, said = store.choose("latest")
    assert run_id == "going"
    assert said is not None and "still running" in said
    store.close()
