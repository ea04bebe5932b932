"""Verdicts wired through the runner, the report, the exports and `pgwx compare`.

Real servers where SQL runs; the drift, export and cross-run checks use synthetic trials,
whose numbers are chosen here so the expected verdict follows from them by hand.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from explorer import cli
from explorer.analysis.crossrun import compare_runs
from explorer.analysis.judge import judge
from explorer.analysis.report import render, summarize
from explorer.lab.profiles.catalog import ProfileError, load_profile
from explorer.lab.store.results import ResultStore
from explorer.models import (
    PhaseResult,
    Profile,
    RunRecord,
    ServerInfo,
    TrialResult,
    Variant,
)
from tests.support.runs import fake_caps

# --------------------------------------------------------------------------- real server


# --------------------------------------------------------------------------- synthetic runs

CAPS = fake_caps(180006)


def synthetic(run_id: str, seconds: dict[str, list[float]], **profile: object) -> RunRecord:
    """A run whose variant v's trial i has one phase 'load' of seconds[v][i], rounds A B, B A…"""
    names = list(seconds)
    record = RunRecord(
        id=run_id,
        profile=Profile(
            name="syn",
            title="synthetic",
            workload="table-kind",
            variants=[Variant(name=n) for n in names],
            **profile,  # type: ignore[arg-type]
        ),
        server=ServerInfo(dsn_masked="test", bundled=True, capabilities=CAPS),
        started_at=dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
        status="finished",
    )
    rounds = len(seconds[names[0]])
    for r in range(rounds):
        for name in names if r % 2 == 0 else reversed(names):
            record.trials.append(
                TrialResult(
                    run_id=run_id,
                    variant=name,
                    repeat=r + 1,
                    status="ok",
                    started_at=record.started_at,
                    phases=[PhaseResult(name="load", seconds=seconds[name][r])],
                )
            )
    return record


# No ties, so the p-value is the exact one.
FLAT = [1.00, 1.02, 0.98, 1.01, 0.99, 1.03, 0.97, 1.005, 1.015]
HALF = [0.50, 0.51, 0.49, 0.52, 0.48, 0.505, 0.515, 0.495, 0.485]


def test_a_drifting_baseline_is_flagged_in_the_table() -> None:
    # Both variants creep up ~50 % over nine rounds: the trend test rejects, far beyond 3 %.
    rising = [1.0, 0.98, 1.02, 1.2, 1.25, 1.22, 1.5, 1.48, 1.52]
    drifting = synthetic("r-drift", {"base": rising, "cand": [x / 2 for x in rising]})
    base_row = next(r for r in summarize(drifting) if r.variant == "base")
    assert base_row.drift and base_row.verdict_label() == "baseline (drifted)"
    text = render(drifting)
    assert "⚠ the machine drifted: the trials slowed 69 % [56–86] from the first to" in text
    assert "Mann–Kendall trend test of 18 trials in run order" in text
    assert "widens the intervals" in text
    steady = synthetic("r-flat", {"base": FLAT, "cand": HALF})
    assert not next(r for r in summarize(steady) if r.variant == "base").drift
    assert "drifted" not in render(steady)


def test_warm_up_trials_are_kept_but_not_counted() -> None:
    record = synthetic("r-warm", {"base": [9.0, *FLAT], "cand": [9.0, *HALF]})
    for t in record.trials:
        t.warmup = t.repeat == 1
    rows = {r.variant: r for r in summarize(record)}
    assert rows["base"].n == 9 and rows["base"].max == max(FLAT)  # the 9 s warm-up is out
    assert rows["cand"].verdict is not None and rows["cand"].verdict.n_candidate == 9
    assert json.loads(render(record, "json"))["warmups"] == {"base": 1, "cand": 1}


