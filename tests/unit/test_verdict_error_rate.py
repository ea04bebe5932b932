"""Verdicts that hold their error rate: Holm across the table, planned looks, the four words.

Reference values written into these tests came from outside pgwx's code:

- Holm-adjusted p-values: statsmodels 0.15.0,
  `statsmodels.stats.multitest.multipletests(p, alpha=0.05, method="holm")`.
- The interval at a look's level: scipy 1.17.1, by *test inversion* — the log shifts δ for
  which `scipy.stats.mannwhitneyu(log C − δ, log B, method="exact")` does not reject at
  α = 0.05/6, the script in tests/fixtures/verdict_reference.py with that α (scipy and
  statsmodels are not pgwx dependencies; the numbers are pasted).
- The planned looks and the α per look: by hand from the rule in
  `explorer.analysis.sequential` (a look every min_repeats rounds, α split equally).
"""

from __future__ import annotations

import json
import math
import random

import pytest

from explorer.analysis.calibration import (
    Scenario,
    calibrate,
    play,
    synthetic_record,
    synthetic_trial,
)
from explorer.analysis.family import holm_adjusted, holm_levels, judge_family
from explorer.analysis.judge import judge
from explorer.analysis.report import summarize, to_markdown
from explorer.analysis.sequential import look_alpha, looks, next_look, planned_looks, useful_looks
from explorer.analysis.verdict import WORDS, compare
from explorer.models import RunRecord

B10 = [1.0, 1.091, 1.039, 1.13, 1.078, 1.026, 1.117, 1.065, 1.013, 1.104]
C10 = [0.93, 0.9851, 1.0402, 0.9523, 1.0074, 1.0625, 0.9746, 1.0297, 0.9418, 0.9969]


def test_holm_adjusted_p_values_match_statsmodels() -> None:
    p = [0.01, 0.04, 0.03, 0.005, 0.20, 0.0001]
    assert holm_adjusted(p) == pytest.approx([0.04, 0.09, 0.09, 0.025, 0.2, 0.0006])
    # Ties and a step that stops the rejections early.
    assert holm_adjusted([0.012, 0.012, 0.5, 0.026]) == pytest.approx([0.048, 0.048, 0.5, 0.052])


def test_holm_levels_reject_exactly_what_statsmodels_rejects() -> None:
    p = [0.01, 0.04, 0.03, 0.005, 0.20, 0.0001]
    levels = holm_levels(p, 0.05)
    # statsmodels: reject = [True, False, False, True, False, True]
    assert [x < level for x, level in zip(p, levels, strict=True)] == [
        True,
        False,
        False,
        True,
        False,
        True,
    ]
    # By hand: steps α/6, α/5, α/4 reject; the rest are tested at α/(6 − 3).
    assert levels == pytest.approx([0.05 / 4, 0.05 / 3, 0.05 / 3, 0.05 / 5, 0.05 / 3, 0.05 / 6])
    # Cells decided at an earlier look still count in the family: α/N starts at N = 10.
    assert holm_levels([0.001], 0.05, family_size=10) == pytest.approx([0.005])


def test_in_a_family_the_interval_excludes_one_exactly_when_the_adjusted_p_is_below_5_percent() -> (
    None
):
    rng = random.Random(18)
    for _ in range(40):
        pairs = {}
        for cell in range(rng.randint(2, 8)):
            b = [rng.lognormvariate(0, 0.1) for _ in range(rng.randint(5, 12))]
            c = [
                rng.lognormvariate(rng.uniform(-0.25, 0.25), 0.1) for _ in range(rng.randint(5, 12))
            ]
            pairs[cell] = (b, c)
        for v in judge_family(pairs, threshold=0.0).values():
            assert v.p_adjusted is not None
            if v.ci_low is None or v.ci_high is None:
                # Too few trials for an interval at this level: nothing can be rejected.
                assert v.p_adjusted >= 0.05 and v.word == "undecided"
                continue
            assert (v.ci_low > 1 or v.ci_high < 1) == (v.p_adjusted < 0.05), v


def test_looks_and_the_alpha_each_may_spend() -> None:
    assert looks(5, 30) == [5, 10, 15, 20, 25, 30]
    assert looks(5, 8) == [5, 8]
    assert looks(4, 10) == [4, 8, 10]
    assert planned_looks(12, 5, 30) == [12]
    assert look_alpha(6) == pytest.approx(0.05 / 6)
    assert look_alpha(1) == 0.05
    assert next_look(10, [5, 10, 15]) == 15 and next_look(15, [5, 10, 15]) is None
    # 2 / C(10, 5) = 2/252 = 0.0079: five a side can reach α/6 = 0.0083 in a lone comparison,
    # not α/(6·24) in a 24-cell table; without look 5, α/(5·24) = 0.00042 and 2 / C(20, 10)
    # = 1.1e-5 can, so the other five looks share α.
    assert useful_looks(looks(5, 30), 1) == [5, 10, 15, 20, 25, 30]
    assert useful_looks(looks(5, 30), 24) == [10, 15, 20, 25, 30]


