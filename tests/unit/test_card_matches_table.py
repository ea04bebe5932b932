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


def _figures(text: str) -> tuple[str, str]:
    """'WAL 74.4 MiB → 36.2 KiB' → ('74.4 MiB', '36.2 KiB')."""
    before, after = text.split(" ", 1)[1].split(" → ")
    return before, after


@pytest.mark.parametrize("path", RECORDINGS, ids=[p.stem for p in RECORDINGS])
def test_every_counter_on_the_card_is_the_tables_total_row(path: Path, tmp_path: Path) -> None:
    """Issue 33: the card gave whole-trial WAL (CREATE/DROP included) where the table's total
    row sums the phases — `WAL 74.4 MiB → 36.2 KiB` above a total row of 11.8 KiB."""
    from explorer.analysis.mechanism import fields
    from explorer.analysis.units import human_bytes

    record = loaded(path, tmp_path, 0.03)
    rows = summarize(record)
    phases = {r.phase for r in rows}
    key = TOTAL if TOTAL in phases else next(iter(phases))
    table = {r.variant: r for r in rows if r.phase == key}
    lines = card_lines(record)
    base = next(line for line in lines if line.baseline)
    base_row = table[base.variant]
    wal = fields(base_row.mechanism)["wal_bytes"]
    if base.mechanism:
        assert base.mechanism == f"WAL {human_bytes(wal)}"
    for line in lines:
        if line.baseline or not line.mechanism:
            continue
        mine = fields(table[line.variant].mechanism)
        theirs = fields(base_row.mechanism)
        name = "wal_bytes" if line.mechanism.startswith("WAL") else "fsyncs"
        before, after = _figures(line.mechanism)
        shown = (
            (human_bytes(theirs[name]), human_bytes(mine[name]))
            if name == "wal_bytes"
            else (f"{theirs[name]:.0f}", f"{mine[name]:.0f}")
        )
        assert (before, after) == shown, (line.variant, line.mechanism)


def test_a_counter_that_did_not_move_beyond_noise_is_no_mechanism() -> None:
    """The card named `fsyncs 9 → 11` (noise) by a fixed 10 % cut-off; now the counter's own
    comparison across trials must be decided."""
    from explorer.analysis.calibration import synthetic_trial
    from explorer.analysis.card import _mechanism

    def trials(variant: str, wal: list[int]) -> list:
        out = []
        for i, w in enumerate(wal):
            t = synthetic_trial(variant, i + 1, {"load": 1.0})
            t.phases[0].detail = {"wal_bytes": w}
            out.append(t)
        return out

    base = trials("a", [100_000, 130_000, 90_000, 120_000, 105_000, 111_000])
    # Median 12 % up, beyond the old 10 % cut-off, but the trials overlap: undecided.
    noisy = trials("b", [125_000, 95_000, 140_000, 118_000, 100_000, 119_000])
    assert _mechanism(base, noisy, 0.03, 0.975) == ""
    clear = trials("c", [200_000, 210_000, 190_000, 205_000, 195_000, 201_000])
    assert _mechanism(base, clear, 0.03, 0.975) == "WAL 105.5 KiB → 195.8 KiB"


def test_a_trade_off_names_both_sides() -> None:
    """An own load's deferred FK showed `insert-lines 1.35 s → 659 ms` and not the +0.67 s
    COMMIT that cancels it."""
    from explorer.analysis.calibration import synthetic_trial
    from explorer.analysis.card import moved_most
    from explorer.analysis.judge import samples

    trials = []
    for r in range(5):
        trials.append(synthetic_trial("immediate", r + 1, {"insert": 1.35, "commit": 0.005}))
        trials.append(synthetic_trial("deferred", r + 1, {"insert": 0.659, "commit": 0.67}))
    text = moved_most(samples(trials), "immediate", "deferred")
    assert text == "insert 1.35 s → 659 ms, but commit 5.0 ms → 670 ms"
    # A phase that gives back less than half stays alone.
    for t in trials:
        if t.variant == "deferred":
            t.phases[1].seconds = 0.2
    assert moved_most(samples(trials), "immediate", "deferred") == "insert 1.35 s → 659 ms"
