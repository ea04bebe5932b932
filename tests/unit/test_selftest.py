"""`pgwx selftest`'s smallest threshold counts the table's comparisons and the planned looks
(issue 40, promise 10): it is worked out here by hand, independently of the module."""

from __future__ import annotations

import math
from statistics import NormalDist

from explorer.analysis.calibration import synthetic_record, synthetic_trial
from explorer.analysis.selftest import self_test, self_test_profile, to_text
from explorer.models import Profile, Variant

ORIGINAL = Profile(
    name="four",
    title="four variants",
    workload="synthetic",
    repeats="auto",
    min_repeats=15,
    max_repeats=30,
    warmup=0,
    variants=[Variant(name=name) for name in ("base", "a", "b", "c")],
)
"""Three candidates on one phase: 3 comparisons; auto repeats looking after 15 and 30 rounds."""


def test_the_smallest_threshold_counts_comparisons_and_looks() -> None:
    twin = self_test_profile(ORIGINAL)
    spread = 0.25  # each variant's log durations are ±0.25 around its own mean
    trials = [
        synthetic_trial(variant.name, r, {"load": math.exp(spread if r % 2 else -spread)})
        for r in range(1, 11)
        for variant in twin.variants
    ]
    found = self_test(synthetic_record(twin, trials), ORIGINAL, runs=2)
    # The pooled spread: 20 squares of 0.25² over 2 × (10 − 1) degrees of freedom.
    noise = spread * math.sqrt(20 / 18)
    # α = 5 % split over 3 comparisons (Holm's first step) and 2 looks, 30 trials a side:
    # the Hodges–Lehmann half-width z · σ · √(2/n) · √(π/3) as a ratio.
    z = NormalDist().inv_cdf(1 - 0.05 / 3 / 2 / 2)
    half = z * noise * math.sqrt(2 / 30) * math.sqrt(math.pi / 3)
    expected = math.ceil(math.expm1(half) * 100)
    assert expected == 21  # one comparison and one look would say 15 %; either alone, 17 or 19
    text = to_text(found, ORIGINAL)
    assert "(3 comparisons)" in text
    assert f"Smallest threshold these trials can decide at: {expected}% (the profile says 3%)" in (
        text
    )
