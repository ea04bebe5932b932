"""A run's verdicts: every variant × phase against the baseline, from the stored trials.

`explorer.analysis.verdict` has the statistics of one comparison; this module picks the samples
out of a run (finished trials only, warm-ups left out, phases in run order, a total only where
every phase of the trial is known), compares each variant's phase with the baseline's, checks
the baseline for drift, and says which comparisons are settled. The runner asks it whether
another round is needed; the report, `pgwx compare` and the app show what it found.

The judgement replays the run's planned looks (`explorer.analysis.sequential`): at each look
the still-open comparisons are Holm-corrected together (`explorer.analysis.family`) on the
trials of the rounds up to that look, at the look's share of α; a comparison settled at a look
(faster, slower, same) keeps that verdict, the rest are judged again at the next look. A run
with fixed repeats has one look, at its end. So the same stored trials always give the same
words, during the run and years later.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from explorer.analysis.blocked import Block
from explorer.analysis.drift import Drift, run_drift
from explorer.analysis.family import Samples2, judge_family
from explorer.analysis.futility import close_futile
from explorer.analysis.paired import CellSamples, cell_upto, phase_block
from explorer.analysis.run_family import table_alpha, tables_in_run
from explorer.analysis.sequential import ALPHA, look_alpha, planned_looks, useful_looks
from explorer.analysis.verdict import (
    DEFAULT_FLOOR_SECONDS,
    DEFAULT_THRESHOLD,
    NO_BASELINE,
    POLLED_FLOOR_SECONDS,
    UNDECIDED,
    Verdict,
    total,
)
from explorer.models import Profile, RunRecord, TrialResult

TOTAL = "total"
"""The name of the summed phase in tables with more than one phase."""

K = TypeVar("K", bound=Hashable)

PhaseKey = tuple[str, str]
"""(variant, phase)."""

DRIFT_FLOOR_SECONDS = POLLED_FLOOR_SECONDS
"""Cells with a median below this are left out of the drift test: their relative noise is
timer resolution, which would only dilute a real trend."""


@dataclass
class Samples:
    """Seconds per measured trial, keyed by (variant, phase), in run order."""

    phases: list[str] = field(default_factory=list)
    """Phase names in the order they first ran, then "total" when there is more than one."""
    seconds: dict[PhaseKey, list[float]] = field(default_factory=dict)
    """Durations of the measured (ok, not warm-up) trials."""
    rounds: dict[PhaseKey, list[int]] = field(default_factory=dict)
    """Beside each duration, its measured round (1 = the first round after the warm-ups)."""
    warmups: dict[str, int] = field(default_factory=dict)
    """Variant → warm-up trials left out."""
    floors: dict[str, float] = field(default_factory=dict)
    """Phase → its timing resolution when it is not the clock's: `POLLED_FLOOR_SECONDS` for
    an end pgwx polled for (a restore COMMIT whose `commit_resolution` says polling), and for
    the total that includes it."""


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
    """Phase → the run's trend test flagged a drift (`drift`) and this phase was in it."""
    drift: Drift | None = None
    """The run's trend test over every variant's trials in round order
    (`explorer.analysis.drift`); None with too few rounds."""
    undecided: list[PhaseKey] = field(default_factory=list)
    """Comparisons whose word is `undecided`, in table order."""
    looks: list[int] = field(default_factory=list)
    """Measured rounds at which the verdicts were judged (the last is the run's end)."""
    planned: list[int] = field(default_factory=list)
    """The planned looks that can decide something in a table this size (auto repeats)."""
    family_size: int = 0
    """Comparisons corrected together (Holm) — every cell with a baseline counterpart."""
    tables: int = 1
    """Tables the run prints that share its α (`explorer.analysis.run_family`): 1, or S + 1
    for a run on S servers."""

    def open_variants(self) -> set[str]:
        """Variants with a comparison still undecided and not closed as futile: the ones more
        rounds can help."""
        return {key[0] for key in self.undecided if not self.verdicts[key].futile}


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
    first = min((t.repeat for t in good), default=1)
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
        if len(out.phases) > 1:
            whole = total(by_name.get(n) for n in own[t.variant])
            if whole is not None:
                by_name[TOTAL] = whole
        for name, secs in by_name.items():
            out.seconds.setdefault((t.variant, name), []).append(secs)
            out.rounds.setdefault((t.variant, name), []).append(t.repeat - first + 1)
    if len(out.phases) > 1:
        out.phases.append(TOTAL)
    for t in good:
        for p in t.phases:
            if str(p.detail.get("commit_resolution", "")).startswith("polling"):
                out.floors[p.name] = POLLED_FLOOR_SECONDS
    return out


