"""Promises of the report and the profile loader that a broken aggregate would quietly break.

Every report test elsewhere uses two repeats, where a median and a mean coincide; these use
three with one skewed value, a baseline that is not the first variant, and a baseline phase
too short for a ratio to mean anything.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from explorer.analysis.report import render, summarize, to_rows
from explorer.lab.profiles.catalog import ProfileError, load_profile
from explorer.models import (
    PhaseResult,
    Profile,
    RunRecord,
    ServerInfo,
    TrialResult,
    Variant,
)
from tests.support.runs import fake_caps

NOW = dt.datetime(2026, 11, 22, tzinfo=dt.UTC)


def record(seconds: dict[str, list[float]], *, baseline: str | None = None) -> RunRecord:
    """A finished run of one phase per trial, with these timings per variant in order."""
    profile = Profile(
        name="t",
        title="t",
        workload="table-kind",
        repeats=max(len(v) for v in seconds.values()),
        baseline=baseline,
        variants=[Variant(name=n) for n in seconds],
    )
    caps = fake_caps(180000)
    trials = [
        TrialResult(
            run_id="r",
            variant=name,
            repeat=rep,
            status="ok",
            started_at=NOW,
            phases=[PhaseResult(name="insert", seconds=s, rows=10)],
        )
        for name, values in seconds.items()
        for rep, s in enumerate(values, start=1)
    ]
    return RunRecord(
        id="r",
        profile=profile,
        server=ServerInfo(dsn_masked="bundled", bundled=True, capabilities=caps),
        started_at=NOW,
        status="finished",
        trials=trials,
    )


def row(rec: RunRecord, variant: str) -> dict:
    return next(r for r in to_rows(rec) if r["variant"] == variant)


def test_median_of_three_skewed_repeats_is_the_middle_value() -> None:
    rec = record({"a": [1.0, 1.2, 10.0], "b": [2.0, 2.4, 2.2]})
    a = row(rec, "a")
    assert a["median"] == pytest.approx(1.2)  # a mean would say 4.07
    assert (a["min"], a["max"]) == (1.0, 10.0)
    # ratio of medians, not of means: 2.2 / 1.2
    assert row(rec, "b")["ratio"] == pytest.approx(2.2 / 1.2)
    assert "| a | insert | 3 | 1.000 | 1.200 | 10.000 |" in render(rec, "md")


def test_explicit_baseline_is_the_ratios_reference() -> None:
    rec = record({"first": [1.0, 1.0, 1.0], "ref": [4.0, 4.0, 4.0]}, baseline="ref")
    assert row(rec, "ref")["ratio"] == pytest.approx(1.0)
    assert row(rec, "first")["ratio"] == pytest.approx(0.25)
    assert "baseline ref" in render(rec, "md")


def test_no_ratio_against_a_baseline_phase_too_short_to_time() -> None:
    # Enough trials for a verdict, so only the floor can keep the ratio out.
    # 0.4 ms: below the 1 ms resolution of pgwx's own clock (round trips included).
    rec = record({"base": [0.0004] * 5, "other": [0.5, 0.51, 0.49, 0.5, 0.52]})
    rows = {r.variant: r for r in summarize(rec)}
    assert rows["other"].median == pytest.approx(0.5)
    assert rows["other"].ratio is None, "no ratio against a baseline shorter than the floor"
    line = next(ln for ln in render(rec, "md").splitlines() if ln.startswith("| other |"))
    cell = line.split("|")[7].strip()
    assert "×" not in cell and "tiny baseline" in cell, cell  # a difference, not "1250×"


@pytest.mark.parametrize(
    "extra, where",
    [
        ('colour = "red"\n', "colour"),
        ('[[variants]]\nname = "b"\nflavour = "x"\n', "flavour"),
        ('[[variants]]\nname = "b"\nknobs = { fsink = false }\n', "fsink"),
    ],
)
def test_unknown_profile_field_is_refused(tmp_path: Path, extra: str, where: str) -> None:
    good = 'title = "t"\nworkload = "table-kind"\n'
    body = good + (extra if not extra.startswith("[[") else "") + '[[variants]]\nname = "a"\n'
    if extra.startswith("[["):
        body += extra
    path = tmp_path / "p.toml"
    path.write_text(body)
    with pytest.raises(ProfileError) as err:
        load_profile(path)
    assert where in str(err.value) and str(path) in str(err.value)
    # the same file without the stray key loads: the key, not the file, is refused
    path.write_text(good + '[[variants]]\nname = "a"\n')
    assert load_profile(path).variants[0].name == "a"
