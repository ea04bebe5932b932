"""The paired verdict against an independent count: every sign flip enumerated by brute force."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from explorer.analysis.paired import (
    CellSamples,
    cell_verdict,
    compare_paired,
    hodges_lehmann,
    signed_rank,
    smallest_paired_p,
    walsh_averages,
)


def brute_p(diffs: list[float]) -> float:
    """Two-sided exact signed-rank p by enumerating all 2^n sign flips (mid-ranks, zeros out)."""
    d = [x for x in diffs if x != 0]
    a = [abs(x) for x in d]
    ranks = [sum(1 for y in a if y < x) + (sum(1 for y in a if y == x) + 1) / 2 for x in a]
    observed = sum(r for r, x in zip(ranks, d, strict=True) if x > 0)
    mean = sum(ranks) / 2
    extreme = 0
    for signs in itertools.product((0, 1), repeat=len(d)):
        w = sum(r for r, s in zip(ranks, signs, strict=True) if s)
        if abs(w - mean) >= abs(observed - mean) - 1e-9:
            extreme += 1
    return min(1.0, extreme / 2 ** len(d))


def samples(seed: int, n: int, ties: bool) -> list[float]:
    rng = random.Random(seed)
    if ties:
        return [rng.choice([-3, -2, -1, 0, 1, 2, 3, 4]) / 4 for _ in range(n)]
    return [rng.gauss(0.3, 1) for _ in range(n)]


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("seed", range(12))
def test_signed_rank_p_is_the_enumerated_one(seed: int, ties: bool) -> None:
    d = samples(seed, 4 + seed % 8, ties)
    p, method = signed_rank(d)
    assert method == "exact"
    assert p == pytest.approx(brute_p(d), abs=1e-12)


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("seed", range(10))
def test_interval_is_the_set_the_test_keeps(seed: int, ties: bool) -> None:
    """Inside the interval (strictly between Walsh averages) the test of d − δ keeps δ;
    outside it rejects; the point is inside."""
    d = samples(100 + seed, 6 + seed % 6, ties)
    conf = 0.9
    point, interval = hodges_lehmann(d, conf)
    assert interval is not None
    lo, hi = interval
    assert lo <= point <= hi
    cuts = sorted(set(walsh_averages(d)))
    gaps = [(a + b) / 2 for a, b in itertools.pairwise(cuts)]
    for g in gaps:
        kept = brute_p([x - g for x in d]) >= 1 - conf
        assert kept == (lo < g < hi), (g, lo, hi)


def test_point_is_the_walsh_median() -> None:
    d = [0.1, -0.2, 0.4]
    # Walsh averages: 0.1, -0.2, 0.4, -0.05, 0.25, 0.1 → median of six = (0.1 + 0.1) / 2
    assert hodges_lehmann(d)[0] == pytest.approx(0.1)


def test_smallest_p() -> None:
    assert smallest_paired_p(5) == pytest.approx(0.0625)
    assert signed_rank([0.1, 0.2, 0.3, 0.4, 0.5])[0] == pytest.approx(0.0625)


def test_pairing_removes_a_shared_round_factor() -> None:
    """Rounds that swing ±40 % together hide a steady 0.9× from the pooled comparison; the
    within-round pairs show it."""
    rng = random.Random(3)
    pairs = []
    for _ in range(12):
        day = math.exp(rng.gauss(0, 0.4))
        b = day * math.exp(rng.gauss(0, 0.01))
        pairs.append((b, b * 0.9 * math.exp(rng.gauss(0, 0.01))))
    v = compare_paired(pairs)
    assert v.word == "faster" and v.pairing == "paired"
    assert v.ci_low is not None and v.ci_high is not None and v.ci_high < 1
    cell = CellSamples(
        [b for b, _ in pairs], [c for _, c in pairs], list(range(12)), list(range(12))
    )
    assert cell_verdict(cell, 0.05, threshold=0.03, min_n=5, confidence=0.95).word == "faster"


def test_incomplete_rounds_are_judged_unpaired_and_said() -> None:
    b = [1.0, 1.1, 0.9, 1.05, 0.95, 1.02]
    c = [0.8, 0.85, 0.82, 0.79, 0.81]
    cell = CellSamples(b, c, [1, 2, 3, 4, 5, 6], [1, 2, 3, 5, 6])  # round 4's trial failed
    assert cell.pairs() is None
    v = cell_verdict(cell, 0.05, threshold=0.03, min_n=5, confidence=0.95)
    assert v.pairing == "unpaired"
    whole = CellSamples(b[:5], c, [1, 2, 3, 4, 5], [1, 2, 3, 4, 5])
    # Above the floor the blocked t test judges complete rounds: it has no smallest p.
    v = cell_verdict(whole, 0.05, threshold=0.03, min_n=5, confidence=0.95)
    assert v.pairing == "paired" and v.p_method == "t"
    # In seconds (below the clock's floor) the signed rank judges them, when it can reach
    # the level.
    tiny = CellSamples(
        [x / 1e5 for x in b[:5]], [x / 1e5 for x in c], [1, 2, 3, 4, 5], [1, 2, 3, 4, 5]
    )
    assert cell_verdict(tiny, 0.05, threshold=0.03, min_n=5, confidence=0.95).pairing == (
        "unpaired"  # five pairs cannot reach 5 % (their smallest p is 1/16)
    )
    assert cell_verdict(tiny, 0.07, threshold=0.03, min_n=5, confidence=0.95).pairing == "paired"
