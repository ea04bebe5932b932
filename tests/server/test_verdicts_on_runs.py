"""Verdicts wired through the runner on real servers (the synthetic checks are in
tests/unit/test_verdicts_run.py)."""

from __future__ import annotations

import json
import re

from explorer.analysis.judge import judge
from explorer.analysis.report import render, summarize
from explorer.models import (
    Knobs,
    Notice,
    Profile,
    TableKind,
    TrialStarted,
    Variant,
)
from explorer.server.connect import Target
from tests.support.runs import RunProfile

UNLOGGED = Variant(name="unlogged", knobs=Knobs(table_kind=TableKind.UNLOGGED))


def table_kind(variants: list[Variant], rows: int, **fields: object) -> Profile:
    return Profile(
        name="v",
        title="verdict test",
        workload="table-kind",
        params={"rows": rows},
        settle_seconds=0,
        variants=variants,
        **fields,  # type: ignore[arg-type]
    )


async def test_unlogged_is_faster_with_an_interval_excluding_1(
    pg18: Target, run_profile: RunProfile
) -> None:
    # 300k rows: the logged UPDATE writes ~40 MB of WAL, UNLOGGED none; 0.45–0.65× here.
    # Sixteen measured rounds: the table's 7 comparisons are Holm-corrected together, so the
    # interval is at 1 − 0.05/7 for the first; with 12 a machine loaded by other jobs (0.85×
    # measured) left it touching 1.
    profile = table_kind([Variant(name="logged"), UNLOGGED], 300_000, repeats=16)
    record, events = await run_profile(pg18, profile, warmup=1)
    assert record.status == "finished"
    # A balanced order, the warm-up round first: A B, B A, A B, …
    order = [e.variant for e in events if isinstance(e, TrialStarted)]
    assert order[:6] == ["logged", "unlogged", "unlogged", "logged", "logged", "unlogged"]
    warm = [t for t in record.trials if t.warmup]
    assert sorted(t.variant for t in warm) == ["logged", "unlogged"]
    assert all(t.repeat == 1 for t in warm) and len(record.trials) == 34
    rows = {(r.variant, r.phase): r for r in summarize(record)}
    for phase in ("update", "total"):
        v = rows[("unlogged", phase)].verdict
        assert v is not None and v.word == "faster", v
        assert v.ci_high is not None and v.ci_high < 1
        assert v.n_baseline == v.n_candidate == 16  # the warm-up left out
    assert rows[("logged", "total")].verdict_label().startswith("baseline")
    md = render(record, "md")
    assert "| unlogged | update | 16 |" in md and "faster" in md
    assert "1 warm-up trial per variant ran first" in md
    data = json.loads(render(record, "json"))
    row = next(r for r in data["rows"] if r["variant"] == "unlogged" and r["phase"] == "update")
    verdict = row["verdict"]
    assert verdict["word"] == "faster" and verdict["ci_high"] < 1 < 1 / verdict["ci_low"]
    assert 0 < verdict["p_value"] < 0.05 and verdict["p_method"] in ("exact", "normal", "t")
    assert verdict["p_value"] <= verdict["p_adjusted"] < 0.05
    assert data["correction"]["method"] == "holm" and data["correction"]["comparisons"] == 7
    assert verdict["n_baseline"] == 16 and verdict["n_candidate"] == 16
    assert data["warmups"] == {"logged": 1, "unlogged": 1}
    csv_head = render(record, "csv").splitlines()[0].split(",")
    assert {"verdict", "word", "ci_low", "ci_high", "p_value", "p_adjusted", "n_baseline"} <= set(
        csv_head
    )


async def test_identical_variants_show_no_detectable_difference(
    pg18: Target, run_profile: RunProfile
) -> None:
    # Same work twice, six measured rounds (an even number: the order is exactly balanced).
    # The total and the biggest phase are asserted: over all seven phases a 5 % false-positive
    # rate per interval is what an honest 95 % interval does, not a defect. A 20 % threshold
    # keeps a stall of the loaded machine from turning noise into a word.
    a, b = Variant(name="a"), Variant(name="b")
    profile = table_kind([a, b], 100_000, repeats=6, threshold=0.2)
    record, _ = await run_profile(pg18, profile, warmup=1)
    verdicts = judge(record).verdicts
    assert {p for _, p in verdicts} >= {"insert", "update", "total"}
    for phase in ("update", "total"):
        v = verdicts[("b", phase)]
        assert v.word in ("same", "undecided") and not v.decided, (phase, v.label())
        assert v.n_baseline == v.n_candidate == 6


