"""The blocked t test: its t distribution, its reduction to the paired t, what the blocks buy."""

from __future__ import annotations

import math
import random
import statistics

import pytest

from explorer.analysis.blocked import block_of, blocked_t, t_quantile, t_two_sided_p
from explorer.analysis.calibration import Scenario, synthetic_record, synthetic_trial
from explorer.analysis.judge import judge

# scipy 1.16.3: 2 * stats.t.sf(t, df) and stats.t.isf(4.2e-4 / 2, df).
SCIPY = (
    (2, 3.0, 0.09546596626670913, 48.77963187636117),
    (7.5, 5.0, 0.0012762228035169802, 5.990906909651012),
    (24.3, 4.2, 0.0003107610120056595, 4.081782354669429),
    (98, 3.7, 0.0003560186031870655, 3.651950735539778),
)


@pytest.mark.parametrize(("df", "t", "p", "q"), SCIPY)
def test_t_distribution_is_scipys(df: float, t: float, p: float, q: float) -> None:
    assert t_two_sided_p(t, df) == pytest.approx(p, rel=1e-9)
    assert t_quantile(4.2e-4, df) == pytest.approx(q, rel=1e-9)


def test_two_columns_are_the_paired_t_test() -> None:
    rng = random.Random(4)
    base = [rng.gauss(0, 0.1) for _ in range(12)]
    cand = [b - 0.05 + rng.gauss(0, 0.05) for b in base]
    got = blocked_t(base, cand, None)
    d = [c - b for b, c in zip(base, cand, strict=True)]
    t = statistics.fmean(d) / (statistics.stdev(d) / math.sqrt(len(d)))
    assert got.df == pytest.approx(11)
    assert got.estimate == pytest.approx(statistics.fmean(d))
    assert got.p_value == pytest.approx(t_two_sided_p(t, 11), rel=1e-12)
    lo, hi = got.interval(0.95)
    assert lo < got.estimate < hi and (lo < 0 < hi) == (got.p_value >= 0.05)


def _table(noise: list[float], rounds: int, seed: int, shared: float = 0.0) -> list[list[float]]:
    """Log durations of len(noise) variants (column j with noise[j]) over `rounds` rounds."""
    rng = random.Random(seed)
    cols: list[list[float]] = [[] for _ in noise]
    for _ in range(rounds):
        day = rng.gauss(0, shared)
        for j, sd in enumerate(noise):
            cols[j].append(day + rng.gauss(0, sd))
    return cols


def test_the_other_variants_add_degrees_of_freedom_and_each_side_keeps_its_noise() -> None:
    cols = _table([0.1] * 7 + [0.4], 15, seed=2)
    block = block_of(cols)
    assert block is not None and block.columns == 8
    alone = blocked_t(cols[0], cols[1], None)
    blocked = blocked_t(cols[0], cols[1], block)
    # Same estimate; 14 degrees of freedom alone, about 2 · 14 · 7/8 = 24.5 with the block.
    assert blocked.estimate == pytest.approx(alone.estimate)
    assert alone.df == pytest.approx(14) and 18 < blocked.df < 26
    # The noisy column's comparison carries its own noise, not the table's average.
    noisy = blocked_t(cols[0], cols[7], block)
    assert noisy.se > 1.5 * blocked.se  # a pooled variance gives both the same se


def test_a_shared_round_factor_is_removed_in_a_whole_run() -> None:
    """Rounds that swing ±30 % together hide a steady 0.9× from the pooled comparison; the
    blocked t sees it, on the same rounds a two-variant pair would need many more of."""
    rng = random.Random(11)
    trials = []
    for r in range(1, 11):
        day = math.exp(rng.gauss(0, 0.3))
        for v in range(4):
            ratio = 0.9 if v == 1 else 1.0
            secs = day * ratio * math.exp(rng.gauss(0, 0.03))
            trials.append(synthetic_trial(f"v{v}", r, {"p1": secs}))
    record = synthetic_record(Scenario(variants=4, repeats=10).profile(), trials)
    v = judge(record).verdicts[("v1", "p1")]
    assert v.pairing == "paired" and v.p_method == "t" and v.word == "faster"
    assert v.ci_low is not None and v.ci_high is not None
    assert v.ci_low < v.ratio < v.ci_high < 0.97  # type: ignore[operator]
    # The identical variants stay within the noise.
    assert judge(record).verdicts[("v2", "p1")].word != "faster"


def test_a_false_word_stays_rare_with_a_noisier_variant() -> None:
    """One variant three times as noisy, no difference anywhere: at a large table's level
    (4.2e-4) its blocked comparison rejects about as rarely as promised; a pooled variance
    (the textbook two-way analysis) would reject it 60 times more often."""
    level, runs, hits = 4.2e-4, 4000, 0
    for seed in range(runs):
        cols = _table([0.1] * 7 + [0.3], 15, seed)
        hits += blocked_t(cols[0], cols[7], block_of(cols)).p_value < level
    assert hits / runs < 5 * level  # measured 0.0008 at 20000 runs; 60× would be 0.025
