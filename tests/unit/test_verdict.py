"""The verdict statistics on known inputs (no server needed).

Reference p-values and intervals come from scipy 1.17.1, computed once by
tests/fixtures/verdict_reference.py (scipy is not a pgwx dependency, so the numbers are pasted
here). The intervals there are found by inverting scipy's Mann–Whitney test over shifts of the
log durations, independently of the order-statistic formula in explorer/analysis/verdict.py.
"""

from __future__ import annotations

import itertools
import math
import random
import statistics

import pytest

from explorer.analysis.verdict import (
    POLLED_FLOOR_SECONDS,
    balanced_order,
    compare,
    mann_whitney,
    total,
    u_distribution,
)
from explorer.errors import UsageError

SMALL_B = [1.02, 0.97, 1.05, 0.99, 1.01, 1.08, 0.95]
SMALL_C = [0.93, 0.98, 0.90, 1.00, 0.94, 0.96]
TIED_B = [1.0, 1.1, 1.2, 1.2, 1.3, 1.0, 1.15, 1.25]
TIED_C = [1.2, 1.3, 1.4, 1.3, 1.5, 1.25, 1.35]
BIG_B = [1.0 + 0.1 * math.sin(i * 1.7) + 0.001 * i for i in range(60)]
BIG_C = [0.97 + 0.1 * math.cos(i * 2.3) + 0.0007 * i for i in range(60)]

AROUND_1 = [1.0 + 0.01 * d for d in (-3, 2, 0, 4, -1, 1, -4, 3, -2, 0.5)]
AROUND_HALF = [0.5 + 0.005 * d for d in (1, -2, 3, 0, -3, 2, -1, 4, -4, 0.5)]


def test_u_distribution_matches_brute_force_enumeration() -> None:
    m, n = 4, 5
    counts = [0] * (m * n + 1)
    # Every way of choosing which ranks the first sample holds; U counts pairs it loses.
    for ranks in itertools.combinations(range(m + n), m):
        u = sum(1 for r in ranks for s in range(m + n) if s not in ranks and s < r)
        counts[u] += 1
    assert u_distribution(m, n) == counts
    assert sum(u_distribution(7, 6)) == math.comb(13, 6)


def test_exact_p_value_and_interval_against_scipy() -> None:
    # scipy.stats.mannwhitneyu(SMALL_C, SMALL_B, method="exact").pvalue
    p, method = mann_whitney(SMALL_B, SMALL_C)
    assert method == "exact"
    assert p == pytest.approx(0.03496503496503496, rel=1e-12)
    v = compare(SMALL_B, SMALL_C)
    assert v.p_value == pytest.approx(0.03496503496503496, rel=1e-12)
    # Test inversion with scipy exact Mann–Whitney on log shifts (verdict_reference.py).
    assert v.ci_low == pytest.approx(0.8888888888888888, rel=1e-12)
    assert v.ci_high == pytest.approx(0.9900990099009901, rel=1e-12)
    # Hodges–Lehmann ratio: exp of the median of the 42 pairwise log ratios, which are
    # log(c/b); the 21st and 22nd smallest ratios are 0.90/0.95 and 0.96/1.02 (listed by
    # sorting the 42 ratios c/b; the median of logs is the log of their geometric mean).
    assert v.ratio == pytest.approx(math.sqrt(0.90 / 0.95 * 0.96 / 1.02), rel=1e-12)
    assert v.ci_low <= v.ratio <= v.ci_high
    assert v.word == "faster"


def test_normal_p_value_with_ties_against_scipy() -> None:
    # scipy.stats.mannwhitneyu(TIED_C, TIED_B, method="asymptotic").pvalue
    # (tie correction, use_continuity=True)
    p, method = mann_whitney(TIED_B, TIED_C)
    assert method == "normal"
    assert p == pytest.approx(0.01019787677624024, rel=1e-9)


