"""The event stream's readers without a server: run state, progress, narration, pacing, units.

Fed from the recorded durability run (tests/fixtures/durability.json, see record.py).
"""

from __future__ import annotations

import pytest

from explorer.analysis.units import human_bytes, human_count
from explorer.lab.store.replay import ReplaySource
from explorer.lab.view.runstate import RunView, phase_progress
from explorer.lab.view.stream import narrate, paced
from explorer.models import (
    Notice,
    PhaseStarted,
    RunEnded,
    RunStarted,
    SampleTaken,
    TrialEnded,
    TrialStarted,
)
from tests.support.paths import DURABILITY

FIXTURE = DURABILITY


@pytest.fixture(scope="module")
def source() -> ReplaySource:
    return ReplaySource.from_file(FIXTURE)


def test_apply_folds_the_whole_run(source: ReplaySource) -> None:
    view = RunView(profile=source.profile, scale=source.scale)
    for event in source.events:
        view.apply(event)
    ended = [e for e in source.events if isinstance(e, TrialEnded)]
    started = next(e for e in source.events if isinstance(e, RunStarted))
    assert view.status == "finished" and not view.running
    assert view.run_id == started.run_id and view.total_trials == started.total_trials
    assert view.record is not None and len(view.record.trials) == len(ended) == 10
    assert {row.variant for row in view.summary} == {v.name for v in source.profile.variants}  # type: ignore[union-attr]
    samples = sum(isinstance(e, SampleTaken) for e in source.events)
    assert view.activity.samples == samples
    assert view.now == max(e.at for e in source.events)


def test_apply_mid_run_knows_the_trial_and_phase(source: ReplaySource) -> None:
    cut = next(
        i
        for i, e in enumerate(source.events)
        if isinstance(e, PhaseStarted) and e.phase == "update"
    )
    view = RunView(profile=source.profile, scale=source.scale)
    for event in source.events[: cut + 1]:
        view.apply(event)
    phase_event = source.events[cut]
    assert isinstance(phase_event, PhaseStarted)
    assert view.running and view.phase == "update"
    assert view.variant == phase_event.variant and view.expected_rows == phase_event.expected_rows
    trial = max(e.index for e in source.events[:cut] if isinstance(e, TrialStarted))
    assert view.trial_index == trial
    assert view.elapsed()[0] == 0.0


def test_phase_progress_from_copy_size_and_nothing() -> None:
    copy = {"progress": {"copy": [{"tuples_processed": 150_000, "bytes_processed": 0}]}}
    half = phase_progress(copy, 300_000, None)
    assert half.fraction == 0.5 and half.text == "150.0k / 300.0k rows"
    by_bytes = {"progress": {"copy": [{"bytes_processed": 1 << 20, "bytes_total": 4 << 20}]}}
    quarter = phase_progress(by_bytes, None, None)
    assert quarter.fraction == 0.25 and quarter.text == "1.0 MiB / 4.0 MiB"
    index = {
        "progress": {"create_index": [{"phase": "building", "blocks_done": 3, "blocks_total": 4}]}
    }
    assert phase_progress(index, None, None).text == "building: 3 / 4 blocks"
    assert phase_progress({}, None, 40 << 20).text == "table 40.0 MiB"
    assert phase_progress({}, None, None).fraction is None


def test_phase_progress_from_the_recorded_samples(source: ReplaySource) -> None:
    sized = [
        e for e in source.events if isinstance(e, SampleTaken) and e.sample.get("relation_bytes")
    ]
    assert sized, "the fixture has samples with a table size"
    view = RunView(profile=source.profile, scale=source.scale)
    for event in source.events:
        view.apply(event)
        if event is sized[-1]:
            break
    size = sum(sized[-1].sample["relation_bytes"].values())
    assert view.activity.relation_bytes == size
    assert human_bytes(size) in view.progress.text


def test_narrate_tells_each_kind_once(source: ReplaySource) -> None:
    lines = {type(e).__name__: narrate(e) for e in source.events}
    assert lines["TrialStarted"] == "[10/10] minimal-same-txn · rep 2"
    assert lines["RunStarted"] is not None and "durability" in lines["RunStarted"]
    assert "PostgreSQL 18.6" in lines["RunStarted"]
    assert lines["SampleTaken"] is None and lines["PhaseStarted"] is None
    ended = lines["TrialEnded"]
    # The start line counts the trial; the end line does not count it again (issue 21).
    assert ended is not None and ended.startswith("minimal-same-txn done in")
    assert lines["RunEnded"] == "run 20250101-120000-demo finished"
    notice = next(e for e in source.events if isinstance(e, Notice))
    assert narrate(notice) == notice.message
    failed = RunEnded(at=1.0, run_id="x", status="failed", reason="boom")
    assert narrate(failed) == "run x failed: boom"


def test_paced_waits_the_recorded_gaps_scaled(source: ReplaySource) -> None:
    events = source.events[:20]
    fast = list(paced(events, 0))
    assert [e for _, e in fast] == events and all(w == 0 for w, _ in fast)
    real = list(paced(events, 1))
    assert real[0][0] == 0.0
    assert sum(w for w, _ in real) == pytest.approx(max(e.at for e in events) - events[0].at)
    double = list(paced(events, 2))
    assert sum(w for w, _ in double) == pytest.approx(sum(w for w, _ in real) / 2)


def test_paced_never_runs_the_clock_backwards() -> None:
    events = [Notice(at=t, message=str(t)) for t in (1.0, 3.0, 2.0, 4.0)]
    assert [w for w, _ in paced(events, 1)] == [0.0, 2.0, 0.0, 1.0]


def test_one_unit_formatter() -> None:
    assert human_bytes(None) == ""
    assert human_bytes(0) == "0 B"
    assert human_bytes(1023) == "1023 B"
    assert human_bytes(1024) == "1.0 KiB"
    assert human_bytes(1536 * 1024) == "1.5 MiB"
    assert human_bytes(3 * 1024**3) == "3.0 GiB"
    assert human_count(6_100_000) == "6.1M" and human_count(12) == "12"