def test_json_export_carries_interval_p_value_word_and_counts() -> None:
    record = synthetic("r-json", {"base": FLAT, "cand": HALF})
    data = json.loads(render(record, "json"))
    cand = next(r for r in data["rows"] if r["variant"] == "cand")
    v = cand["verdict"]
    # 9 complete rounds, the candidate about half in every one: the paired t test on the log
    # ratios (scipy 1.16.3 `ttest_rel`: p 3.1297686687616897e-12), and it says it was paired.
    assert v["p_value"] == pytest.approx(3.1297686687616897e-12, rel=1e-6)
    assert v["pairing"] == "paired" and v["p_method"] == "t"
    assert v["word"] == "faster" and v["label"].endswith("faster")
    assert v["ci_low"] < v["ratio"] < v["ci_high"] < 1
    assert (v["n_baseline"], v["n_candidate"], v["threshold"]) == (9, 9, 0.03)
    assert data["threshold"] == 0.03 and data["undecided"] == []
    # --threshold on a stored run: 0.6× is faster at 3 %, within the noise at 45 %.
    slower_half = synthetic("r-six", {"base": FLAT, "cand": [0.6 * x for x in FLAT]})
    for threshold, word in ((None, "faster"), (0.45, "same")):
        rows = json.loads(render(slower_half, "json", threshold=threshold))["rows"]
        assert next(r for r in rows if r["variant"] == "cand")["verdict"]["word"] == word


