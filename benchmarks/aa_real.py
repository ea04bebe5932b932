"""Real A/A runs: the quick demo with three identical variants, on the bundled server.

Issue 35's last goal: on a shared 2-core machine, a real quick-demo run whose three variants
are the same (all logged tables) ends `undecided` or `same` — never `faster`/`slower` — in at
least 19 of 20 runs. This script writes that profile (the quick demo's, with the three
variants made identical), runs `pgwx run <profile> --format json` N times one after the other
in a scratch state directory (its own cluster, results and state under a temporary directory;
nothing of the user's is touched), and counts the runs with any faster/slower word, with the
95 % Wilson interval, the rounds each used and the words.

    python benchmarks/aa_real.py              # 20 runs, a minute or so each
    python benchmarks/aa_real.py --runs 5     # fewer

A run that fails (an exit code other than 0, 4 or 5: decided, undecided, regressed) is counted
apart and its last line printed; the
tally is printed after every run, so a partial count can be read off when it is stopped.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from explorer.analysis.calibration_paired import share_text

ROOT = Path(__file__).resolve().parent.parent

PROFILE = """title = "Quick demo A/A: three identical logged tables"
description = "The quick demo with its three variants made identical (benchmarks/aa_real.py)."
workload = "table-kind"
repeats = "auto"
min_repeats = 5
max_repeats = 8
budget = "60s"
settle_seconds = 0.2
params = { rows = 300000 }

[[variants]]
name = "a"
knobs = { table_kind = "logged" }

[[variants]]
name = "b"
knobs = { table_kind = "logged" }

[[variants]]
name = "c"
knobs = { table_kind = "logged" }
"""


def words(document: dict) -> list[tuple[str, str, str]]:
    """(variant, phase, word) of every comparison in a `--format json` run document."""
    out = []
    for row in document.get("rows", []):
        v = row.get("verdict")
        if v and v.get("word"):
            out.append((row.get("variant", "?"), row.get("phase", "?"), v["word"]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument(
        "--smoke", action="store_true", help="one small run (the suite's check that it works)"
    )
    args = parser.parse_args()
    runs, extra = args.runs, []
    if args.smoke:
        runs, extra = 1, ["--scale", "0.02", "--repeats", "2", "--allow-undecidable"]
    with tempfile.TemporaryDirectory(prefix="pgwx-aa-") as scratch:
        base = Path(scratch)
        os.chmod(base, 0o755)
        profile = base / "quick-demo-aa.toml"
        profile.write_text(PROFILE)
        env = dict(
            os.environ,
            PGWX_STATE_DIR=str(base / "state"),
            PGWX_RESULTS=str(base / "results.sqlite"),
            PGWX_CLUSTER_HOME=str(base / "clusters"),
        )
        false_runs = failed = done = 0
        began = time.perf_counter()
        for i in range(1, runs + 1):
            t0 = time.perf_counter()
            proc = subprocess.run(
                [
                    *(sys.executable, "-m", "explorer.cli", "run", str(profile)),
                    *("--format", "json", *extra),
                ],
                capture_output=True,
                text=True,
                env=env,
                cwd=ROOT,
                check=False,
            )
            took = time.perf_counter() - t0
            if proc.returncode not in (0, 4, 5):  # decided, undecided, regressed: finished
                failed += 1
                last = (proc.stderr.strip().splitlines() or ["(no message)"])[-1]
                print(f"run {i}: failed (exit {proc.returncode}): {last[:200]}", flush=True)
                continue
            doc = json.loads(proc.stdout)
            said = words(doc)
            decided = [w for w in said if w[2] in ("faster", "slower")]
            done += 1
            false_runs += bool(decided)
            counts: dict[str, int] = {}
            for _, _, w in said:
                counts[w] = counts.get(w, 0) + 1
            looks = (doc.get("correction") or {}).get("looks") or ["?"]
            rounds = looks[-1]
            print(
                f"run {i}: {took:.0f} s, rounds {rounds}, words {counts}"
                + (f", FALSE: {decided}" if decided else "")
                + f" — so far {false_runs} of {done} with a faster/slower "
                f"({share_text(false_runs, done)}), {failed} failed",
                flush=True,
            )
        print(
            f"\n{done} runs finished ({failed} failed) in {time.perf_counter() - began:.0f} s: "
            f"{done - false_runs} ended undecided or same everywhere, {false_runs} with a "
            f"faster/slower ({share_text(false_runs, done) if done else '—'}); "
            "goal: at least 19 of 20 without."
        )


if __name__ == "__main__":
    main()
