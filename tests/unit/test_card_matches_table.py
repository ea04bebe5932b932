"""The end card and the results table tell one truth: the same judged verdict per variant.

The card once ran its own comparison (warm-ups counted, the default 3 % threshold), so the
shipped fk-timing-restore recording showed `immediate 2.26× · 3.98 s` on the card and
`2.19× · 4.00 s` in the table. Both now read `explorer.analysis.judge`; this test holds
them together on every shipped recording, with warm-ups present and a threshold that is
not the default.
"""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from explorer.analysis.card import card_lines
from explorer.analysis.judge import TOTAL
from explorer.analysis.report import summarize
from explorer.lab.store.recording import import_recording
from explorer.lab.store.results import ResultStore
from explorer.models import RunRecord

RECORDINGS = sorted((Path(__file__).parents[2] / "profiles" / "recordings").glob("*.pgwx"))


def loaded(path: Path, tmp_path: Path, threshold: float) -> RunRecord:
    store = ResultStore(tmp_path / "results.sqlite")
    record = import_recording(store, path)
    record.profile.threshold = threshold
    # Make sure there are warm-ups to leave out: each variant's first finished trial.
    seen: set[str] = set()
    for trial in record.trials:
        if trial.status == "ok" and trial.variant not in seen:
            seen.add(trial.variant)
            trial.warmup = True
    return record


@pytest.mark.parametrize("threshold", [0.03, 0.12])
@pytest.mark.parametrize("path", RECORDINGS, ids=[p.stem for p in RECORDINGS])
def test_each_card_line_is_the_tables_total_row(
    path: Path, threshold: float, tmp_path: Path
) -> None:
    record = loaded(path, tmp_path, threshold)
    rows = summarize(record)
    phases = {r.phase for r in rows}
    key = TOTAL if TOTAL in phases else next(iter(phases))
    table = {r.variant: r for r in rows if r.phase == key}
    lines = card_lines(record)
    assert lines, "the card has a line per variant"
    for line in lines:
        row = table.get(line.variant)
        if row is None:
            assert line.total is None and line.verdict is None
            continue
        assert line.baseline == row.baseline
        assert line.total == row.median, line.variant
        if line.baseline:
            assert line.verdict is None
        else:
            assert line.verdict is not None and row.verdict is not None
            assert line.verdict.label() == row.verdict.label(), line.variant
            assert line.verdict.threshold == pytest.approx(threshold)


def test_the_card_leaves_warm_ups_out(tmp_path: Path) -> None:
    record = loaded(RECORDINGS[0], tmp_path, 0.03)
    measured: dict[str, list[float]] = {}
    for trial in record.trials:
        if trial.status == "ok" and not trial.warmup:
            whole = sum(p.seconds for p in trial.phases)
            measured.setdefault(trial.variant, []).append(whole)
    for line in card_lines(record):
        if line.variant in measured and line.total is not None:
            assert line.total == pytest.approx(statistics.median(measured[line.variant]))
