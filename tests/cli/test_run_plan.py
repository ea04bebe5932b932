"""Plan before running: undecidable fixed repeats are refused, and the plan is said first."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from explorer import cli
from explorer.analysis.plan import least_comparisons, plan_sentence, refusal, smallest_deciding
from explorer.analysis.sequential import smallest_p
from explorer.lab.profiles.catalog import load_profile
from explorer.server.connect import Target
from tests.support.cli import SECRET, assert_one_sentence


def _nowhere(tmp_path: Path) -> str:
    return f"postgresql://u:{SECRET}@/db?host={tmp_path}/nosock"


def test_fixed_repeats_that_cannot_decide_are_refused_with_the_smallest_that_can(
    cli: Callable[..., Any], tmp_path: Path
) -> None:
    # durability: 8 variants, at least 7 comparisons; 5 a side reach 2/252 = 0.0079 at best,
    # above 0.05 / 7 = 0.0071; 6 a side reach 2/924.
    proc = cli("run", "durability", "--dsn", _nowhere(tmp_path), "--repeats", "5")
    assert_one_sentence(proc, tmp_path, "--repeats 5 cannot decide anything", "--repeats 6")
    assert smallest_p(5) > 0.05 / 7 >= smallest_p(6)


def test_the_plan_is_said_before_the_first_trial(
    pg18: Target, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    monkeypatch.setenv("PGWX_RESULTS", str(tmp_path / "r.sqlite"))
    monkeypatch.setenv("PGWX_STATE_DIR", str(tmp_path / "state"))
    for var in cli.LIBPQ_ENV:
        monkeypatch.delenv(var, raising=False)
    assert pg18.bundled is not None
    argv = ["run", "quick-demo", "--data-dir", str(pg18.bundled.data_dir), "--keep-server"]
    argv += ["--scale", "0.005", "--repeats", "2", "--allow-undecidable", "--settle", "0"]
    assert cli.main([*argv, "--no-sample", "--warmup", "0"]) in (0, 4)  # decided or undecided
    err = capsys.readouterr().err.splitlines()
    plan = next(i for i, line in enumerate(err) if line.startswith("Plan: "))
    first = next(i for i, line in enumerate(err) if "round 1" in line)
    assert plan < first, err
    assert err[plan].startswith("Plan: at least 2 comparisons at ±3 %, one look after 2 rounds")


def test_plan_figures() -> None:
    profile = load_profile("durability")
    assert least_comparisons(8) == 7
    assert least_comparisons(1) == 0
    # Two servers: the between-server family (8 variants) and the within one (7).
    assert least_comparisons(8, servers=2) == 7
    assert least_comparisons(1, servers=3) == 2
    assert smallest_deciding(21) == 6 and smallest_deciding(1) == 4
    assert refusal(profile.model_copy(update={"repeats": 5}), 21) is not None
    assert refusal(profile.model_copy(update={"repeats": 6}), 21) is None
    assert refusal(profile.model_copy(update={"repeats": "auto"}), 100) is None
    said = plan_sentence(profile.model_copy(update={"repeats": "auto"}), 7, noise=0.2)
    assert "a 5 % effect needs about" in said and "this run stops at" in said
