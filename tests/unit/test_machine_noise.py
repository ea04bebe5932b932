"""The self-test's noise is kept per machine and profile, and the plan and the self-test say
what it means in rounds."""

from __future__ import annotations

import json
from pathlib import Path

from explorer.analysis.selftest import PhaseNoise, SelfTest, to_text
from explorer.lab.profiles.catalog import load_profile
from explorer.lab.run.request import RunRequest, run_plan
from explorer.lab.store.machine_noise import FILE_NAME, load_noise, machine, save_noise


def test_noise_is_kept_per_machine_and_profile(tmp_path: Path) -> None:
    assert load_noise("durability", tmp_path) is None
    save_noise("durability", 0.18, tmp_path)
    save_noise("toast", 0.05, tmp_path)
    assert load_noise("durability", tmp_path) == 0.18
    assert load_noise("toast", tmp_path) == 0.05
    data = json.loads((tmp_path / FILE_NAME).read_text())
    assert f"{machine()}\tdurability" in data
    # Another machine's figure is not this one's; a hostile value is not a number to use.
    data = {"elsewhere\tdurability": {"noise": 0.5}, f"{machine()}\ttoast": {"noise": "x"}}
    (tmp_path / FILE_NAME).write_text(json.dumps(data))
    assert load_noise("durability", tmp_path) is None and load_noise("toast", tmp_path) is None


def test_the_plan_and_the_self_test_say_the_rounds_an_effect_needs() -> None:
    profile = load_profile("durability")
    request = RunRequest.build(profile)
    said = run_plan(request, noise=0.18)
    assert said.startswith("Plan: at least 7 comparisons at ±3 %")
    assert "at ±18 % noise round 10 can call a ratio beyond" in said, said
    assert "this run stops at 30" in said
    assert "noise is not known yet" in run_plan(request)
    text = to_text(SelfTest([PhaseNoise("load", 20, 0.18, 1.0)], [], 7, None, None), profile)
    assert "At ±18% noise a 5 % effect needs about" in text and "a 15 % one about" in text
