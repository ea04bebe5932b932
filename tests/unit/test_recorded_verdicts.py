"""The four words on recorded runs: the shipped recordings and the test fixtures.

Every verdict of a recorded run is one of the four words (or `no baseline phase`), its point
lies inside its interval, and the "Undecided" line under the table names exactly the cells
whose word is `undecided` — no more, no fewer.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from explorer.analysis.calibration import Scenario, synthetic_record, synthetic_trial
from explorer.analysis.judge import judge, measured, undecided_text
from explorer.analysis.report import render
from explorer.analysis.verdict import NO_BASELINE, UNDECIDED, WORDS
from explorer.lab.store.recording import import_recording
from explorer.lab.store.results import ResultStore
from explorer.models import RunRecord, ServerInfo, TrialResult

ROOT = Path(__file__).resolve().parents[2]


def fixture_record(name: str) -> RunRecord:
    data = json.loads((ROOT / "tests" / "fixtures" / name).read_text())
    started = next(e for e in data["events"] if e["kind"] == "run-started")
    return RunRecord(
        id=started["run_id"],
        profile=data["profile"],
        server=ServerInfo.model_validate(started["server"]),
        started_at=dt.datetime(2025, 1, 1, tzinfo=dt.UTC),
        status="finished",
        trials=[
            TrialResult.model_validate(e["result"])
            for e in data["events"]
            if e["kind"] == "trial-ended"
        ],
    )


def recorded(name: str, tmp_path: Path) -> RunRecord:
    store = ResultStore(tmp_path / "r.sqlite")
    try:
        return import_recording(store, ROOT / "profiles" / "recordings" / f"{name}.pgwx")
    finally:
        store.close()


@pytest.mark.parametrize(
    "source",
    [
        "fixture:durability.json",
        "fixture:quick-demo.json",
        "fixture:durability-v1-trials.json",
        "recording:quick-demo",
        "recording:fk-timing-restore",
    ],
)
def test_every_recorded_verdict_is_one_word_and_the_undecided_line_agrees(
    source: str, tmp_path: Path
) -> None:
    kind, name = source.split(":")
    record = fixture_record(name) if kind == "fixture" else recorded(name, tmp_path)
    judged = judge(record)
    assert judged.verdicts
    for v in judged.verdicts.values():
        assert v.word in (*WORDS, NO_BASELINE), v
        label = v.label()
        assert v.word_text() in label
        if v.ratio is not None and v.ci_low is not None and v.ci_high is not None:
            assert v.ci_low <= v.ratio <= v.ci_high, label
        assert "≈" not in label
    undecided = [k for k, v in judged.verdicts.items() if v.word == UNDECIDED]
    assert judged.undecided == undecided
    md = render(record)
    line = undecided_text(judged)
    if undecided:
        assert line is not None and line in md
        for variant, phase in undecided:
            assert f"{variant} {phase}" in line or f"{variant} (n=" in line
    settled = [k for k, v in judged.verdicts.items() if v.word != UNDECIDED]
    for variant, phase in settled:
        assert line is None or f"{variant} {phase} (" not in line


def test_a_phase_only_the_variant_has_says_no_baseline_phase(tmp_path: Path) -> None:
    record = recorded("fk-timing-restore", tmp_path)
    judged = judge(record)
    v = judged.verdicts[("after-load", "add-fk")]
    assert v.word == NO_BASELINE and v.label() == "no baseline phase"
    n = len([t for t in measured(record.trials) if t.variant == "after-load"])
    assert v.n_candidate == n >= 5 and ("after-load", "add-fk") not in judged.undecided
    assert f"| after-load | add-fk | {n} |" in render(record)
    # Many trials do not make it "too few runs": 30 rounds of a phase the baseline lacks.
    trials = [
        synthetic_trial(name, r + 1, phases)
        for r in range(30)
        for name, phases in (
            ("v0", {"load": 1.0 + r / 1000}),
            ("v1", {"load": 1.0 + r / 900, "add-fk": 0.5 + r / 1000}),
        )
    ]
    judged = judge(synthetic_record(Scenario(repeats=30).profile(), trials))
    alone = judged.verdicts[("v1", "add-fk")]
    assert alone.word == NO_BASELINE and alone.n_candidate == 30 and not alone.too_few
    assert ("v1", "add-fk") not in judged.undecided
    # The total is over each variant's own phases; it is compared (a different sum).
    assert judged.verdicts[("v1", "total")].word != NO_BASELINE
