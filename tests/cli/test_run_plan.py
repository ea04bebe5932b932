"""Plan before running: only repeats that cannot decide anything are refused, and the plan says
what the run's rounds can decide before the first trial (rules 2: the blocked t test)."""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from explorer import cli
from explorer.analysis.calibration import Scenario, simulate
from explorer.analysis.plan import (
    MIN_DECIDING,
    callable_ratios,
    least_comparisons,
    plan_sentence,
    refusal,
    rounds_for,
    rounds_for_same,
    smallest_deciding,
)
from explorer.analysis.sequential import ALPHA, smallest_p
from explorer.lab.profiles.catalog import load_profile
from explorer.server.connect import Target
from tests.support.cli import SECRET, assert_one_sentence


def _nowhere(tmp_path: Path) -> str:
    return f"postgresql://u:{SECRET}@/db?host={tmp_path}/nosock"


def test_repeats_below_five_are_refused_with_the_smallest_that_can_decide(
    cli: Callable[..., Any], tmp_path: Path
) -> None:
    # Fewer than 5 trials a side: every comparison is "too few runs", whatever the test.
    proc = cli("run", "durability", "--dsn", _nowhere(tmp_path), "--repeats", "4")
    assert_one_sentence(proc, tmp_path, "--repeats 4 cannot decide anything", "--repeats 5")
    proc = cli("run", "quick-demo", "--dsn", _nowhere(tmp_path), "--repeats", "1")
    assert_one_sentence(proc, tmp_path, "--repeats 1 cannot decide anything", "--repeats 5")


def test_five_rounds_in_a_seven_comparison_table_are_not_refused(
    cli: Callable[..., Any], tmp_path: Path
) -> None:
    # The rank tests' floor (2/252 above 0.05/7) refused this under rules 1; the blocked t
    # has no floor, so the run goes on (and fails only for want of a server).
    assert smallest_p(5) > 0.05 / 7
    proc = cli("run", "durability", "--dsn", _nowhere(tmp_path), "--repeats", "5")
    assert "cannot decide" not in proc.stderr, proc.stderr
    assert_one_sentence(proc, tmp_path, "Nothing is listening")