def _record_of(base: list[float], cand: list[float], **profile: object) -> RunRecord:
    """Round i: the baseline's trial of base[i] seconds, the candidate's of cand[i]."""
    trials = [
        synthetic_trial(name, i + 1, {"p1": secs})
        for i, pair in enumerate(zip(base, cand, strict=True))
        for name, secs in zip(("v0", "v1"), pair, strict=True)
    ]
    return synthetic_record(Scenario(**profile).profile(), trials)  # type: ignore[arg-type]


def test_an_auto_run_is_judged_at_its_looks_at_the_looks_level_against_scipy() -> None:
    # Unpaired (Mann–Whitney on the pooled trials, as for incomplete rounds): at look 10
    # scipy's inverted interval at α/6 is (0.8728689275893676, 0.991049085659288).
    unpaired = judge_family({"c": (B10, C10)}, alpha=0.05 / 6, threshold=0.03)["c"]
    assert unpaired.ci_low == pytest.approx(0.8728689275893676, rel=1e-12)
    assert unpaired.ci_high == pytest.approx(0.991049085659288, rel=1e-12)
    assert unpaired.word == "faster"
    # scipy exact p at n = 10: 0.002879473467708762.
    assert unpaired.p_value == pytest.approx(0.002879473467708762, rel=1e-9)
    # The run itself has complete rounds: judged on the ten within-round pairs by the blocked
    # t test, which with two variants is the paired t test on the log ratios — scipy 1.16.3
    # `ttest_rel(log C10, log B10)`: p 0.004814795811657811 (at look 5, on five pairs,
    # 0.0416: undecided at α/6), interval at 1 − 0.05/6 exp → (0.8713815487356706,
    # 0.9932186034431133) around 0.9303076721715993. At α/6 = 0.0083 that is faster at 10.
    # (The exact signed rank gave 14/1024 = 0.0137 here: undecided.)
    judged = judge(_record_of(B10, C10, repeats="auto"))
    assert judged.looks == [5, 10]
    v = judged.verdicts[("v1", "p1")]
    assert v.pairing == "paired" and v.p_method == "t" and v.look == 10 and v.n_candidate == 10
    assert v.confidence == pytest.approx(1 - 0.05 / 6)
    assert v.p_value == pytest.approx(0.004814795811657811, rel=1e-9)
    assert v.p_adjusted == pytest.approx(0.004814795811657811 * 6, rel=1e-9)
    assert v.ratio == pytest.approx(0.9303076721715993, rel=1e-12)
    assert v.ci_low == pytest.approx(0.8713815487356706, rel=1e-9)
    assert v.ci_high == pytest.approx(0.9932186034431133, rel=1e-9)
    assert v.word == "faster"
    # The same ten rounds with fixed repeats are one look at the full 5 %: faster.
    fixed = judge(_record_of(B10, C10, repeats=10)).verdicts[("v1", "p1")]
    assert fixed.confidence == pytest.approx(0.95) and fixed.look is None
    assert fixed.ci_high is not None and fixed.ci_high < 1 and fixed.word == "faster"


def test_a_settled_comparison_keeps_the_word_of_its_look() -> None:
    # Ten rounds where the first five already settle the question: the verdict is look 5's,
    # on five trials a side, whatever the five after it say.
    base = [1.0, 1.01, 0.99, 1.02, 0.98] + [1.0] * 5
    half = [0.5, 0.51, 0.49, 0.52, 0.48] + [1.0] * 5
    v = judge(_record_of(base, half, repeats="auto")).verdicts[("v1", "p1")]
    assert v.look == 5 and v.n_candidate == 5 and v.word == "faster"


@pytest.mark.parametrize("shape", ["lognormal", "skewed", "bimodal", "tied", "tiny"])
def test_the_point_lies_inside_its_interval(shape: str) -> None:
    rng = random.Random(hash(shape) % 1000)

    def draw(scale: float) -> float:
        if shape == "lognormal":
            return scale * rng.lognormvariate(0, 0.2)
        if shape == "skewed":
            return scale * rng.lognormvariate(0, 0.05) * (1.5 if rng.random() < 0.2 else 1.0)
        if shape == "bimodal":
            return scale * (1.0 if rng.random() < 0.5 else 2.0) * rng.lognormvariate(0, 0.02)
        if shape == "tied":
            return scale * rng.choice([1.0, 1.1, 1.2])
        return scale * rng.choice([0.01, 0.012, 0.03, 0.2])

    for _ in range(800):
        m, n = rng.randint(5, 30), rng.randint(5, 30)
        effect = rng.uniform(0.5, 1.5)
        b = [draw(1.0) for _ in range(m)]
        c = [draw(effect) for _ in range(n)]
        v = compare(b, c, confidence=rng.choice([0.95, 0.99, 0.998]))
        assert v.word in WORDS
        if v.ratio is not None and v.ci_low is not None and v.ci_high is not None:
            assert v.ci_low <= v.ratio <= v.ci_high, (b, c)
        if v.difference_seconds is not None and v.diff_ci_low is not None:
            assert v.diff_ci_high is not None
            assert v.diff_ci_low <= v.difference_seconds <= v.diff_ci_high, (b, c)


