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

The drift warning (`explorer.analysis.drift`, issue 33), fixed repeats, one candidate × three
phases and their total, through the real `judge`:

| Figure | Goal |
|---|---|
| drift-free runs flagged, at 3/10/20 % noise and n = 10/30 rounds | ≤ 5 % each |
| a linear 10 % drift over the run at 10 % noise, n = 20, caught | ≥ 80 % |

A run on two identical servers (an A/A), auto repeats, through the real round planning
(`RoundPlan` per server, `servers.next_round`), `judge` and `judge_servers`
(`explorer.analysis.servers_calibration`, issue 33):

| Figure | Goal |
|---|---|
| runs where any printed table (either server's, or between them) says faster/slower | ≤ 5 % |

    python benchmarks/verdict_calibration.py            # full: ~15 min on a loaded 2-core box
    python benchmarks/verdict_calibration.py --smoke    # a few seconds, to see it works
    python benchmarks/verdict_calibration.py --drift-only   # the drift section alone (~4 min)
    python benchmarks/verdict_calibration.py --servers-only # the two-server A/A alone (~10 min)

A paired section (issue 35; `--skip-first` runs it alone, `--paired-runs` sets its size)
compares the within-round paired analysis with the unpaired one, with and without the
futility rule, with a per-round factor and with skew, on 1×1, 3×3 and 7×3 tables, and auto
repeats with a fixed 30-round design on the same drawn trials; it prints every goal figure of
issue 35 with its interval (docs/verdicts.md, "Pairing, futility and the plan", keeps a run).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

from explorer.analysis import futility
from explorer.analysis.calibration import Scenario, calibrate
from explorer.analysis.calibration_paired import (
    Cell,
    analysis,
    measure,
    measure_fixed,
    median_interval,
    share_text,
)
from explorer.analysis.drift_calibration import DriftScenario, drift_rate
from explorer.analysis.servers_calibration import servers_false_rate

NOISES = (0.03, 0.10, 0.20)
TABLES = ((2, 1, "1×1"), (7, 3, "7×3"))
EFFECTS = (0.55, 0.85, 0.95)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="a few runs each (seconds)")
    parser.add_argument("--runs", type=int, default=1000, help="runs per 1×1 scenario")
    parser.add_argument("--big-runs", type=int, default=200, help="runs per 7×3 scenario")
    parser.add_argument("--seed", type=int, default=18)
    parser.add_argument("--drift-runs", type=int, default=1000, help="runs per drift scenario")
    parser.add_argument("--drift-only", action="store_true", help="only the drift section")
    parser.add_argument("--servers-runs", type=int, default=500, help="runs per server A/A")
    parser.add_argument("--servers-only", action="store_true", help="only the two-server A/A")
    parser.add_argument(
        "--paired-runs",
        type=int,
        default=100,
        help="runs per 7×3 cell of the paired-vs-unpaired section (3×3: 2×, 1×1: 4×)",
    )
    parser.add_argument("--skip-paired", action="store_true", help="only the first table")
    parser.add_argument(
        "--analyses",
        default=",".join(str(i) for i in range(len(ANALYSES))),
        help="paired section: which analyses, by index (0 = pgwx's default; e.g. 0,2)",
    )
    parser.add_argument(
        "--parts",
        default="main,noisy,versus",
        help="paired section: which tables (main, noisy, versus; the goals need main and versus)",
    )
    parser.add_argument("--skip-first", action="store_true", help="only the paired section")
    parser.add_argument(
        "--limits-only",
        action="store_true",
        help="only the designs side by side on the same trials (7×3, 10 %%; ~15 min)",
    )
    parser.add_argument("--limits-runs", type=int, default=200, help="runs per design cell")
    args = parser.parse_args()
    if args.limits_only:
        limits_section(3 if args.smoke else args.limits_runs, args.seed)
        return
    if args.drift_only:
        drift_section(20 if args.smoke else args.drift_runs, args.seed)
        return
    if args.servers_only:
        servers_section(10 if args.smoke else args.servers_runs, args.seed)
        return
    if args.skip_first:
        paired_section(args.smoke, args.paired_runs, args.seed, args.analyses, args.parts)
        return
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
    drift_section(20 if args.smoke else args.drift_runs, args.seed)
    servers_section(10 if args.smoke else args.servers_runs, args.seed)

    if not args.skip_paired:
        paired_section(args.smoke, args.paired_runs, args.seed, args.analyses, args.parts)


