"""Every benchmark still runs: each script in `benchmarks/` in its `--smoke` mode.

The benchmarks are not run by the suite for their figures (those are goals printed as ratios,
not asserts); they are run so that an import or API change that breaks one fails here, at
once, instead of when someone next re-measures (`timing_accuracy.py` stopped importing once
and nobody saw). Each smoke run starts its own throwaway server where it needs one and takes
seconds; the line each must print shows it got as far as its figures.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from explorer.server.connect import LIBPQ_ENV

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = sorted((ROOT / "benchmarks").glob("*.py"))

PROOF = {
    "aa_real.py": "1 runs finished (0 failed)",
    "history_flags.py": "| 20% | 20 |",
    "key_cpu.py": "80x24 new round 1: all keys",
    "replay_memory.py": "key-to-screen over",
    "sampler_overhead.py": "throughput with/without (pairs)",
    "start_cpu.py": "replay   new: CPU median",
    "terminal_bytes.py": "during the run",
    "terminal_latency.py": "80x24 tabs, quiet",
    "timing_accuracy.py": "durability copy (asyncpg COPY) vs COPY",
    "tui_latency.py": "during a full-speed run",
    "verdict_calibration.py": "| 7×3 | 20% |",
}
"""Benchmark → a line its smoke run prints only once it has measured something."""

LIMIT = 240
"""Seconds a smoke run may take at most (a few on a quiet machine; CI shares its cores)."""


def test_every_benchmark_has_a_smoke_run() -> None:
    assert [p.name for p in BENCHMARKS] == sorted(PROOF)


@pytest.mark.parametrize("script", BENCHMARKS, ids=lambda p: p.stem)
def test_benchmark_runs_in_smoke_mode(script: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in LIBPQ_ENV and k != "NO_COLOR"}
    # This checkout's explorer, and nothing written outside the test's directory.
    env.update(
        PYTHONPATH=str(ROOT),
        PGWX_STATE_DIR=str(tmp_path / "state"),
        PGWX_RESULTS=str(tmp_path / "results.sqlite"),
    )
    argv = [sys.executable, str(script), "--smoke"]
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=LIMIT)
    said = f"stdout:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-3000:]}"
    assert done.returncode == 0, said
    assert PROOF[script.name] in done.stdout, said