def test_normal_interval_for_large_samples_against_scipy() -> None:
    v = compare(BIG_B, BIG_C)
    assert v.p_method == "normal"
    # scipy.stats.mannwhitneyu(BIG_C, BIG_B, method="asymptotic").pvalue
    assert v.p_value == pytest.approx(0.0035498386349135575, rel=1e-9)
    # Test inversion with scipy asymptotic Mann–Whitney on log shifts (verdict_reference.py).
    assert v.ci_low == pytest.approx(0.9394226231074713, rel=1e-12)
    assert v.ci_high == pytest.approx(0.9857517090522766, rel=1e-12)


def test_interval_excludes_one_exactly_when_p_is_below_five_percent() -> None:
    rng = random.Random(9)
    for _ in range(200):
        b = [rng.lognormvariate(0, 0.1) for _ in range(rng.randint(5, 12))]
        c = [rng.lognormvariate(rng.uniform(-0.15, 0.15), 0.1) for _ in range(rng.randint(5, 12))]
        v = compare(b, c, threshold=0.0)
        assert v.ci_low is not None and v.ci_high is not None and v.p_value is not None
        assert (v.ci_low > 1 or v.ci_high < 1) == (v.p_value < 0.05)


def test_identical_samples_are_undecided_when_the_interval_is_wider_than_the_threshold() -> None:
    wide_1 = [1.0 + 0.03 * d for d in (-3, 2, 0, 4, -1, 1, -4, 3, -2, 0.5)]
    v = compare(wide_1, list(wide_1))
    assert v.word == "undecided"
    assert v.ratio == pytest.approx(1.0)
    assert v.ci_low is not None and v.ci_high is not None
    assert v.ci_low < 0.97 < 1 < v.ci_high
    assert v.p_value == pytest.approx(1.0)
    assert v.label() == f"1.00× [{v.ci_low:.2f}–{v.ci_high:.2f}] undecided"
    # The same trials judged against a 10 % threshold fit inside it: equivalence shown.
    wide = compare(wide_1, list(wide_1), threshold=0.10)
    assert wide.ci_low is not None and wide.ci_high is not None
    assert wide.word == "same" and 0.90 <= wide.ci_low and wide.ci_high <= 1.10
    assert wide.label().endswith("same within ±10 %")
    # Tight trials around the same value are the same within the default 3 %.
    assert compare(AROUND_1, list(AROUND_1)).word == "same"


def test_clearly_separated_samples_are_faster_with_interval_excluding_one() -> None:
    v = compare(AROUND_1, AROUND_HALF)
    assert v.word == "faster"
    assert v.ci_high is not None and v.ci_high < 1
    assert v.ratio is not None and v.ci_low is not None and v.ci_low <= v.ratio <= v.ci_high
    # 10 against 10 without overlap: the most extreme ordering, 2 / C(20, 10).
    assert v.p_value == pytest.approx(2 / math.comb(20, 10))
    assert v.label() == f"0.50× [{v.ci_low:.2f}–{v.ci_high:.2f}] faster"
    assert compare(AROUND_HALF, AROUND_1).word == "slower"


def test_three_runs_are_too_few_and_show_no_ratio() -> None:
    v = compare(AROUND_1[:3], AROUND_HALF[:3])
    assert v.word == "undecided"
    assert v.label() == "undecided, too few runs (n=3)"
    assert v.ci_low is None and v.ci_high is None
    assert not v.decided and v.too_few and not v.settled
    # The smaller side decides: 10 baseline trials do not make 4 candidate trials enough.
    assert compare(AROUND_1, AROUND_HALF[:4]).label() == "undecided, too few runs (n=4)"
    assert compare([], AROUND_HALF).label() == "undecided, too few runs (n=0)"


