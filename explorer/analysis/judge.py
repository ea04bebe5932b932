"""A run's verdicts: every variant × phase against the baseline, from the stored trials.

`explorer.analysis.verdict` has the statistics of one comparison; this module picks the samples
out of a run (finished trials only, warm-ups left out, phases in run order, a total only where
every phase of the trial is known), compares each variant's phase with the baseline's, checks
the baseline for drift, and says which comparisons are settled. The runner asks it whether
another round is needed; the report, `pgwx compare` and the app show what it found.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field

from explorer.analysis.verdict import (
    DEFAULT_FLOOR_SECONDS,
    DEFAULT_THRESHOLD,
    Verdict,
    compare,
    drift,
    total,
)
from explorer.models import RunRecord, TrialResult

TOTAL = "total"
"""The name of the summed phase in tables with more than one phase."""

PhaseKey = tuple[str, str]
"""(variant, phase)."""

DRIFT_MIN_N = 6
"""Baseline trials needed before drift is judged: two per third."""


@dataclass
class Samples:
    """Seconds per measured trial, keyed by (variant, phase), in run order."""

    phases: list[str] = field(default_factory=list)
    """Phase names in the order they first ran, then "total" when there is more than one."""
    seconds: dict[PhaseKey, list[float]] = field(default_factory=dict)
    """Durations of the measured (ok, not warm-up) trials."""
    warmups: dict[str, int] = field(default_factory=dict)
    """Variant → warm-up trials left out."""


@dataclass
class Judgement:
    """What a run's trials support."""

    baseline: str
    """The variant every other is compared with."""
    threshold: float
    """Relative change counted as noise."""
    verdicts: dict[PhaseKey, Verdict] = field(default_factory=dict)
    """One per candidate variant and phase that the baseline also ran."""
    drifted: dict[str, bool] = field(default_factory=dict)
    """Phase → the baseline's first and last thirds differ by more than the threshold."""
    undecided: list[PhaseKey] = field(default_factory=list)
    """Comparisons whose interval does not yet settle the question (see `settled`)."""


def measured(trials: Iterable[TrialResult]) -> list[TrialResult]:
    """The trials that count: finished, and not a warm-up."""
    return [t for t in trials if t.status == "ok" and not t.warmup]


def samples(trials: Iterable[TrialResult]) -> Samples:
    """Per (variant, phase) durations of the measured trials; a total only when all are known."""
    trials = list(trials)
    out = Samples()
    for t in trials:
        if t.status == "ok" and t.warmup:
            out.warmups[t.variant] = out.warmups.get(t.variant, 0) + 1
    good = measured(trials)
    for t in good:
        for p in t.phases:
            if p.name not in out.phases:
                out.phases.append(p.name)
    # Variants may differ in their phases (after-load adds add-fk); a total is over the
    # variant's own phases, and a trial lacking one of them has an unknown total.
    own: dict[str, list[str]] = {}
    for t in good:
        mine = own.setdefault(t.variant, [])
        mine.extend(p.name for p in t.phases if p.name not in mine)
    for t in good:
        by_name = {p.name: p.seconds for p in t.phases}
        for name, secs in by_name.items():
            out.seconds.setdefault((t.variant, name), []).append(secs)
        if len(out.phases) > 1:
            whole = total(by_name.get(n) for n in own[t.variant])
            if whole is not None:
                out.seconds.setdefault((t.variant, TOTAL), []).append(whole)
    if len(out.phases) > 1:
        out.phases.append(TOTAL)
    return out


def settled(v: Verdict) -> bool:
    """True when more trials would not change the word.

    The interval must lie entirely beyond the threshold on one side (below 1 − threshold or
    above 1 + threshold) or entirely inside 1 ± threshold; for phases below the floor, the
    same with the difference in seconds against ± the floor.
    """
    if v.too_few:
        return False
    if v.below_floor is not None:
        lo, hi = v.diff_ci_low, v.diff_ci_high
        if lo is None or hi is None:
            return False
        f = DEFAULT_FLOOR_SECONDS
        return hi < -f or lo > f or (-f <= lo and hi <= f)
    lo, hi = v.ci_low, v.ci_high
    if lo is None or hi is None:
        return False
    t = v.threshold
    return hi < 1 - t or lo > 1 + t or (1 - t <= lo and hi <= 1 + t)


def judge(
    record: RunRecord,
    *,
    threshold: float | None = None,
    variants: list[str] | None = None,
) -> Judgement:
    """Verdicts for a run.

    Args:
        record: The run, with its trials so far.
        threshold: Overrides the profile's noise threshold.
        variants: The variants that ran (default: the profile's); one without measured
            trials counts as undecided.

    Returns:
        The verdicts, the baseline's drift per phase, and what stayed undecided.
    """
    profile = record.profile
    t = threshold if threshold is not None else getattr(profile, "threshold", DEFAULT_THRESHOLD)
    base = profile.baseline_name()
    out = Judgement(baseline=base, threshold=t)
    s = samples(record.trials)
    names = variants or [v.name for v in profile.variants]
    skipped = {
        v
        for v in names
        if any(x.variant == v for x in record.trials)
        and all(x.status == "skipped" for x in record.trials if x.variant == v)
    }
    for phase in s.phases:
        ref = s.seconds.get((base, phase), [])
        # One trial per third is the noise of one trial, and a phase below the floor is
        # timer resolution: neither is a trend.
        out.drifted[phase] = (
            len(ref) >= DRIFT_MIN_N
            and statistics.median(ref) >= DEFAULT_FLOOR_SECONDS
            and drift(ref, t)
        )
        for name in names:
            if name == base or name in skipped:
                continue
            mine = s.seconds.get((name, phase))
            if mine is None and not ref:
                continue
            v = compare(ref, mine or [], threshold=t)
            out.verdicts[(name, phase)] = v
            if not settled(v):
                out.undecided.append((name, phase))
    return out


def undecided_text(judged: Judgement) -> str | None:
    """One sentence naming what stayed undecided, or None when everything is settled."""
    if not judged.undecided:
        return None
    few: dict[str, int] = {}
    open_: list[str] = []
    for key in judged.undecided:
        v = judged.verdicts.get(key)
        if v is None or v.too_few:
            n = min(v.n_baseline, v.n_candidate) if v is not None else 0
            few[key[0]] = min(few.get(key[0], n), n)
        else:
            open_.append(f"{key[0]} {key[1]} ({v.label()})")
    parts = []
    if open_:
        parts.append("the interval still straddles the threshold for " + ", ".join(open_))
    if few:
        parts.append(
            "too few trials for any verdict for "
            + ", ".join(f"{name} (n={n})" for name, n in few.items())
        )
    return "Undecided: " + "; ".join(parts) + " — more trials could change the word."