def servers_section(runs: int, seed: int) -> None:
    """Two identical servers: runs with a false faster/slower anywhere, with 95 % intervals."""
    began = time.perf_counter()
    print("\n| two-server A/A | noise | any table (goal ≤ 5 %) | a server's own | between |")
    print("|---|---|---|---|---|")
    for variants, phases, name, share in ((2, 1, "1×1", 1), (4, 2, "3×2", 4)):
        for noise in NOISES:
            scenario = Scenario(variants=variants, phases=phases, noise=noise)
            n = max(runs // share, 10)
            cells = " | ".join(r.text() for r in servers_false_rate(scenario, n, seed))
            print(f"| {name} ({n} runs) | {noise:.0%} | {cells} |", flush=True)
    print(f"\nseed {seed}; {time.perf_counter() - began:.0f} s")


def drift_section(runs: int, seed: int) -> None:
    """The drift warning's false-alarm rate and power, each with its 95 % Wilson interval."""
    began = time.perf_counter()
    print("\n| drift warning | noise | n = 10 | n = 20 | n = 30 |")
    print("|---|---|---|---|---|")
    for drift, label in ((0.0, "drift-free: flagged (goal ≤ 5 %)"), (0.10, "10 % drift: caught")):
        for noise in NOISES:
            cells = [
                drift_rate(DriftScenario(rounds=n, noise=noise, drift=drift), runs, seed).text()
                for n in (10, 20, 30)
            ]
            print(f"| {label} | {noise:.0%} | " + " | ".join(cells) + " |", flush=True)
    one = drift_rate(DriftScenario(rounds=20, noise=0.10, drift=0.10, phases=1), runs, seed)
    print(
        f"\nA 1 × 1 table (one phase, two variants: half the trials per round) catches the same "
        f"10 % drift at 10 % noise, n = 20, in {one.text()} of runs.\n"
        f"{runs} runs per cell; 1 candidate × 3 phases + total; seed {seed}; "
        f"{time.perf_counter() - began:.0f} s"
    )


# --------------------------------------------------------------------------- paired section
# Issue 35: the within-round pairs and the futility rule against the unpaired analysis, with
# a per-round factor shared by the round's trials and with skew, on 1×1, 3×3 and 7×3 tables;
# and auto repeats against a fixed design of max_repeats rounds on the same drawn trials.

PAIRED_TABLES = ((2, 1, "1×1", 4), (4, 3, "3×3", 2), (8, 3, "7×3", 1))
"""(variants, phases, name, runs multiplier): 3×3 is 3 candidates × 3 phases."""

ANALYSES = (
    ("blocked t + futility", True, True, True),
    ("blocked t", True, False, True),
    ("signed rank + futility", True, True, False),
    ("unpaired", False, False, True),
)
"""(name, within-round pairs, futility, blocked t): the first is pgwx's default (rules 2), the
third rules 1's, the last the analysis before issue 35."""

CONDITIONS: tuple[tuple[str, float, float, bool], ...] = (
    ("10 %", 0.10, 0.0, False),
    ("10 % + round 5 %", 0.10, 0.05, False),
    ("10 % + round 15 %", 0.10, 0.15, False),
)
CONDITIONS += (("10 % skewed", 0.10, 0.0, True), ("20 %", 0.20, 0.0, False))
"""(name, trial noise, per-round factor sd, skewed)."""


def paired_section(
    smoke: bool,
    runs: int,
    seed: int,
    which: str = "0,1,2,3",
    parts: str = "main,noisy,versus",
) -> None:
    """The comparison table, the auto-vs-fixed table and every goal figure with its interval
    (`which`: the analyses by index; `parts`: the tables)."""
    began = time.perf_counter()
    base_runs = 2 if smoke else runs
    chosen = [ANALYSES[int(i)] for i in which.split(",")]
    main_rows = chosen if "main" in parts else []
    print("\n## Paired against unpaired, with and without futility (issue 35)\n")
    print(
        "| analysis | table | noise | A/A any false | A/A median rounds | 0.85× found ≤ 15 "
        "| 0.85× found ≤ 30 |"
    )
    print("|---|---|---|---|---|---|---|")
    worst: tuple[float, str, str] = (-1.0, "", "")
    goals: dict[str, Cell] = {}
    for label, pairs, stop, blocks in main_rows:
        with analysis(pairs, stop, blocks):
            for variants, phases, name, mult in PAIRED_TABLES:
                n = base_runs * mult
                for cond, noise, factor, skew in CONDITIONS:
                    s = Scenario(variants=variants, phases=phases, noise=noise, skewed=skew)
                    aa = measure(s, n, seed, factor)
                    fx = measure(replace(s, effect=0.85), n, seed + 1, factor)
                    lo, hi = median_interval(aa.rounds)
                    print(
                        f"| {label} | {name} | {cond} | {share_text(aa.false, n)} | "
                        f"{aa.median_rounds:g} [{lo:g}–{hi:g}] | {share_text(fx.found_by_15, n)} "
                        f"| {share_text(fx.found, n)} |",
                        flush=True,
                    )
                    if aa.false / n > worst[0]:
                        worst = (aa.false / n, f"{label}, {name}, {cond}", share_text(aa.false, n))
                    if label == ANALYSES[0][0]:  # pgwx's default
                        goals[f"aa {name} {cond}"] = aa
                        goals[f"fx {name} {cond}"] = fx
    print(
        "\n## One candidate three times as noisy as the rest, no difference anywhere "
        "(a pooled variance would call it different)\n"
    )
    print("| analysis | table | A/A any false | A/A median rounds |")
    print("|---|---|---|---|")
    for label, pairs, stop, blocks in chosen if "noisy" in parts else []:
        with analysis(pairs, stop, blocks):
            for variants, phases, name, mult in PAIRED_TABLES:
                n = base_runs * mult
                s = Scenario(variants=variants, phases=phases, noise=0.10)
                aa = measure(s, n, seed + 3, noisy_last=3.0)
                print(
                    f"| {label} | {name} | {share_text(aa.false, n)} | {aa.median_rounds:g} |",
                    flush=True,
                )
                if aa.false / n > worst[0]:
                    worst = (
                        aa.false / n,
                        f"{label}, {name}, one 3× noisier",
                        share_text(aa.false, n),
                    )
    print("\n## Auto repeats against a fixed design of 30 rounds, on the same trials\n")
    print("| table | noise | true | auto found | fixed 30 found | auto mean rounds |")
    print("|---|---|---|---|---|---|")
    versus: list[tuple[str, Cell]] = []
    with analysis(True, True):
        for variants, phases, name, mult in PAIRED_TABLES if "versus" in parts else []:
            n = base_runs * mult
            for cond, noise, factor, skew in CONDITIONS[:3]:
                for effect in (0.85, 0.90):
                    s = Scenario(
                        variants=variants, phases=phases, noise=noise, skewed=skew, effect=effect
                    )
                    c = measure(s, n, seed + 2, factor, with_fixed=True)
                    versus.append((f"{name} {cond} {effect}×", c))
                    print(
                        f"| {name} | {cond} | {effect}× | {share_text(c.found, n)} | "
                        f"{share_text(c.fixed_found, n)} | {c.mean_rounds:.1f} |",
                        flush=True,
                    )
    print("\n## Goals (pgwx's default: blocked t + futility)\n")
    print(f"- whole-run false-finding rate ≤ 5 % everywhere: worst {worst[2]} ({worst[1]})")
    for cond in ("10 %", "10 % + round 5 %", "10 % + round 15 %") if goals else ():
        c = goals[f"fx 7×3 {cond}"]
        goal = 80 if cond == "10 %" else 90
        print(
            f"- 0.85× at {cond} in 7×3 found within 15 rounds: "
            f"{share_text(c.found_by_15, c.runs)} ("
            + ("not a goal: what pairing is for)" if "15" in cond else f"goal ≥ {goal} %)")
        )
    for _, _, name, _ in PAIRED_TABLES if goals else ():
        c = goals[f"aa {name} 10 %"]
        lo, hi = median_interval(c.rounds)
        print(
            f"- no difference, 10 % noise, {name}: median rounds {c.median_rounds:g} "
            f"[{lo:g}–{hi:g}] (goal ≤ 15)"
        )
    behind = [k for k, c in versus if c.found < c.fixed_found]
    print(
        f"- auto finds at least as often as fixed 30 rounds: in {len(versus) - len(behind)} of "
        f"{len(versus)} conditions" + (f" (behind: {', '.join(behind)})" if behind else "")
    )
    print(
        f"\n{base_runs} runs per 7×3 cell, {2 * base_runs} per 3×3, {4 * base_runs} per 1×1; "
        f"seed {seed}; {time.perf_counter() - began:.0f} s"
    )


DESIGNS: tuple[tuple[str, int | None, float], ...] = (
    ("auto, looks every 5 rounds (pgwx)", 5, futility.FUTILITY_CHANCE),
    ("auto, looks every 5, futility below 40 %", 5, 0.40),
    ("auto, looks at 15 and 30", 15, futility.FUTILITY_CHANCE),
    ("fixed 15 rounds (all α at 15)", None, 0.0),
    ("fixed 30 rounds (all α at 30)", None, 0.0),
)
"""(name, min_repeats of the auto design or None for a fixed one, futility chance)."""


def limits_section(runs: int, seed: int) -> None:
    """Issue 35's goals against each other: several designs played on the *same* drawn trials
    of a 7 × 3 table at 10 % noise, through the real `RoundPlan` and `judge`.

    A fixed design of n rounds spends all of α at its one look, so no design that also looks
    elsewhere finds an effect by round n more often than it does (to within the draws); what
    an auto design spends before round 30 is what it lacks at round 30 against the fixed one.
    """
    began = time.perf_counter()
    print("\n## Designs on the same trials: what each goal costs the others (7×3, 10 % noise)\n")
    print(
        "| design | round factor | A/A any false | A/A median rounds | 0.85× found ≤ 15 "
        "| 0.85× found ≤ 30 | 0.90× found ≤ 30 | 0.90× mean rounds |"
    )
    print("|---|---|---|---|---|---|---|---|")
    before = futility.FUTILITY_CHANCE
    try:
        for factor in (0.0, 0.05):
            for name, step, chance in DESIGNS:
                futility.FUTILITY_CHANCE = chance
                row = [
                    _design_cell(name, step, effect, factor, runs, seed)
                    for effect in (1.0, 0.85, 0.90)
                ]
                aa, e85, e90 = row
                print(
                    f"| {name} | {factor:.0%} | {share_text(aa.false, runs)} | "
                    f"{aa.median_rounds:g} {_median_text(aa)} | "
                    f"{share_text(e85.found_by_15, runs)} | {share_text(e85.found, runs)} | "
                    f"{share_text(e90.found, runs)} | {e90.mean_rounds:.1f} |",
                    flush=True,
                )
    finally:
        futility.FUTILITY_CHANCE = before
    print(
        f"\n{runs} runs a cell, the same drawn trials for every design; seed {seed}; "
        f"{time.perf_counter() - began:.0f} s"
    )


def _median_text(c: Cell) -> str:
    lo, hi = median_interval(c.rounds)
    return f"[{lo:g}–{hi:g}]"


def _design_cell(
    name: str, step: int | None, effect: float, factor: float, runs: int, seed: int
) -> Cell:
    """`runs` runs of one design, the trials drawn from `seed` alone (so every design of a
    row plays the same trials)."""
    base = Scenario(variants=8, phases=3, noise=0.10, effect=effect)
    with analysis(True, True):
        if step is not None:
            return measure(replace(base, min_repeats=step), runs, seed + int(effect * 100), factor)
        n = 15 if "15" in name else 30
        return measure_fixed(
            replace(base, max_repeats=30), n, runs, seed + int(effect * 100), factor
        )


if __name__ == "__main__":
    main()
