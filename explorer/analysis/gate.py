"""A CI gate on regressions: `pgwx run|compare … --fail-on slower [--fail-variant V]
[--fail-phase P]`.

The gate reads the verdicts the judge already gave and nothing else: a comparison trips it
only when its word is `slower` — the interval clear of 1 and the point beyond the noise
threshold, at the table's corrected confidence. `same`, `faster`, `undecided` and a phase
without a baseline never trip it, so noise and a run too short to tell cannot fail a job.
A tripped gate exits `EXIT_REGRESSED`, apart from every other outcome (README "For a team",
docs/team.md).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from explorer.analysis.verdict import SLOWER, Verdict
from explorer.errors import UsageError
from explorer.models import RunRecord

if TYPE_CHECKING:
    from explorer.analysis.judge import Judgement

EXIT_REGRESSED = 5
"""Exit status when the gate found a decided `slower` among the comparisons it watches."""

FAIL_WORDS = (SLOWER,)
"""What `--fail-on` accepts: only a decided `slower` is a regression."""


@dataclass(frozen=True)
class Gate:
    """Which comparisons fail the job, and on what word."""

    word: str = SLOWER
    variants: frozenset[str] = frozenset()
    """Only these variants (empty: every one)."""
    phases: frozenset[str] = frozenset()
    """Only these phases (empty: every one, the total included)."""

    def watches(self, variant: str, phase: str) -> bool:
        """Whether a comparison of `variant`'s `phase` is one this gate looks at."""
        return (not self.variants or variant in self.variants) and (
            not self.phases or phase in self.phases
        )

    def describe(self) -> str:
        """'slower in unlogged, copy' — what the gate watches, for the sentence it prints."""
        where = [", ".join(sorted(s)) for s in (self.variants, self.phases) if s]
        return f"{self.word}" + (f" in {' / '.join(where)}" if where else "")


@dataclass(frozen=True)
class Comparison:
    """One judged cell: whose (a server's tag, or ''), which variant and phase, its verdict."""

    variant: str
    phase: str
    verdict: Verdict
    where: str = ""


def gate_from_args(
    fail_on: str | None, variants: list[str] | None, phases: list[str] | None
) -> Gate | None:
    """The gate the options name, None without `--fail-on`, or one sentence why not."""
    if fail_on is None:
        if variants or phases:
            raise UsageError(
                "--fail-variant and --fail-phase narrow --fail-on; add --fail-on slower."
            )
        return None
    if fail_on not in FAIL_WORDS:
        raise UsageError(f"--fail-on takes {', '.join(FAIL_WORDS)}, not {fail_on!r}.")
    return Gate(fail_on, frozenset(variants or ()), frozenset(phases or ()))


def check_names(gate: Gate, comparisons: list[Comparison]) -> None:
    """One sentence when a variant or phase the gate names is in no comparison.

    A misspelt name would watch nothing and let every regression pass: refuse it instead.
    """
    for kind, named, present in (
        ("variant", gate.variants, {c.variant for c in comparisons}),
        ("phase", gate.phases, {c.phase for c in comparisons}),
    ):
        missing = sorted(named - present)
        if missing:
            have = ", ".join(sorted(present)) or "none"
            raise UsageError(
                f"--fail-{kind} {missing[0]} names no compared {kind} (these have verdicts: "
                f"{have}); the gate would watch nothing."
            )


def check_variants(gate: Gate, baseline: str, running: list[str]) -> None:
    """Before a run: one sentence when --fail-variant names the baseline or a variant that
    will not run (the gate would watch nothing there)."""
    for name in sorted(gate.variants):
        if name == baseline:
            raise UsageError(
                f"--fail-variant {name} is the baseline, which every other variant is "
                "compared with; name a variant compared with it."
            )
        if name not in running:
            raise UsageError(
                f"--fail-variant {name} is not a variant of this run ({', '.join(running)})."
            )


def regressions(gate: Gate, comparisons: Iterable[Comparison]) -> list[Comparison]:
    """The watched comparisons whose decided word is the gate's (never undecided or same)."""
    return [
        c
        for c in comparisons
        if c.verdict.word == gate.word and c.verdict.decided and gate.watches(c.variant, c.phase)
    ]


def sentence(gate: Gate, found: list[Comparison]) -> str:
    """What tripped the gate, one comparison per clause, with its verdict."""
    cells = "; ".join(
        (f"[{c.where}] " if c.where else "") + f"{c.variant} {c.phase} {c.verdict.label()}"
        for c in found
    )
    return (
        f"regression: {cells} — --fail-on {gate.describe()} exits {EXIT_REGRESSED} "
        "(a decided slower beyond the threshold)"
    )


def gated_status(status: int, gate: Gate | None, found: list[Comparison]) -> int:
    """`status`, or `EXIT_REGRESSED` when the gate found a regression in a finished run.

    A run that failed, was refused or cancelled keeps its own status: the gate only speaks
    for verdicts of a run that finished (0 decided or 4 undecided).
    """
    if gate is None or status not in (0, 4) or not found:
        return status
    return EXIT_REGRESSED


def comparisons_of(
    record: RunRecord, where: str = "", judged: Judgement | None = None
) -> list[Comparison]:
    """Every variant × phase verdict of a stored run, as its report judges it (`judged`:
    the run's judgement already made, so a run is judged once)."""
    from explorer.analysis.judge import judge

    verdicts = (judged if judged is not None else judge(record)).verdicts
    return [
        Comparison(variant, phase, verdict, where) for (variant, phase), verdict in verdicts.items()
    ]


def apply(gate: Gate | None, comparisons: list[Comparison], status: int) -> tuple[int, str | None]:
    """The exit status after the gate, and the sentence to print when it tripped.

    Raises:
        UsageError: The gate names a variant or phase no comparison has.
    """
    if gate is None:
        return status, None
    check_names(gate, comparisons)
    found = regressions(gate, comparisons)
    gated = gated_status(status, gate, found)
    return gated, (sentence(gate, found) if gated == EXIT_REGRESSED else None)
