"""How many rounds a run gets, who takes part in each, and how to say where it stands.

Fixed repeats run their rounds and stop. Auto repeats (`explorer.analysis.sequential`) judge
only at planned looks; at each look a variant whose comparisons are all settled stops getting
rounds, while the baseline and the still-open variants go on interleaving in balanced order.
No block of rounds up to the next look starts when the trials so far say it would end after
the time budget. The progress text — ``round 7 of ≤ 30 · ~3 min left · 3 comparisons open`` —
is what the CLI prints and the app shows.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field

from explorer.analysis.judge import Judgement
from explorer.analysis.sequential import next_look, planned_looks
from explorer.models import Profile


def _duration(seconds: float) -> str:
    """600 → '10m', 90 → '90s'."""
    if seconds >= 60 and seconds % 60 == 0:
        return f"{seconds / 60:.0f}m"
    return f"{seconds:g}s"


LEFT = re.compile(r"~(\d+) (min|s) left")
"""The remaining-time part of a round plan's text ('~3 min left')."""


def replayed_plan(plan: str, speed: float, paused: bool) -> str:
    """A recorded round plan as a replay at `speed` plays it: the time left is the
    recording's divided by the speed, and none is said while paused or played all at once
    (the recording's '~4 min left' is not what a 16× replay has left)."""
    if speed == 1 and not paused:
        return plan

    def scaled(m: re.Match[str]) -> str:
        seconds = int(m.group(1)) * (60 if m.group(2) == "min" else 1)
        return _minutes(seconds / speed)

    if paused or speed <= 0:
        return LEFT.sub("replay paused" if paused else "", plan).replace(" ·  · ", " · ")
    return LEFT.sub(scaled, plan)


def _minutes(seconds: float) -> str:
    """'~3 min left', '~40 s left'."""
    if seconds >= 90:
        return f"~{seconds / 60:.0f} min left"
    return f"~{max(seconds, 1):.0f} s left"


@dataclass
class RoundPlan:
    """The run's rounds as they unfold.

    Args:
        profile: The effective profile (repeats, warm-up, min/max repeats, budget).
        variants: The variants that run, in profile order.
        baseline: The baseline's name; it runs every round.
    """

    profile: Profile
    variants: list[str]
    baseline: str
    active: list[str] = field(default_factory=list)
    """Variants that still get rounds."""
    open_comparisons: int | None = None
    """Comparisons undecided at the last look (None before the first)."""
    trial_seconds: dict[str, list[float]] = field(default_factory=dict)
    """Wall-clock seconds of each variant's trials so far, for the estimate."""
    stopped_why: str | None = None
    """Why an auto run stopped before every comparison settled."""
    useful: list[int] | None = None
    """The looks that can decide something, once a judgement has said (table size known)."""

    def __post_init__(self) -> None:
        self.active = list(self.variants)

    @property
    def auto(self) -> bool:
        """repeats = "auto"."""
        return self.profile.repeats == "auto"

    @property
    def looks(self) -> list[int]:
        """The measured rounds at which verdicts are judged."""
        if self.useful:
            return self.useful
        p = self.profile
        return planned_looks(p.repeats, p.min_repeats, p.max_repeats)

    @property
    def most_rounds(self) -> int:
        """Measured rounds at most: the fixed repeats or max_repeats."""
        return self.looks[-1]

    def first_rounds(self) -> int:
        """Rounds planned at the start: warm-up plus the repeats or the first look."""
        return self.profile.warmup + self.looks[0]

    def order(self, done: int) -> list[str]:
        """The active variants in round `done`'s direction (A B C, then C B A, …)."""
        return self.active if done % 2 == 0 else list(reversed(self.active))

    def record(self, variant: str, seconds: float) -> None:
        """A trial of `variant` took `seconds` (for the time estimate)."""
        self.trial_seconds.setdefault(variant, []).append(seconds)

    def round_seconds(self) -> float | None:
        """Estimated seconds of one round of the active variants; None before any trial."""
        if not self.trial_seconds:
            return None
        every = [s for v in self.trial_seconds.values() for s in v]
        fallback = statistics.median(every)
        return sum(
            statistics.median(self.trial_seconds[v]) if v in self.trial_seconds else fallback
            for v in self.active
        )

    def progress(self, done: int, elapsed: float) -> str:
        """Where round `done` (0-based, warm-ups included) stands."""
        warm = self.profile.warmup
        if done < warm:
            head = f"warm-up round {done + 1} of {warm}"
        elif self.auto:
            head = f"round {done - warm + 1} of ≤ {self.most_rounds}"
        else:
            head = f"round {done - warm + 1} of {self.most_rounds}"
        parts = [head]
        per_round = self.round_seconds()
        if per_round is not None:
            left = (warm + self.most_rounds - done) * per_round
            if self.auto:
                left = min(left, max(self.profile.budget - elapsed, per_round))
            parts.append(_minutes(left))
        if self.open_comparisons is not None:
            n = self.open_comparisons
            parts.append(f"{n} comparison{'s' if n != 1 else ''} open")
        return " · ".join(parts)

    def after_round(self, done: int, judged: Judgement | None, elapsed: float) -> bool:
        """After `done` rounds (warm-ups included): run another? Updates who takes part.

        `judged` is the run's judgement when `done` is at a look of an auto run, else None.
        """
        measured = done - self.profile.warmup
        if not self.auto:
            return measured < self.most_rounds
        if judged is None:
            return measured < self.looks[0] or measured not in self.looks
        if not judged.verdicts:
            return False  # nothing to compare: more rounds cannot decide anything
        self.useful = judged.planned or None
        # A look the table's size made useless (`sequential.useful_looks`) spends no α: the
        # run's final judgement does not take it, so nobody stops on what it said.
        dropped = self.useful is not None and measured < self.useful[-1]
        if not (dropped and measured not in (self.useful or [])):
            open_variants = judged.open_variants()
            self.open_comparisons = len(judged.undecided)
            if not open_variants:
                if judged.undecided:  # closed as futile (`explorer.analysis.futility`)
                    self.stopped_why = "nothing left that more rounds could decide"
                return False
            self.active = [v for v in self.variants if v == self.baseline or v in open_variants]
        upcoming = next_look(measured, self.looks)
        if upcoming is None:
            self.stopped_why = f"max_repeats ({self.most_rounds}) reached"
            return False
        per_round = self.round_seconds() or 0.0
        if elapsed + (upcoming - measured) * per_round > self.profile.budget:
            self.stopped_why = (
                f"the rounds to the next look ({upcoming}) would end after the time budget "
                f"({_duration(self.profile.budget)})"
            )
            return False
        return True
