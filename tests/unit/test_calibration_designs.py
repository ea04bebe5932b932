"""The designs of `verdict_calibration.py --limits-only` are played on the same trials.

The limits table sets auto and fixed designs side by side, and its reading ("the fixed
15-round design is the ceiling for found within 15 rounds") holds only if each design of a row
judges the very trials the others judged. `measure_fixed` draws them as `measure` does.
"""

from __future__ import annotations

from explorer.analysis.calibration import Scenario
from explorer.analysis.calibration_paired import analysis, measure, measure_fixed


def test_fixed_design_judges_the_trials_the_auto_run_drew() -> None:
    # An effect found in some runs and not others, so that equal counts mean equal trials.
    s = Scenario(variants=3, phases=1, noise=0.10, effect=0.93)
    with analysis(True, True):
        auto = measure(s, 40, seed=5, with_fixed=True)
        fixed = measure_fixed(s, 30, 40, seed=5)
    assert 0 < auto.fixed_found < 40
    assert fixed.found == auto.fixed_found
    assert fixed.rounds == [30] * 40


def test_fixed_15_counts_its_finds_as_within_15_rounds_and_uses_15() -> None:
    s = Scenario(variants=3, phases=1, noise=0.10, effect=0.85)
    with analysis(True, True):
        c = measure_fixed(s, 15, 20, seed=7)
    assert c.rounds == [15] * 20
    assert c.found_by_15 == c.found
    assert c.found > 0
