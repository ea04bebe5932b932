"""The end-of-matrix card's rows: per variant its total, verdict and mechanism in a few words.

The verdict is the judged one (`explorer.analysis.judge.judge`, the same call the results
table and every export make): warm-ups left out, the profile's threshold, the total phase
when there is more than one, else the only phase. The widget in `explorer.tui.widgets.summary`
only draws these rows.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from explorer.analysis.judge import TOTAL, Judgement, judge, measured, samples
from explorer.analysis.units import human_bytes
from explorer.analysis.verdict import Verdict
from explorer.models import RunRecord, TrialResult

ARROW = "→"
"""Before → after in a mechanism (a front end may swap it for an ASCII glyph)."""


@dataclass
class CardLine:
    """One variant's line on the card.

    Args:
        variant: The variant's name.
        baseline: This is the baseline variant.
        total: Median of the measured per-trial totals, seconds (None: none finished).
        verdict: The judged verdict against the baseline (None for the baseline itself or
            without trials).
        mechanism: A few words on why, e.g. "WAL 2.6 GiB → 8.7 KiB" ("" when nothing says).
    """

    variant: str
    baseline: bool
    total: float | None
    verdict: Verdict | None
    mechanism: str


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def _stat(trials: list[TrialResult], name: str) -> float | None:
    values = []
    for trial in trials:
        stats = trial.stats
        value = None
        if stats is not None:
            value = stats.wal_bytes if name == "wal_bytes" else stats.fsyncs
        if isinstance(value, int | float):
            values.append(float(value))
    return _median(values)


def _mechanism(base: list[TrialResult], mine: list[TrialResult]) -> str:
    """The first measured difference that explains a change: WAL, fsyncs, top wait."""
    b_wal, m_wal = _stat(base, "wal_bytes"), _stat(mine, "wal_bytes")
    if b_wal is not None and m_wal is not None and (b_wal or m_wal):
        if abs(m_wal - b_wal) > 0.1 * max(b_wal, m_wal):
            return f"WAL {human_bytes(b_wal)} {ARROW} {human_bytes(m_wal)}"
    b_fs, m_fs = _stat(base, "fsyncs"), _stat(mine, "fsyncs")
    if b_fs is not None and m_fs is not None and b_fs != m_fs:
        return f"fsyncs {b_fs:.0f} {ARROW} {m_fs:.0f}"
    if b_wal is not None and m_wal is not None and (b_wal or m_wal):
        return f"WAL {human_bytes(m_wal)} (same)"
    return ""


def card_lines(record: RunRecord, judged: Judgement | None = None) -> list[CardLine]:
    """Per variant, in the profile's order: total, judged verdict, mechanism.

    Args:
        record: The run.
        judged: Its judgement, when the caller has one (else judged here the same way).
    """
    judged = judged if judged is not None else judge(record)
    s = samples(record.trials)
    key = TOTAL if TOTAL in s.phases else (s.phases[0] if s.phases else TOTAL)
    by_variant: dict[str, list[TrialResult]] = {}
    for trial in measured(record.trials):
        by_variant.setdefault(trial.variant, []).append(trial)
    base_name = judged.baseline
    lines = []
    for variant in record.profile.variants:
        name = variant.name
        is_base = name == base_name
        mine = s.seconds.get((name, key), [])
        verdict = judged.verdicts.get((name, key)) if mine and not is_base else None
        if is_base:
            wal = _stat(by_variant.get(name, []), "wal_bytes")
            mechanism = f"WAL {human_bytes(wal)}" if wal is not None else ""
        elif name in by_variant:
            mechanism = _mechanism(by_variant.get(base_name, []), by_variant[name])
        else:
            mechanism = ""
        lines.append(CardLine(name, is_base, _median(mine), verdict, mechanism))
    return lines
