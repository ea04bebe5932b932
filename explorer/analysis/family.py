"""One error rate for a whole table: Holm's step-down across a run's variant × phase cells.

A table of 6 candidates × 4 phases makes 24 comparisons; at 95 % each, about one table in
four (measured: 17 of 60) shows a `faster` or `slower` that is not there. Holm's procedure
keeps the chance of *any* false finding in the table at α (the family-wise error rate) under
any dependence between the cells — and they are dependent: every cell of a phase shares the
baseline's trials, and the total is the sum of the phases. Chosen over Benjamini–Hochberg
because a reader of a pgwx table acts on each word (turn this knob), so one false word in a
table is the error to bound, not the share of false words among many; and over plain
Bonferroni because it is never less powerful.

Each cell's interval is drawn at the level Holm tested it at, so the word and the interval
agree: the j-th smallest p-value is tested at α/(N − j + 1) while the step-down goes on, and
every cell after the step-down stops gets α/(N − r), r the number of cells rejected before.
The interval of a cell Holm rejects then excludes 1, the interval of one it keeps contains 1;
`same` needs that interval inside 1 ± threshold (the Holm-compatible bounds of Strassburger
and Bretz, Statistics in Medicine 2008).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

from explorer.analysis.paired import CellSamples, cell_p, cell_verdict
from explorer.analysis.verdict import (
    DEFAULT_FLOOR_SECONDS,
    DEFAULT_MIN_N,
    Verdict,
    compare,
    mann_whitney,
)

K = TypeVar("K", bound=Hashable)

Samples2 = tuple[Sequence[float], Sequence[float]]
"""(baseline seconds, candidate seconds): an unpaired comparison."""


def _ranked(p_values: Sequence[float], family_size: int | None) -> tuple[list[int], int]:
    """Indices from the smallest p-value up, and N (at least the number of p-values)."""
    n = len(p_values)
    return sorted(range(n), key=lambda i: p_values[i]), max(family_size or n, n)


def holm_adjusted(p_values: Sequence[float], family_size: int | None = None) -> list[float]:
    """Holm-adjusted p-values, in the input order.

    The j-th smallest becomes max over i ≤ j of min(1, (N − i + 1) · p_(i)), N the family size
    (by default the number of p-values; larger when some cells of the family are not tested
    here, which only makes the result more conservative).
    """
    order, size = _ranked(p_values, family_size)
    out = [1.0] * len(p_values)
    running = 0.0
    for j, i in enumerate(order):
        running = max(running, min(1.0, (size - j) * p_values[i]))
        out[i] = running
    return out


def holm_levels(
    p_values: Sequence[float], alpha: float, family_size: int | None = None
) -> list[float]:
    """The level each p-value is tested at by Holm's step-down (input order).

    While p_(j) < α/(N − j + 1) the step-down rejects and goes on; cells from the first that
    fails onward all get α/(N − r), r the number rejected. A cell is rejected exactly when its
    p-value is below its level.
    """
    order, size = _ranked(p_values, family_size)
    levels = [0.0] * len(p_values)
    rejected = 0
    for j, i in enumerate(order):
        if rejected == j and p_values[i] < alpha / (size - j):
            rejected += 1
            levels[i] = alpha / (size - j)
        else:
            levels[i] = alpha / (size - rejected)
    return levels


def judge_family(
    pairs: Mapping[K, Samples2 | CellSamples],
    *,
    alpha: float = 0.05,
    family_size: int | None = None,
    threshold: float,
    min_n: int = DEFAULT_MIN_N,
    reported_alpha: float | None = None,
    floors: Mapping[K, float] | None = None,
) -> dict[K, Verdict]:
    """Verdicts for a family of (baseline, candidate) samples, Holm-corrected together.

    Args:
        pairs: Cell → (baseline seconds, candidate seconds), or its `CellSamples` with the
            rounds, to be judged on the within-round pairs where they are complete
            (`explorer.analysis.paired`).
        alpha: The family-wise error this set of comparisons may spend.
        family_size: N for Holm when the family has cells not in `pairs` (decided earlier).
        threshold: The noise threshold of the words.
        min_n: Fewer trials on a side: undecided, too few runs (outside the correction).
        reported_alpha: The run's whole α; `p_adjusted` is scaled by reported_alpha / alpha so
            it is read against 1 − the run's confidence (default: alpha itself).
        floors: Cell → its timing resolution in seconds (`compare`'s floor_seconds); the
            default clock resolution for a cell not in it.

    Returns:
        Cell → verdict, each with its interval at its Holm level and `p_adjusted` filled in.
    """
    out: dict[K, Verdict] = {}
    tested: list[K] = []

    def floor(key: K) -> float:
        return DEFAULT_FLOOR_SECONDS if floors is None else floors.get(key, DEFAULT_FLOOR_SECONDS)

    for key, cell in pairs.items():
        b, c = _sides(cell)
        if min(len(b), len(c)) < min_n:
            out[key] = compare(b, c, threshold=threshold, min_n=min_n, floor_seconds=floor(key))
        else:
            tested.append(key)
    size = max(family_size or len(tested), len(tested))
    # Paired or not is chosen per cell from the design: the level Holm tests it at first.
    first = alpha / max(size, 1)
    raw = [_p(pairs[k], first) for k in tested]
    levels = holm_levels(raw, alpha, size)
    scale = (reported_alpha or alpha) / alpha
    for key, level, adjusted in zip(tested, levels, holm_adjusted(raw, size), strict=True):
        v = _verdict(pairs[key], first, threshold, min_n, 1 - level, floor(key))
        out[key] = v.model_copy(update={"p_adjusted": min(1.0, adjusted * scale)})
    return out


def _sides(cell: Samples2 | CellSamples) -> tuple[Sequence[float], Sequence[float]]:
    return (cell.baseline, cell.candidate) if isinstance(cell, CellSamples) else cell


def _p(cell: Samples2 | CellSamples, first: float) -> float:
    if isinstance(cell, CellSamples):
        return cell_p(cell, first)
    return mann_whitney(cell[0], cell[1])[0]


def _verdict(
    cell: Samples2 | CellSamples,
    first: float,
    threshold: float,
    min_n: int,
    confidence: float,
    floor_seconds: float,
) -> Verdict:
    if isinstance(cell, CellSamples):
        return cell_verdict(
            cell,
            first,
            threshold=threshold,
            min_n=min_n,
            confidence=confidence,
            floor_seconds=floor_seconds,
        )
    return compare(
        cell[0],
        cell[1],
        threshold=threshold,
        min_n=min_n,
        confidence=confidence,
        floor_seconds=floor_seconds,
    )