def test_tiny_baseline_shows_absolute_difference_not_a_ratio() -> None:
    commit_immediate = [0.011, 0.012, 0.013, 0.0125, 0.0115]
    commit_deferred = [4.86, 4.85, 4.87, 4.84, 4.9]
    # A restore's COMMIT watched by polling: its resolution is ±50 ms.
    v = compare(commit_immediate, commit_deferred, floor_seconds=POLLED_FLOOR_SECONDS)
    assert v.ratio is None and v.ci_low is None
    assert v.below_floor == "baseline"
    # Hodges–Lehmann shift: the median (13th) of the 25 pairwise differences, 4.86 − 0.012.
    assert v.difference_seconds == pytest.approx(4.848)
    assert v.diff_ci_low is not None and v.diff_ci_low > 0
    assert v.word == "slower"
    assert v.label() == "+4.85 s slower (tiny baseline)"
    back = compare(commit_deferred, commit_immediate, floor_seconds=POLLED_FLOOR_SECONDS)
    assert back.below_floor == "candidate" and back.ratio is None
    assert back.label() == "−4.85 s faster (tiny candidate)"


def test_a_tiny_candidate_against_a_measurable_baseline_is_judged_on_the_baseline() -> None:
    """34 ms against 72 ms, ranges disjoint (issue 21): once `same within ±50 ms`, because
    the candidate fell under the floor and the floor was the band. The baseline is measured
    well; the band is the threshold of it, so the halving is a finding."""
    baseline = [0.070, 0.071, 0.072, 0.073, 0.074, 0.0715, 0.0725, 0.0705, 0.0735, 0.072]
    candidate = [0.033, 0.034, 0.035, 0.0345, 0.0335, 0.034, 0.0338, 0.0342, 0.0348, 0.0332]
    assert max(candidate) < min(baseline)
    polled = POLLED_FLOOR_SECONDS
    v = compare(baseline, candidate, floor_seconds=polled)
    assert v.below_floor == "candidate"
    assert v.margin_seconds == pytest.approx(0.03 * statistics.median(baseline))
    assert v.word == "faster"
    assert v.label() == "−38 ms faster (tiny candidate)"
    assert compare(candidate, baseline, floor_seconds=polled).label() == (
        "+38 ms slower (tiny baseline)"
    )
    # Both below the floor: the floor is the band, but 34 ms against 36 ms, disjoint, is
    # beyond 3 % of the baseline — not "same", only undecided at this resolution.
    both = compare([x / 2 for x in baseline], candidate, floor_seconds=polled)
    assert both.below_floor == "both" and both.margin_seconds == pytest.approx(0.05)
    assert both.label() == "−2.0 ms undecided (polled end)"
    # Timed by pgwx's own clock (resolution 1 ms), the same trials are a ratio.
    clocked = compare(baseline, candidate)
    assert clocked.below_floor is None and clocked.label().startswith("0.47× [")
    assert clocked.word == "faster"


def test_tiny_phases_are_never_same_when_the_interval_is_beyond_the_threshold() -> None:
    """Issue 33: `temporary select +5.7 ms same within ±50 ms (tiny phase)` for 14 ms against
    5 ms. Clocked, it is a ratio; polled, the band holds it but it is not "same"."""
    five = [0.0048, 0.0050, 0.0052, 0.0049, 0.0051, 0.0053]
    fourteen = [0.0138, 0.0141, 0.0139, 0.0142, 0.0140, 0.0143]
    clocked = compare(five, fourteen)
    assert clocked.ratio is not None and clocked.ratio == pytest.approx(2.8, rel=0.02)
    assert clocked.word == "slower" and clocked.short_label() == "2.78× slower"
    polled = compare(five, fourteen, floor_seconds=POLLED_FLOOR_SECONDS)
    assert polled.word == "undecided"
    assert polled.label() == "+9.0 ms undecided (polled end)"


def test_tiny_difference_between_tiny_phases_is_not_a_finding() -> None:
    v = compare(
        [0.010, 0.011, 0.012, 0.013, 0.014],
        [0.0115, 0.0105, 0.0125, 0.0135, 0.0118],
        floor_seconds=POLLED_FLOOR_SECONDS,
    )
    # Polled: the difference is inside ±50 ms, and not beyond 3 % of 12 ms either way.
    assert v.below_floor == "both"
    assert v.word == "same"
    assert v.label() == "−0.2 ms same within ±50 ms (polling resolution)"
    # The compact form keeps the band.
    assert v.short_label() == "−0.2 ms same within ±50 ms (polling resolution)"


