"""Do pgwx's verdicts hold their error rate? Synthetic runs through the real judge.

No server: `explorer.analysis.calibration` plays made-up runs round by round exactly as the
runner does (the same `RoundPlan` stops variants and the run, the same `judge` decides every
look) and counts what the words said against the truth it made up. For trial-to-trial noise
of 3, 10 and 20 % (log-normal), for a 1 × 1 table (two variants, one phase) and a 7 × 3 table
(seven variants, three phases and their total: 24 comparisons), with auto repeats (looks at
5, 10, …, 30 measured rounds):

| Figure | Goal |
|---|---|
| A/A: share of runs with any false faster/slower, no true difference anywhere | ≤ 5 % |
| A/A skewed: the same with a fifth of trials 1.5× slower (checkpoints) | ≤ 10 % |
| power: runs calling the first candidate's true 0.55×, 0.85×, 0.95× faster | see below |
| median rounds used, against a fixed 30-round design | — |

Power goal: a true 0.85× at 10 % noise found in ≥ 80 % of runs within 15 rounds.

    python benchmarks/verdict_calibration.py            # full: ~15 min on a loaded 2-core box
    python benchmarks/verdict_calibration.py --smoke    # a few seconds, to see it works
"""

from __future__ import annotations

import argparse
import time

from explorer.analysis.calibration import Scenario, calibrate

NOISES = (0.03, 0.10, 0.20)
TABLES = ((2, 1, "1×1"), (7, 3, "7×3"))
EFFECTS = (0.55, 0.85, 0.95)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="a few runs each (seconds)")
    parser.add_argument("--runs", type=int, default=1000, help="runs per 1×1 scenario")
    parser.add_argument("--big-runs", type=int, default=200, help="runs per 7×3 scenario")
    parser.add_argument("--seed", type=int, default=18)
    args = parser.parse_args()
    small, big = (20, 3) if args.smoke else (args.runs, args.big_runs)
    began = time.perf_counter()
    print(
        "| table | noise | A/A any false | A/A skewed | power 0.55× (≤15) | power 0.85× (≤15) "
        "| power 0.95× (≤15) | median rounds A/A · 0.85× (fixed: 30) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for variants, phases, name in TABLES:
        runs = small if variants == 2 else big
        for noise in NOISES:
            base = Scenario(variants=variants, phases=phases, noise=noise)
            aa = calibrate(base, runs, args.seed)
            skew = calibrate(
                Scenario(variants=variants, phases=phases, noise=noise, skewed=True),
                runs,
                args.seed,
            )
            cells = []
            rounds_effect = 0.0
            for effect in EFFECTS:
                c = calibrate(
                    Scenario(variants=variants, phases=phases, noise=noise, effect=effect),
                    runs,
                    args.seed,
                )
                cells.append(f"{c.power:.0%} ({c.power_by_15:.0%})")
                if effect == 0.85:
                    rounds_effect = c.median_rounds
            print(
                f"| {name} | {noise:.0%} | {aa.false_share:.1%} | {skew.false_share:.1%} | "
                + " | ".join(cells)
                + f" | {aa.median_rounds:g} · {rounds_effect:g} |",
                flush=True,
            )
    print(
        f"\n{small} runs per 1×1 scenario, {big} per 7×3; seed {args.seed}; "
        f"{time.perf_counter() - began:.0f} s"
    )


if __name__ == "__main__":
    main()