def test_the_plan_is_said_before_the_first_trial(
    pg18: Target, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    monkeypatch.setenv("PGWX_RESULTS", str(tmp_path / "r.sqlite"))
    monkeypatch.setenv("PGWX_STATE_DIR", str(tmp_path / "state"))
    for var in cli.LIBPQ_ENV:
        monkeypatch.delenv(var, raising=False)
    assert pg18.bundled is not None
    # --repeats 5 without --allow-undecidable: not refused any more.
    argv = ["run", "quick-demo", "--data-dir", str(pg18.bundled.data_dir), "--keep-server"]
    argv += ["--scale", "0.005", "--repeats", "5", "--settle", "0"]
    assert cli.main([*argv, "--no-sample", "--warmup", "0"]) in (0, 4)  # decided or undecided
    err = capsys.readouterr().err.splitlines()
    plan = next(i for i, line in enumerate(err) if line.startswith("Plan: "))
    first = next(i for i, line in enumerate(err) if "round 1" in line)
    assert plan < first, err
    said = err[plan]
    assert said.startswith("Plan: at least 2 comparisons at ±3 %, one look after 5 rounds"), said
    # No self-test in this state directory: the noise is unknown, and the plan says so.
    assert "noise is not known yet" in said and "5 rounds can call a ratio beyond" in said


def test_the_refusal_and_the_plan_figures() -> None:
    profile = load_profile("durability")
    assert least_comparisons(8) == 7
    assert least_comparisons(1) == 0
    # Two servers: the between-server family (8 variants) and the within one (7).
    assert least_comparisons(8, servers=2) == 7
    assert least_comparisons(1, servers=3) == 2
    # The rank tests' floor: still what a phase in seconds or a missing trial needs.
    assert smallest_deciding(21) == 6 and smallest_deciding(1) == 4
    assert MIN_DECIDING == 5
    fixed = {n: profile.model_copy(update={"repeats": n}) for n in (1, 4, 5, 6)}
    said = refusal(fixed[4], 21)
    assert said is not None and "use --repeats 5 or more" in said
    assert refusal(fixed[1], 1) is not None
    assert refusal(fixed[5], 21) is None and refusal(fixed[5], 1000) is None
    assert refusal(fixed[4], 0) is None  # nothing to compare
    assert refusal(profile.model_copy(update={"repeats": "auto"}), 100) is None
    # 5 rounds of 8 variants at ±10 %: t(0.05/7, 7 df) ≈ 3.8 times 0.1·√(2/5).
    faster, slower = callable_ratios(0.10, 5, ALPHA / 7, 8, 0.03)
    assert faster == pytest.approx(0.79, abs=0.01) and slower == pytest.approx(1 / faster)
    said = plan_sentence(fixed[5], 7, noise=0.10)
    assert "at ±10 % noise 5 rounds can call a ratio beyond 0.79× / 1.27×" in said, said
    assert "not 'same within ±3 %' (that needs at least" in said
    # 5 rounds: a phase in seconds or a missing trial (rank tests) cannot be decided; 6 can.
    assert "below 6 rounds a comparison missing a trial" in said
    assert "missing a trial" not in plan_sentence(fixed[6], 7, noise=0.10)
    # Low noise, auto repeats: same can be shown before the last look, and the plan says when.
    auto = profile.model_copy(update={"repeats": "auto"})
    said = plan_sentence(auto, 7, noise=0.03)
    same = rounds_for_same(0.03, ALPHA / 5 / 7, 8, 0.03)
    assert same is not None and same <= 30
    assert f"'same within ±3 %' from round {same} at the earliest" in said, said
    assert "this run stops at 30" in said
    unknown = plan_sentence(auto, 7)
    assert "noise is not known yet" in unknown and "at ±10 % noise round 10" in unknown
    assert "cannot decide anything" in plan_sentence(fixed[4], 7, noise=0.1)


@pytest.mark.parametrize(("variants", "rounds", "noise"), [(8, 5, 0.10), (3, 10, 0.20)])
def test_the_stated_ratio_is_what_the_real_judge_finds(
    variants: int, rounds: int, noise: float
) -> None:
    """Simulated runs through the real judge: an effect just beyond the ratio the plan states
    is found in about half the runs or more, one a quarter of the way there almost never."""
    comparisons = variants - 1
    faster, slower = callable_ratios(noise, rounds, ALPHA / comparisons, variants, 0.03)

    def found(effect: float, runs: int = 200) -> float:
        s = Scenario(variants=variants, noise=noise, effect=effect, repeats=rounds)
        rng = random.Random(35)
        return sum(simulate(s, rng).found for _ in range(runs)) / runs

    assert found(faster * 0.98) >= 0.4
    assert found(slower * 1.02) >= 0.4
    assert found(math.exp(math.log(faster) / 4)) <= 0.05
    assert found(math.exp(math.log(slower) / 4)) <= 0.05


def test_the_rounds_an_effect_needs_are_what_the_real_judge_needs() -> None:
    """`rounds_for` (the self-test's "a 15 % effect needs about N rounds"): at N rounds the
    effect is found in about half the simulated runs, at a third of N far less often."""
    need = rounds_for(0.85, 0.20 * math.sqrt(2), 3, 1)

    def found(rounds: int, runs: int = 200) -> float:
        s = Scenario(variants=4, noise=0.20, effect=0.85, repeats=rounds)
        rng = random.Random(35)
        return sum(simulate(s, rng).found for _ in range(runs)) / runs

    assert 15 <= need <= 30
    assert found(need) >= 0.4
    assert found(need // 3) <= 0.25