def test_a_same_ratio_keeps_its_band_in_the_compact_form() -> None:
    v = compare(AROUND_1, list(reversed(AROUND_1)))
    assert v.word == "same" and v.short_label().endswith("same within ±3 %")


def test_consistent_two_percent_shift_is_below_the_three_percent_threshold() -> None:
    steady = [1.0 + 0.001 * d for d in (-3, 2, 0, 4, -1, 1, -4, 3, -2, 0.5)]
    shifted = [x * 1.02 for x in reversed(steady)]
    v = compare(steady, shifted, threshold=0.03)
    assert v.ci_low is not None and v.ci_low > 1  # real, but smaller than the noise threshold
    assert v.ci_high is not None and v.ci_high < 1.03
    assert v.word == "same"
    assert compare(steady, shifted, threshold=0.01).word == "slower"


@pytest.mark.parametrize(
    ("shift", "shown"), [(0.98, "0.98× [0.96–0.996]"), (1.02, "1.02× [1.004–1.04]")]
)
def test_an_interval_clear_of_1_with_a_ratio_inside_the_threshold_is_not_a_finding(
    shift: float, shown: str
) -> None:
    """Faster/slower needs the ratio beyond the threshold too, not only an interval clear of 1
    (issue 40, promise 1): 2 % is real here, but within the 3 % the profile calls noise, and
    the interval reaches past the threshold, so it is not `same` either."""
    baseline = [1.0 + 0.004 * d for d in range(-10, 11)]
    v = compare(baseline, [shift * x for x in baseline], threshold=0.03)
    assert v.ci_low is not None and v.ci_high is not None
    assert not v.ci_low <= 1 <= v.ci_high  # the interval excludes 1
    assert abs(v.ratio - 1) < 0.03 < max(abs(v.ci_low - 1), abs(v.ci_high - 1))
    assert v.label() == f"{shown} undecided"
    assert not v.decided


def test_bad_parameters_are_one_sentence_errors() -> None:
    with pytest.raises(UsageError, match="threshold"):
        compare(AROUND_1, AROUND_1, threshold=-0.1)
    with pytest.raises(UsageError, match="confidence"):
        compare(AROUND_1, AROUND_1, confidence=1.5)


def test_a_total_with_an_unknown_is_unknown() -> None:
    assert total([1.0, None, 2.0]) is None
    assert total([1.0, 2.5]) == pytest.approx(3.5)
    assert total([]) == 0.0


def test_balanced_order_alternates_direction_never_blocks() -> None:
    order = balanced_order(["A", "B", "C"], 4)
    assert [v for v, _ in order] == list("ABCCBAABCCBA")
    assert [r for _, r in order] == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3]
    names = [v for v, _ in order]
    assert all(len(set(names[i : i + 3])) > 1 for i in range(len(names) - 2))
    # Each variant's mean position is the same: a linear drift hits all of them equally.
    positions = {v: [i for i, w in enumerate(names) if w == v] for v in "ABC"}
    assert len({sum(p) for p in positions.values()}) == 1
    two = [v for v, _ in balanced_order(["A", "B"], 3)]
    assert two == list("ABBAAB")


def test_an_interval_bound_near_one_never_prints_as_one() -> None:
    """`0.84× [0.62–1.00] faster` read as a contradiction (the bound was 0.996)."""
    from explorer.analysis.verdict import Verdict, bound_text

    assert bound_text(0.996) == "0.996"
    assert bound_text(1.004) == "1.004"
    assert bound_text(0.9996) == "0.9996"
    assert bound_text(1.0) == "1.00"
    assert bound_text(0.62) == "0.62"
    assert bound_text(0.999) == "0.999"
    assert bound_text(12.34) == "12.3"
    shown = Verdict.model_construct(ratio=0.84, ci_low=0.62, ci_high=0.996, word="faster")
    assert "[0.62–0.996]" in shown.label()
