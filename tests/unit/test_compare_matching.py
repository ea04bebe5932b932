"""`pgwx compare` matches a single run's knobs with the matrix's name, in the profile's order."""

from __future__ import annotations

import datetime as dt
import random

from explorer.analysis import crossrun
from explorer.lab.profiles.catalog import load_profile
from explorer.models import PhaseResult, Profile, RunRecord, ServerInfo, TrialResult, Variant
from tests.support.runs import fake_caps


def _run(run_id: str, profile: Profile, seconds: dict[str, float]) -> RunRecord:
    rng = random.Random(run_id)
    record = RunRecord(
        id=run_id,
        profile=profile,
        server=ServerInfo(dsn_masked="bundled", bundled=True, capabilities=fake_caps(180006)),
        started_at=dt.datetime.now(dt.UTC),
    )
    # balanced order, last variant first in odd rounds: trial order is not the profile's order
    for repeat in range(1, 7):
        names = list(seconds) if repeat % 2 else list(reversed(seconds))
        for name in names:
            secs = seconds[name] * rng.uniform(0.98, 1.02)
            record.trials.append(
                TrialResult(
                    run_id=run_id,
                    variant=name,
                    repeat=repeat,
                    status="ok",
                    started_at=dt.datetime.now(dt.UTC),
                    phases=[PhaseResult(name="load", seconds=secs, rows=10)],
                )
            )
    return record


def test_a_single_run_matches_the_matrix_variant_with_the_same_knobs() -> None:
    matrix = load_profile("fk-timing-restore")
    deferred = next(v for v in matrix.variants if v.name == "deferred")
    single = matrix.model_copy(
        update={"variants": [Variant(name="logged fk=deferred", knobs=deferred.knobs)]}
    )
    a = _run("a", matrix, {"none": 1.0, "deferred": 2.0})
    b = _run("b", single, {"logged fk=deferred": 2.0})
    cross = crossrun.compare_runs(a, b)
    assert [(r.variant, r.variant_b) for r in cross.rows] == [("deferred", "logged fk=deferred")]
    assert cross.only_a == ["none"] and cross.only_b == []
    assert "| deferred (B: logged fk=deferred) | load |" in crossrun.to_markdown(cross)


def test_rows_follow_the_profile_order_not_the_trial_order() -> None:
    profile = load_profile("quick-demo")
    names = [v.name for v in profile.variants]
    a = _run("a", profile, dict.fromkeys(reversed(names), 1.0))
    b = _run("b", profile, dict.fromkeys(reversed(names), 1.0))
    assert [r.variant for r in crossrun.compare_runs(a, b).rows] == names


def test_two_different_experiments_say_so_in_one_sentence() -> None:
    a = _run("a", load_profile("quick-demo"), {"logged": 1.0})
    b = _run("b", load_profile("fk-timing-restore"), {"none": 1.0})
    cross = crossrun.compare_runs(a, b)
    assert cross.rows == []
    said = crossrun.why_nothing_matched(cross)
    assert said is not None and "different experiments" in said and "quick-demo" in said
    assert said in crossrun.to_markdown(cross)