async def test_auto_repeats_stop_once_nothing_is_left_open(
    pg18: Target, run_profile: RunProfile
) -> None:
    # 300 rows: every phase takes a few ms. A phase the trials can settle is settled; one they
    # cannot (a few ms varies far more than ±3 % on a shared machine, or below the clock's
    # 1 ms it is judged in seconds) is closed by the futility rule with its reason; once
    # nothing is open the run ends at that look, before max_repeats. Looks at 5, 10, 15, 20.
    profile = table_kind(
        [Variant(name="logged"), UNLOGGED], 300, repeats="auto", min_repeats=5, max_repeats=20
    )
    record, events = await run_profile(pg18, profile)
    last = max(t.repeat for t in record.trials)
    notes = [e.message for e in events if isinstance(e, Notice)]
    judged = judge(record)
    open_ = [(k, v.label()) for k, v in judged.verdicts.items() if not (v.settled or v.futile)]
    # Before max_repeats only when nothing was open (on a loaded machine a real difference in
    # the total may stay open to the end: then the end says so).
    # Nothing open at the end: settled, or closed by the futility rule (also at the 20th look
    # itself, where CI once ended "nothing left that more rounds could decide" after 20 rounds).
    ended = (
        f"every verdict settled after {last} rounds",
        f"stopped after {last} rounds: nothing left that more rounds could decide",
    )
    if last < 20:
        assert not open_, (last, open_, notes)
        assert any(n.startswith(ended) for n in notes), notes
    elif open_:
        assert any("max_repeats (20) reached" in n for n in notes), notes
    else:  # nothing open at the last look itself
        assert any(n.startswith(ended) for n in notes), notes
    for v in judged.verdicts.values():
        if v.futile:
            assert v.word == "undecided" and "needs about" in v.futile
    # It went on only while something was open: one look earlier, something was.
    before = [t for t in record.trials if t.repeat <= last - 5]
    earlier = judge(record.model_copy(update={"trials": before}))
    assert any(not v.futile for k, v in earlier.verdicts.items() if k in earlier.undecided)
    plans = [e.plan for e in events if isinstance(e, TrialStarted)]
    assert plans[0] == "round 1 of ≤ 20"
    assert plans[-1] is not None and plans[-1].startswith(f"round {last} of ≤ 20 · ~")
    # known after the first look that can decide something (the table's size drops the
    # hopeless ones): "… · 3 comparisons open", or "1 comparison open"; a run that ended at
    # that first look knew no count before its last round.
    first_look = min(judged.planned, default=20)
    if last > first_look:
        assert re.search(r" \d+ comparisons? open$", plans[-1]), plans[-1]
    else:
        assert "open" not in plans[-1], (judged.planned, plans[-1])


async def test_auto_repeats_stop_at_the_budget_and_at_max_and_say_what_is_undecided(
    pg18: Target, run_profile: RunProfile
) -> None:
    variants = [Variant(name="logged"), UNLOGGED]
    # Two rounds are too few for any verdict; a 1 ms budget is spent before the third.
    profile = table_kind(variants, 2000, repeats="auto", min_repeats=2, max_repeats=20)
    record, events = await run_profile(pg18, profile, budget=0.001)
    assert {t.repeat for t in record.trials} == {1, 2}
    warned = [e.message for e in events if isinstance(e, Notice) and e.level == "warning"]
    assert any(
        "time budget" in m and "too few trials for any verdict for unlogged (n=2)" in m
        for m in warned
    ), warned
    assert "Undecided: " in render(record, "md")
    assert record.profile.budget == 0.001  # the stored profile carries the override
    # Without a budget in the way, max_repeats ends it.
    profile = table_kind(variants, 2000, repeats="auto", min_repeats=2, max_repeats=3)
    record, events = await run_profile(pg18, profile)
    assert {t.repeat for t in record.trials} == {1, 2, 3}
    warned = [e.message for e in events if isinstance(e, Notice) and e.level == "warning"]
    assert any("max_repeats (3) reached" in m for m in warned), warned