def test_seeded_a_a_runs_rarely_find_a_difference() -> None:
    # No true difference anywhere; auto repeats with looks at 5, 10, …, 30. The benchmark
    # (benchmarks/verdict_calibration.py) runs this at scale; a seeded slice of it here.
    # 1000 runs: the estimate's standard error is about 0.5 % (200 ran 11 false here, 5.5 %,
    # around a rate of 2.7 % measured over 3000).
    one = calibrate(Scenario(variants=2, phases=1, noise=0.10), runs=1000, seed=5)
    assert one.false_share <= 0.05
    table = calibrate(Scenario(variants=4, phases=2, noise=0.10, skewed=True), runs=25, seed=5)
    assert table.false_share <= 0.12  # 25 runs: one false table would be 4 %
    # …and a true 0.55× is found.
    found = calibrate(Scenario(variants=2, phases=1, noise=0.10, effect=0.55), runs=30, seed=5)
    assert found.power == 1.0 and found.median_rounds == 5


def test_a_settled_variant_stops_getting_rounds_while_the_open_ones_go_on() -> None:
    record = play(Scenario(variants=3, phases=1, noise=0.10, effect=0.5), random.Random(3))
    counts = {v: sum(t.variant == v for t in record.trials) for v in ("v0", "v1", "v2")}
    # Two comparisons, α/5 per useful look (5 a side cannot reach α/12, so look 5 is not
    # paid for): v1 (0.5×) is settled at round 10; v2 (no difference at 10 % noise, 3 %
    # threshold) cannot be settled: it runs with the baseline to the end, or until the
    # futility rule closes it (`explorer.analysis.futility`) and the run ends there.
    assert counts["v1"] == 10
    assert 10 < counts["v0"] == counts["v2"] <= 30
    # The rounds after v1 left still alternate direction between the two that remain.
    later = [t.variant for t in record.trials if t.repeat > 10]
    assert later[:6] == ["v0", "v2", "v2", "v0", "v0", "v2"]
    judged = judge(record)
    assert judged.verdicts[("v1", "p1")].word == "faster"
    assert judged.undecided == [("v2", "p1")]
    assert (judged.verdicts[("v2", "p1")].futile is not None) == (counts["v2"] < 30)
    assert math.isclose(judged.verdicts[("v2", "p1")].confidence, 1 - 0.05 / 5 / 2)


def test_the_markdown_table_shows_the_raw_and_the_adjusted_p_value() -> None:
    from explorer.analysis.report import render

    record = _record_of(B10, C10, repeats="auto")
    md = render(record)
    assert "| verdict | p (adj.) |" in md
    # The paired t p (above, 0.0048) and six looks' worth of correction: 0.0048 (0.029).
    row = next(line for line in md.splitlines() if line.startswith("| v1 | p1 |"))
    assert "| 0.0048 (0.029) |" in row and "faster" in row
    assert "judged at rounds 5, 10" in md
    data = json.loads(render(record, "json"))
    cand = next(r for r in data["rows"] if r["variant"] == "v1")["verdict"]
    assert (cand["look"], cand["word"]) == (10, "faster")
    assert cand["p_adjusted"] == pytest.approx(cand["p_value"] * 6)
    assert data["correction"] == {
        "method": "holm",
        "comparisons": 1,
        "looks": [5, 10],
        "alpha": 0.05,
    }


def test_a_verdict_settled_early_says_so_beside_medians_over_every_round() -> None:
    # The first five rounds settle it; the table's n and medians count all ten, so the row
    # says which rounds the verdict rests on, and the footnotes say how to read it.
    base = [1.0, 1.01, 0.99, 1.02, 0.98] + [1.0] * 5
    half = [0.5, 0.51, 0.49, 0.52, 0.48] + [1.0] * 5
    record = _record_of(base, half, repeats="auto")
    row = next(r for r in summarize(record) if r.variant == "v1" and r.phase == "p1")
    assert row.n == 10 and row.note.startswith("settled at round 5/10")
    assert "settled at round 5/10" in to_markdown(record)
    assert "rests on those rounds" in to_markdown(record)
    # Settled at the last look: nothing to say.
    late = _record_of(B10, C10, repeats="auto")
    row = next(r for r in summarize(late) if r.variant == "v1" and r.phase == "p1")
    assert "settled at round" not in row.note
    assert "rests on those rounds" not in to_markdown(late)