def settled(v: Verdict) -> bool:
    """True when the word is faster, slower or same: more trials are not needed for it."""
    return v.settled


def _cell(s: Samples, key: PhaseKey) -> tuple[list[float], list[int]]:
    """A cell's durations and their rounds, for pairing."""
    return s.seconds.get(key, []), s.rounds.get(key, [])


def judge(
    record: RunRecord,
    *,
    threshold: float | None = None,
    variants: list[str] | None = None,
) -> Judgement:
    """Verdicts for a run, replaying its planned looks.

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
    out = Judgement(baseline=base, threshold=t, tables=tables_in_run(record))
    s = samples(record.trials)
    # A stored run judges the variants it ran (`--variant` picks some); a variant whose trials
    # all failed ran, and stays undecided.
    ran = {t.variant for t in record.trials}
    names = variants or [v.name for v in profile.variants if v.name in ran or not ran]
    skipped = {
        v
        for v in names
        if any(x.variant == v for x in record.trials)
        and all(x.status == "skipped" for x in record.trials if x.variant == v)
    }
    cells: list[PhaseKey] = []
    # During a run, a baseline without a measured trial has not run yet: nothing is missing.
    pending = record.status == "running" and not any(v == base for v, _ in s.seconds)
    for phase in s.phases:
        ref = s.seconds.get((base, phase), [])
        for name in names:
            if name == base or name in skipped:
                continue
            mine = s.seconds.get((name, phase))
            if mine is None and not ref:
                continue
            if not ref:
                out.verdicts[(name, phase)] = Verdict(
                    n_baseline=0,
                    n_candidate=len(mine or []),
                    median_baseline=None,
                    median_candidate=statistics.median(mine) if mine else None,
                    threshold=t,
                    word=NO_BASELINE,
                    baseline_pending=pending,
                )
                continue
            cells.append((name, phase))
    listing = [
        k
        for phase in s.phases
        for k in ((n, phase) for n in names)
        if k in cells or k in out.verdicts
    ]
    out.family_size = len(cells)
    _judge_drift(out, record.trials, s, names)
    _replay_looks(out, s, cells, profile)
    out.verdicts = {k: out.verdicts[k] for k in listing}
    out.undecided = [k for k in out.verdicts if out.verdicts[k].word == UNDECIDED]
    return out


def _judge_drift(out: Judgement, trials: list[TrialResult], s: Samples, names: list[str]) -> None:
    """The run's trend test over every variant's measured trials in run order (not the
    total, not phases below the floor); a flag marks every phase that went into it."""
    tested = {
        key
        for key, secs in s.seconds.items()
        if key[0] in names
        and key[1] != TOTAL
        and secs
        and statistics.median(secs) >= DRIFT_FLOOR_SECONDS
    }
    series = [
        (t.variant, {p.name: p.seconds for p in t.phases if (t.variant, p.name) in tested})
        for t in measured(trials)
        if t.variant in names
    ]
    out.drift = run_drift(series, threshold=out.threshold, alpha=ALPHA)
    flagged = out.drift is not None and out.drift.flagged
    phases = {phase for _, phase in tested}
    for phase in s.phases:
        out.drifted[phase] = flagged and (phase in phases or phase == TOTAL)


def _replay_looks(out: Judgement, s: Samples, cells: list[PhaseKey], profile: Profile) -> None:
    """Judge `cells` at each planned look the run reached, settled ones kept as they were."""
    base = out.baseline
    done = max((r for rs in s.rounds.values() for r in rs), default=0)
    blocks: dict[tuple[str, int], Block | None] = {}

    def block(phase: str, point: int) -> Block | None:
        """The phase's round means at this look over the baseline and its judged variants."""
        if (phase, point) not in blocks:
            columns = [_cell(s, (base, phase))] + [_cell(s, k) for k in cells if k[1] == phase]
            blocks[(phase, point)] = phase_block(columns, point)
        return blocks[(phase, point)]

    verdicts, out.planned, out.looks = replay_looks(
        cells,
        lambda key, point: cell_upto(
            _cell(s, (base, key[1])), _cell(s, key), point, block(key[1], point)
        ),
        profile,
        done,
        out.threshold,
        {key: s.floors.get(key[1], DEFAULT_FLOOR_SECONDS) for key in cells},
        alpha=table_alpha(out.tables),
    )
    out.verdicts.update(verdicts)