def test_compare_two_stored_runs_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PGWX_RESULTS", str(tmp_path / "r.sqlite"))
    monkeypatch.setenv("PGWX_STATE_DIR", str(tmp_path / "state"))
    a = synthetic("20260101-000000-aaaa", {"base": FLAT, "old": FLAT})
    b = synthetic("20260102-000000-bbbb", {"base": HALF, "new": FLAT})
    store = ResultStore()
    for r in (a, b):
        store.begin_run(r.model_copy(update={"trials": []}))
        for t in r.trials:
            store.add_trial(r.id, t)
        store.end_run(r.id, "finished", None)
    store.close()
    cross = compare_runs(a, b)
    assert [(r.variant, r.phase, r.verdict.word) for r in cross.rows] == [
        ("base", "load", "faster")
    ]
    assert cross.only_a == ["old"] and cross.only_b == ["new"]
    assert cli.main(["compare", a.id, b.id]) == 0
    out = capsys.readouterr().out
    assert "| base | load | 9 | 1.005 | 9 | 0.500 |" in out and "faster" in out
    assert "Only in A (not compared): old." in out and "Only in B (not compared): new." in out
    assert cli.main(["compare", a.id, b.id, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["rows"][0]["verdict"]["word"] == "faster"


# --------------------------------------------------------------------------- options


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--threshold", "abc"], "--threshold: the noise threshold 'abc' is not a number"),
        (["--threshold", "70%"], "below 50%"),
        (["--budget", "ten minutes"], "--budget: the time budget 'ten minutes' is not a dur"),
        (["--budget", "0"], "more than 0 seconds"),
        (["--warmup", "-1"], "--warmup must be between 0 and 10."),
    ],
)
def test_bad_run_options_are_one_sentence(
    args: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["run", "quick-demo", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert says in err and err.startswith("pgwx: ") and len(err.splitlines()) == 1


def test_profile_threshold_budget_and_auto_repeats(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    body = (
        'title = "t"\nworkload = "table-kind"\nrepeats = "auto"\n{extra}\n'
        '[[variants]]\nname = "a"\n'
    )
    path.write_text(body.format(extra='threshold = "5%"\nbudget = "10m"\nwarmup = 2'))
    p = load_profile(path)
    assert (p.repeats, p.threshold, p.budget, p.warmup) == ("auto", 0.05, 600.0, 2)
    path.write_text(body.format(extra="threshold = 0.7"))
    with pytest.raises(ProfileError, match=r"field threshold: .*below 50%"):
        load_profile(path)
    path.write_text(body.format(extra="min_repeats = 9\nmax_repeats = 4"))
    with pytest.raises(ProfileError, match=r"min_repeats \(9\) is larger than max_repeats \(4\)"):
        load_profile(path)
    for shipped in ("quick-demo", "durability", "file-extension"):
        assert load_profile(shipped).repeats == "auto"


def test_duration_pane_draws_each_candidates_interval() -> None:
    from types import SimpleNamespace

    from explorer.tui.widgets.duration import DurationPane, interval_bar

    # Nine cells of scale (one kept for the end mark): median 5/9, interval 3/9–7/9.
    assert interval_bar(5 / 9, 3 / 9, 7 / 9, 1.0, 10).plain == "███▒▒─┤"
    assert interval_bar(0.5, 0.5, 0.5, 1.0, 10).plain.endswith("┤")  # a narrow one still shows
    record = synthetic("r-pane", {"base": FLAT, "cand": HALF})
    pane = DurationPane.__new__(DurationPane)
    pane.view = SimpleNamespace(summary=summarize(record), record=record, variant=None)
    pane.phase, pane.bar_gaps = None, 0
    lines = pane._bars_text(40).plain.splitlines()
    verdict = judge(record).verdicts[("cand", "load")]
    lo = verdict.ci_low * verdict.median_baseline  # type: ignore[operator]
    hi = verdict.ci_high * verdict.median_baseline  # type: ignore[operator]
    cand = lines.index(next(x for x in lines if x.startswith("cand")))
    assert f"[{lo:.2f}–{hi:.2f}]" in lines[cand]
    assert lines[cand + 1].rstrip().endswith("faster") and "┤" in lines[cand + 1]
    assert lines[cand - 1].rstrip().endswith("baseline")
    assert max(len(x) for x in lines) <= 40


def test_the_apps_results_table_shows_the_reports_verdicts() -> None:
    from explorer.tui.widgets.results_table import COLUMNS, cells

    record = synthetic("r-cells", {"base": FLAT, "cand": HALF, "same": list(reversed(FLAT))})
    md = render(record)
    column = [key for key, _ in COLUMNS].index("verdict")
    for row in summarize(record):
        shown = cells(row)[column]
        label = shown.plain if hasattr(shown, "plain") else str(shown)
        assert label == row.verdict_label()
        assert f"| {row.variant} | {row.phase} | {row.n} |" in md and label in md
    labels = {r.variant: r.verdict_label() for r in summarize(record)}
    assert labels["base"] == "baseline" and labels["cand"].endswith("faster")
    assert labels["same"].endswith(("same within ±3 %", "undecided"))


def test_settled_means_the_interval_cannot_change_the_word() -> None:
    from explorer.analysis.judge import samples, settled
    from explorer.analysis.verdict import compare

    assert settled(compare(FLAT, HALF))  # wholly below 0.97: faster, for good
    tight = [x * 1.001 for x in FLAT]
    assert settled(compare(FLAT, tight))  # wholly inside 0.97–1.03: no difference, for good
    wide = [0.8, 1.3, 0.9, 1.2, 1.0, 1.1, 0.85, 1.25, 0.95]
    assert not settled(compare(FLAT, wide))  # straddles 0.97: more trials could tell
    assert not settled(compare(FLAT[:3], HALF[:3]))  # too few runs
    # A trial that lacks a phase has no total (unknown stays unknown), not a smaller one.
    record = synthetic("r-total", {"base": FLAT[:2], "cand": HALF[:2]})
    for t in record.trials:
        t.phases.append(PhaseResult(name="commit", seconds=0.5))
    del record.trials[0].phases[1]
    found = samples(record.trials)
    assert found.phases == ["load", "commit", "total"]
    assert len(found.seconds[(record.trials[0].variant, "total")]) == 1
    assert len(found.seconds[(record.trials[1].variant, "total")]) == 2


def test_variants_with_their_own_phases_each_get_a_total() -> None:
    """after-load adds an add-fk phase the others lack: every variant still has a total."""
    from explorer.analysis.judge import samples

    record = synthetic("r-own", {"none": FLAT[:3], "after-load": HALF[:3]})
    for t in record.trials:
        if t.variant == "after-load":
            t.phases.append(PhaseResult(name="add-fk", seconds=0.25))
    found = samples(record.trials)
    assert found.phases[-1] == "total"
    assert len(found.seconds[("none", "total")]) == 3
    assert found.seconds[("after-load", "total")] == [x + 0.25 for x in HALF[:3]]
