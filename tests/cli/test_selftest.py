"""`pgwx selftest`: the baseline against itself on a real server, and what the report says."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

from explorer.analysis.calibration import synthetic_record, synthetic_trial
from explorer.analysis.selftest import phase_noise, self_test_profile, smallest_threshold
from explorer.lab.profiles.catalog import load_profile
from explorer.server.connect import Target
from tests.support.faults import child_env


def _pgwx(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "explorer.cli", *args],
        env=child_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_selftest_runs_the_baseline_against_itself_and_reports_noise(
    pg18: Target, tmp_path: Path
) -> None:
    assert pg18.bundled is not None
    kw = pg18.bundled.connect_kwargs()
    dsn = f"postgresql://{kw['user']}@/postgres?host={kw['host']}&port={kw['port']}"
    done = _pgwx(
        tmp_path,
        "selftest",
        "quick-demo",
        "--dsn",
        dsn,
        "--scale",
        "0.2",  # a total above the 50 ms floor even on a fast machine
        "--repeats",
        "5",
        "--warmup",
        "0",
        "--no-sample",
        "--settle",
        "0",
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.startswith("## self-test of quick-demo: the baseline against itself")
    # One noise figure per phase of the table-kind workload, and the total.
    rows = re.findall(r"^\| ([a-z-2]+) \| 10 \| ±([0-9.]+) %( \(below 50 ms[^|]*)? \|$", out, re.M)
    noise = {phase: value for phase, value, _ in rows}
    counted = {phase: value for phase, value, tiny in rows if not tiny}
    assert {"insert", "update", "delete", "total"} <= set(noise), out
    assert all(0 < float(v) < 200 for v in noise.values())
    # quick-demo has three variants and six phases: 2 × (6 + total) comparisons.
    assert "of runs of quick-demo (14 comparisons) would end with any false" in out, out
    said = re.search(r"Smallest threshold these trials can decide at: (\d+)%", out)
    assert said is not None
    # The suggestion follows from the worst phase's noise (independently: the formula's
    # inputs are in the table; max_repeats 8, 14 comparisons, one useful look at 8).
    # The table prints the noise to 0.1 %: the suggestion is that of a noise within
    # ±0.05 % of it (a noise of 35.599 % printed 35.6 % suggests 70 %, the printed figure 71 %).
    worst = max(float(v) for v in counted.values()) / 100
    low = math.ceil(smallest_threshold(worst - 0.0005, 8, 14, 1) * 100)
    high = math.ceil(smallest_threshold(worst + 0.0005, 8, 14, 1) * 100)
    assert low <= int(said.group(1)) <= high
    # The run is stored like any other: the baseline and its twin, five rounds each.
    report = _pgwx(tmp_path, "report", "latest", "--format", "json")
    data = json.loads(report.stdout)
    assert {r["variant"] for r in data["rows"]} == {"logged", "logged-again"}
    assert data["baseline"] == "logged"


def test_self_test_profile_and_pooled_noise_by_hand() -> None:
    profile = load_profile("durability")
    twin = self_test_profile(profile)
    assert [v.name for v in twin.variants] == ["defaults", "defaults-again"]
    assert twin.variants[0].knobs == twin.variants[1].knobs
    assert twin.title.startswith("self-test: ")
    # Pooled standard deviation of log seconds around each variant's own mean, by hand:
    # a = (1, e^0.1, e^-0.1) → deviations 0, 0.1, −0.1; b = (2, 2e^0.2) → ±0.1;
    # squares 0.02 + 0.02 over (2 + 1) degrees of freedom.
    a = [1, math.exp(0.1), math.exp(-0.1)]
    b = [2, 2 * math.exp(0.2)]
    trials = [
        synthetic_trial(variant, i + 1, {"load": secs})
        for variant, values in (("defaults", a), ("defaults-again", b))
        for i, secs in enumerate(values)
    ]
    (load,) = phase_noise(synthetic_record(twin, trials))
    assert load.phase == "load" and load.n == 5
    assert load.noise is not None and math.isclose(load.noise, math.sqrt(0.04 / 3))
