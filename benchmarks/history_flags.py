"""How often does `pgwx history` flag a change where there is none, and find a real one?

No server: `explorer.analysis.history_calibration` makes pairs of runs (a baseline and one
variant at 0.8×, one phase, log-normal noise), judges each with the real judge and lines them
up with the real `pgwx history` code, then counts its ⚑:

| Figure | Goal |
|---|---|
| false flags per comparison, no change between the two runs | ≤ 5 % |
| power: flags when the second run's ratio is 15 % higher | as high as the noise allows |
| the rule before issue 38 (ratio left the last interval), same runs | for the record (~17 %) |

    python benchmarks/history_flags.py            # 2,000 pairs per row: about a minute
    python benchmarks/history_flags.py --smoke    # a few seconds, to see it works
"""

from __future__ import annotations

import argparse
import time

from explorer.analysis.history_calibration import flag_rate

NOISES = (0.03, 0.10, 0.20)
REPEATS = (10, 20)
SHIFT = 1.15


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="a few pairs each (seconds)")
    parser.add_argument("--pairs", type=int, default=2000, help="pairs of runs per row")
    parser.add_argument("--seed", type=int, default=38)
    args = parser.parse_args()
    pairs = 40 if args.smoke else args.pairs
    began = time.perf_counter()
    print(
        "| noise | trials a side | false flags (goal ≤ 5 %) | old rule's false flags "
        f"| power, {SHIFT - 1:.0%} shift | old rule's power |"
    )
    print("|---|---|---|---|---|---|")
    for noise in NOISES:
        for repeats in REPEATS:
            null = flag_rate(pairs, noise=noise, repeats=repeats, seed=args.seed)
            moved = flag_rate(pairs, shift=SHIFT, noise=noise, repeats=repeats, seed=args.seed)
            print(
                f"| {noise:.0%} | {repeats} | {null.flagged:.1%} | {null.left_interval:.1%} "
                f"| {moved.flagged:.1%} | {moved.left_interval:.1%} |",
                flush=True,
            )
    print(f"\n{pairs} pairs of runs per row, seed {args.seed}; {time.perf_counter() - began:.0f} s")


if __name__ == "__main__":
    main()
