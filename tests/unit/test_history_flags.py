"""`pgwx history`'s ⚑: about 5 % false flags per comparison where nothing changed, measured
through its own code (`explorer.analysis.history_calibration`), and a real shift found."""

from __future__ import annotations

import math

from explorer.analysis.history_calibration import flag_rate
from explorer.analysis.history_flags import change, estimate
from explorer.analysis.verdict import Verdict


def _verdict(ratio: float, low: float, high: float, confidence: float = 0.95) -> Verdict:
    return Verdict(
        n_baseline=10,
        n_candidate=10,
        median_baseline=1.0,
        median_candidate=ratio,
        ratio=ratio,
        ci_low=low,
        ci_high=high,
        confidence=confidence,
        word="faster",
    )


def test_no_change_is_flagged_at_most_5_percent_of_the_time() -> None:
    rate = flag_rate(400, noise=0.10, repeats=10)
    assert rate.flagged <= 0.05, rate
    # the rule it replaces, on the same runs, flagged about 17 %: this test would catch it
    assert rate.left_interval > 0.10, rate


def test_a_real_15_percent_shift_is_found_by_most_runs_of_20_trials() -> None:
    rate = flag_rate(200, shift=1.15, noise=0.10, repeats=20)
    assert rate.flagged >= 0.7, rate


def test_the_standard_error_is_read_back_from_the_interval_and_its_confidence() -> None:
    v = _verdict(0.5, 0.5 * math.exp(-1.96 * 0.1), 0.5 * math.exp(1.96 * 0.1))
    e = estimate(v)
    assert e is not None and e.log
    assert math.isclose(e.point, math.log(0.5)) and math.isclose(e.se, 0.1, rel_tol=1e-3)
    # the same interval stated at 99 % means a smaller standard error
    wider = estimate(v.model_copy(update={"confidence": 0.99}))
    assert wider is not None and wider.se < e.se


def test_two_runs_one_interval_apart_are_flagged_and_within_noise_are_not() -> None:
    se = 0.05
    before = _verdict(0.5, 0.5 * math.exp(-1.96 * se), 0.5 * math.exp(1.96 * se))
    # ln ratio moved by 3·se·√2: z = 3
    moved = 0.5 * math.exp(3 * se * math.sqrt(2))
    now = _verdict(moved, moved * math.exp(-1.96 * se), moved * math.exp(1.96 * se))
    found = change(before, now)
    assert found is not None and found.flagged and math.isclose(found.z, 3, rel_tol=1e-3)
    # left the interval (1.5·√2·se ≈ 2.1 se > 1.96 se), yet within both runs' noise: not flagged
    near = 0.5 * math.exp(1.5 * se * math.sqrt(2))
    close = change(before, _verdict(near, near * math.exp(-1.96 * se), near * math.exp(1.96 * se)))
    assert near > before.ci_high  # type: ignore[operator]
    assert close is not None and not close.flagged


def test_no_interval_no_test() -> None:
    bare = Verdict(
        n_baseline=3,
        n_candidate=3,
        median_baseline=1,
        median_candidate=1,
        word="undecided",
        too_few=True,
    )
    assert change(bare, _verdict(0.5, 0.4, 0.6)) is None


def test_history_says_where_otava_reads_the_same_series() -> None:
    from explorer.analysis import history
    from tests.support.stored import history_runs as runs

    text = history.to_markdown("quick-demo", history.history(list(runs(2.0, 1.0))))
    assert "--config-file otava.yaml --branch quick-demo/unlogged/load" in text
