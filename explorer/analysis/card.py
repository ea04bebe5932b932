"""The end-of-matrix card's rows: per variant its verdict, total, the phase that moved most.

The verdict is the judged one (`explorer.analysis.judge.judge`, the same call the results
table and every export make): warm-ups left out, the profile's threshold, the total phase
when there is more than one, else the only phase. The story comes next: the phase whose
median moved most from the baseline's, with its own before → after from the table's medians
(`deferred  2.31× slower · 6.36 s · commit 5.4 ms → 3.60 s`) — the fsync or WAL counters are
the mechanism, shown after it and only when they moved by more than a tenth. The widget in
`explorer.tui.widgets.summary` only draws these rows; `story` is the same line as plain text
for the report.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from explorer.analysis.judge import TOTAL, Judgement, Samples, judge, measured, samples
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
        moved: The phase that moved most, with the baseline's and this variant's medians,
            e.g. "commit 5.4 ms → 3.60 s" ("" for the baseline, a one-phase run, or no trial).
    """

    variant: str
    baseline: bool
    total: float | None
    verdict: Verdict | None
    mechanism: str
    moved: str = ""


MOVED_ENOUGH = 0.1
"""A counter (WAL bytes, fsyncs) is a mechanism only when it moved by more than this share."""


def seconds_text(value: float | None) -> str:
    """'3.60 s', '312 ms', '0.5 ms'; '—' unknown: the card's one way to write a duration."""
    if value is None:
        return "—"
    if value >= 1:
        return f"{value:.2f} s"
    return f"{value * 1000:.1f} ms" if value < 0.01 else f"{value * 1000:.0f} ms"


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
    """The first counter that moved by more than `MOVED_ENOUGH`: WAL, then fsyncs.

    fsyncs 34 → 36 is noise, not why a variant is 2× slower: it is left out rather than
    shown as the reason.
    """
    b_wal, m_wal = _stat(base, "wal_bytes"), _stat(mine, "wal_bytes")
    if b_wal is not None and m_wal is not None and (b_wal or m_wal):
        if abs(m_wal - b_wal) > MOVED_ENOUGH * max(b_wal, m_wal):
            return f"WAL {human_bytes(b_wal)} {ARROW} {human_bytes(m_wal)}"
    b_fs, m_fs = _stat(base, "fsyncs"), _stat(mine, "fsyncs")
    if b_fs is not None and m_fs is not None and (b_fs or m_fs):
        if abs(m_fs - b_fs) > MOVED_ENOUGH * max(b_fs, m_fs):
            return f"fsyncs {b_fs:.0f} {ARROW} {m_fs:.0f}"
    return ""


def moved_most(s: Samples, baseline: str, variant: str) -> str:
    """'commit 5.4 ms → 3.60 s': the phase whose median moved most from the baseline's.

    Medians of the measured trials, as in the table's rows. A phase the baseline never ran
    counts from nothing ('add-fk 300 ms (new phase)'). Empty for a one-phase run (the
    total is the phase) or without trials.
    """
    if TOTAL not in s.phases:
        return ""
    best: tuple[float, str] | None = None
    for phase in s.phases:
        if phase == TOTAL:
            continue
        after = _median(s.seconds.get((variant, phase), []))
        if after is None:
            continue
        before = _median(s.seconds.get((baseline, phase), []))
        moved = abs(after - (before or 0.0))
        if before is None:
            text = f"{phase} {seconds_text(after)} (new phase)"
        else:
            text = f"{phase} {seconds_text(before)} {ARROW} {seconds_text(after)}"
        if best is None or moved > best[0]:
            best = (moved, text)
    return best[1] if best is not None else ""


def story(line: CardLine, dot: str = "·") -> str:
    """The card's line as plain text: 'deferred 2.31× slower · 6.36 s · commit 5.4 ms → 3.60 s'.

    The report prints it under the table, so the CLI tells the story in the card's words.
    """
    if line.baseline:
        head = "baseline"
    elif line.verdict is None:
        head = "no trial"
    else:
        head = verdict_words(line.verdict)
    parts = [f"{line.variant} {head}", seconds_text(line.total)]
    parts += [x for x in (line.moved, line.mechanism) if x]
    return f" {dot} ".join(parts)


def verdict_words(verdict: Verdict) -> str:
    """'2.31× slower', '+3.59 s slower': the table's point and word, without the interval
    (what a narrow results table shows in its verdict column)."""
    return verdict.short_label()


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
        moved = "" if is_base else moved_most(s, base_name, name)
        lines.append(CardLine(name, is_base, _median(mine), verdict, mechanism, moved))
    return lines