def replay_looks(
    cells: list[K],
    pair_upto: Callable[[K, int], Samples2 | CellSamples],
    profile: Profile,
    done: int,
    threshold: float,
    floors: Mapping[K, float] | None = None,
    *,
    alpha: float = ALPHA,
) -> tuple[dict[K, Verdict], list[int], list[int]]:
    """Judge `cells` at each planned look `done` measured rounds reached (a settled word is
    kept), Holm-corrected together at each look's share of α.

    Args:
        cells: The comparisons of the table, one family.
        pair_upto: (cell, last measured round) → its `CellSamples` (paired where the rounds
            are complete), or (reference seconds, candidate seconds).
        profile: Whose repeats plan the looks.
        done: Measured rounds so far.
        threshold: Noise threshold of the words.
        floors: Cell → its timing resolution (default: the clock's).
        alpha: This table's share of the run's α (`explorer.analysis.run_family`).

    Returns:
        The verdicts, the planned looks and the looks taken.
    """
    if not cells:
        return {}, [], []
    planned = planned_looks(profile.repeats, profile.min_repeats, profile.max_repeats)
    if profile.repeats == "auto":
        planned = useful_looks(planned, len(cells), alpha)
    auto = profile.repeats == "auto"
    # Fixed repeats: one look, at the end. Auto: the planned looks passed, and the end (a run
    # cut short ends between looks; one longer than planned makes its end one more look).
    points = [n for n in planned if n < done] + [done] if auto else [done]
    share = look_alpha(max(len(planned), len(points)), alpha)
    verdicts: dict[K, Verdict] = {}
    open_ = list(cells)
    for point in points:
        here = {k: pair_upto(k, point) for k in open_}
        judged = judge_family(
            here,
            alpha=share,
            family_size=len(cells),
            threshold=threshold,
            reported_alpha=ALPHA,
            floors=floors,
        )
        for key in open_:
            v = judged[key]
            verdicts[key] = v.model_copy(update={"look": point}) if auto else v
        open_ = [k for k in open_ if not verdicts[k].settled]
        if auto and point in planned:
            open_ = close_futile(open_, here, verdicts, point, planned[-1], share, len(cells))
        if not open_:
            break
    return verdicts, planned, points


def undecided_text(judged: Judgement) -> str | None:
    """One sentence naming what stayed undecided, or None when everything is settled."""
    if not judged.undecided:
        return None
    few: dict[str, int] = {}
    open_: list[str] = []
    closed: list[str] = []
    for key in judged.undecided:
        v = judged.verdicts[key]
        if v.futile:
            closed.append(f"{key[0]} {key[1]} ({v.futile})")
        elif v.too_few:
            n = min(v.n_baseline, v.n_candidate)
            few[key[0]] = min(few.get(key[0], n), n)
        else:
            open_.append(f"{key[0]} {key[1]} ({v.label()})")
    parts = []
    if open_:
        parts.append(
            "the interval is neither clear of 1 beyond the threshold nor inside it for "
            + ", ".join(open_)
        )
    if closed:
        parts.append(
            "closed early, no word reachable by max_repeats for "
            + ", ".join(closed[:6])
            + (f" and {len(closed) - 6} more" if len(closed) > 6 else "")
        )
    if few:
        parts.append(
            "too few trials for any verdict for "
            + ", ".join(f"{name} (n={n})" for name, n in few.items())
        )
    return "Undecided: " + "; ".join(parts) + " — more trials could settle the word."
