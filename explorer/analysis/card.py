"""The end-of-matrix card's rows: per variant its verdict, total, the phase that moved most.

The verdict is the judged one (`explorer.analysis.judge.judge`, the same call the results
table and every export make): warm-ups left out, the profile's threshold, the total phase
when there is more than one, else the only phase. The story comes next: the phase whose
median moved most from the baseline's, with its own before → after from the table's medians
(`deferred  2.31× slower · 6.36 s · commit 5.4 ms → 3.60 s`) — the WAL or fsync counters are
the mechanism, shown after it only when their own comparison across trials is decided, and
always the table's figure: per trial the sum over its phases, as on the total row. The widget in
`explorer.tui.widgets.summary` only draws these rows; `story` is the same line as plain text
for the report.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from explorer.analysis.judge import TOTAL, Judgement, Samples, judge, measured, samples
from explorer.analysis.mechanism import trial_values
from explorer.analysis.sequential import ALPHA
from explorer.analysis.units import human_bytes
from explorer.analysis.verdict import Verdict, compare
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


COUNTERS = (("wal_bytes", "WAL"), ("fsyncs", "fsyncs"), ("evicted", "evictions"))
"""The counters a card line may name as the mechanism, in order of preference."""


def seconds_text(value: float | None) -> str:
    """'3.60 s', '312 ms', '0.5 ms'; '—' unknown: the card's one way to write a duration."""
    if value is None:
        return "—"
    if value >= 1:
        return f"{value:.2f} s"
    return f"{value * 1000:.1f} ms" if value < 0.01 else f"{value * 1000:.0f} ms"


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def _counter(trials: list[TrialResult], key: str) -> list[float] | None:
    """Per trial the sum over its phases (the table's total row, or its one phase row); None
    when any trial could not measure it."""
    out = []
    for trial in trials:
        value = trial_values(trial.phases).get(key)
        if value is None:
            return None
        out.append(float(value))
    return out or None


def _counter_text(key: str, value: float) -> str:
    return human_bytes(value) if key == "wal_bytes" else f"{value:.0f}"


def _mechanism(
    base: list[TrialResult], mine: list[TrialResult], threshold: float, confidence: float
) -> str:
    """The first counter whose own comparison across trials is decided: WAL, fsyncs, evictions.

    The same test as a timing verdict (Mann–Whitney with the Hodges–Lehmann interval, beyond
    the run's threshold) on the per-trial counts, at `confidence` (the card's counter
    comparisons corrected together): `fsyncs 9 → 11` from noise is left out rather than shown
    as the reason a variant is 2× slower.
    """
    for key, label in COUNTERS:
        b, m = _counter(base, key), _counter(mine, key)
        if b is None or m is None:
            continue
        v = compare(b, m, threshold=threshold, floor_seconds=0.0, confidence=confidence)
        if v.decided:
            b_med, m_med = statistics.median(b), statistics.median(m)
            return f"{label} {_counter_text(key, b_med)} {ARROW} {_counter_text(key, m_med)}"
    return ""


def moved_most(s: Samples, baseline: str, variant: str) -> str:
    """'commit 5.4 ms → 3.60 s': the phase whose median moved most from the baseline's.

    Medians of the measured trials, as in the table's rows. A phase the baseline never ran
    counts from nothing ('add-fk 300 ms (new phase)'). When the rest of the trial gives back
    more than half of that phase's move, the phase that gave back most is named too ('insert
    1.35 s → 659 ms, but commit 5 ms → 670 ms'): a trade-off is not a gain. Empty for a
    one-phase run (the total is the phase) or without trials.
    """
    if TOTAL not in s.phases:
        return ""
    moves: list[tuple[float, str]] = []
    for phase in s.phases:
        if phase == TOTAL:
            continue
        after = _median(s.seconds.get((variant, phase), []))
        if after is None:
            continue
        before = _median(s.seconds.get((baseline, phase), []))
        if before is None:
            text = f"{phase} {seconds_text(after)} (new phase)"
        else:
            text = f"{phase} {seconds_text(before)} {ARROW} {seconds_text(after)}"
        moves.append((after - (before or 0.0), text))
    if not moves:
        return ""
    best = max(moves, key=lambda m: abs(m[0]))
    rest = [m for m in moves if m is not best]
    back = sum(d for d, _ in rest)
    if best[0] * back < 0 and abs(back) > abs(best[0]) / 2:
        other = max((m for m in rest if m[0] * best[0] < 0), key=lambda m: abs(m[0]))
        return f"{best[1]}, but {other[1]}"
    return best[1]


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
    # Every counter comparison the card may make, corrected together (Bonferroni): a counter
    # the run never measured (evictions before pgwx read them) makes none.
    base_trials = by_variant.get(base_name, [])
    counters = sum(1 for k, _ in COUNTERS if _counter(base_trials, k) is not None)
    tests = max(1, counters) * max(1, len(by_variant) - 1)
    confidence = 1 - ALPHA / tests
    lines = []
    for variant in record.profile.variants:
        name = variant.name
        is_base = name == base_name
        mine = s.seconds.get((name, key), [])
        verdict = judged.verdicts.get((name, key)) if mine and not is_base else None
        if is_base:
            wal = _counter(by_variant.get(name, []), "wal_bytes")
            mechanism = f"WAL {human_bytes(statistics.median(wal))}" if wal else ""
        elif name in by_variant:
            mechanism = _mechanism(
                by_variant.get(base_name, []), by_variant[name], judged.threshold, confidence
            )
        else:
            mechanism = ""
        moved = "" if is_base else moved_most(s, base_name, name)
        lines.append(CardLine(name, is_base, _median(mine), verdict, mechanism, moved))
    return lines
