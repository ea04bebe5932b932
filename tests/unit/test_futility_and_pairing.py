"""Futility closes what cannot be decided (with its reason); the report says paired or not."""

from __future__ import annotations

import random

from explorer.analysis import futility
from explorer.analysis.calibration import Scenario, play, synthetic_record, synthetic_trial
from explorer.analysis.judge import judge, undecided_text
from explorer.analysis.paired import CellSamples
from explorer.analysis.report import render


def test_a_comparison_that_cannot_reach_a_word_is_closed_with_its_reason() -> None:
    # Identical variants at 10 % noise: "same within ±3 %" needs well over a hundred rounds.
    record = play(Scenario(variants=2, phases=1, noise=0.10), random.Random(5))
    last = max(t.repeat for t in record.trials)
    v = judge(record).verdicts[("v1", "p1")]
    assert v.word == "undecided" and v.futile is not None
    assert "±3 % needs about" in v.futile and "this run stops at 30" in v.futile
    assert last < 30  # the run ended at the look that closed it
    text = undecided_text(judge(record))
    assert text is not None and "closed early" in text and v.futile in text
    # Without the rule the same seed runs to max_repeats.
    futility.enabled = False
    try:
        assert max(t.repeat for t in play(Scenario(), random.Random(5)).trials) == 30
    finally:
        futility.enabled = True


def test_a_real_effect_is_not_closed() -> None:
    record = play(Scenario(variants=2, phases=1, noise=0.10, effect=0.7), random.Random(2))
    v = judge(record).verdicts[("v1", "p1")]
    assert v.word == "faster" and v.futile is None


def _rounds(base: list[float], cand: list[float], skip: int | None = None) -> list:
    out = []
    for i, (b, c) in enumerate(zip(base, cand, strict=True)):
        out.append(synthetic_trial("v0", i + 1, {"p1": b}))
        if i != skip:
            out.append(synthetic_trial("v1", i + 1, {"p1": c}))
    return out


def test_paired_when_rounds_are_complete_unpaired_and_said_when_not() -> None:
    rng = random.Random(7)
    base = [rng.lognormvariate(0, 0.1) for _ in range(12)]
    cand = [b * 0.8 * rng.lognormvariate(0, 0.02) for b in base]
    profile = Scenario(repeats=12).profile()
    whole = synthetic_record(profile, _rounds(base, cand))
    v = judge(whole).verdicts[("v1", "p1")]
    assert v.pairing == "paired" and v.n_candidate == 12
    md = render(whole)
    assert "Paired: every comparison uses the baseline's and the variant's trial" in md
    # Round 4's candidate trial failed: the rounds are incomplete, judged unpaired, and said.
    holed = synthetic_record(profile, _rounds(base, cand, skip=3))
    v = judge(holed).verdicts[("v1", "p1")]
    assert v.pairing == "unpaired" and (v.n_baseline, v.n_candidate) == (12, 11)
    assert "Unpaired (Mann–Whitney on all trials) for v1 p1: a round lacked" in render(holed)


def test_a_phase_judged_in_seconds_is_closed_against_its_band() -> None:
    # ~0.5 ms phases varying by ±0.2 ms a trial, judged against ±0.05 ms: hopeless by 30.
    d = [2, -2, 3, -3, 1, -1, 2.5, -2.5, 1.5, -1.5]  # tenths of a ms, centred on 0
    b = [0.0005 + 0.00001 * i for i in range(10)]
    c = [x + 0.0001 * e for x, e in zip(b, d, strict=True)]
    cell = CellSamples(b, c, list(range(1, 11)), list(range(1, 11)))
    why = futility.futile(
        cell, rounds=10, max_rounds=30, level=0.01, threshold=0.03, seconds_band=0.00005
    )
    assert why is not None and "ms a round), ±0.05 ms needs about" in why
    # The same trials against a band of ±2 ms: "same" is in reach, nothing is closed.
    wide = futility.futile(
        cell, rounds=10, max_rounds=30, level=0.01, threshold=0.03, seconds_band=0.002
    )
    assert wide is None
