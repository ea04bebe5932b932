"""How often does `pgwx history` flag a change? Synthetic pairs of runs through its own code.

Each simulated run is a two-variant table (baseline and `v1`, one phase) with log-normal
trial-to-trial noise, judged by the real judge; two such runs are lined up by the real
`explorer.analysis.history.history`, and its ⚑ is counted. With the same true ratio in both
runs every flag is false (the rate the test promises to keep at 5 %); with the second run's
ratio moved by `shift` a flag is a find (the power). `benchmarks/history_flags.py` prints both;
the old rule ("the ratio left the previous run's interval") is measured beside it on the same
runs, for the record.
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass

from explorer.analysis import history
from explorer.analysis.calibration import EPOCH, Scenario, play
from explorer.models import RunRecord


@dataclass(frozen=True)
class FlagRate:
    """Flags counted over `pairs` comparisons of two runs."""

    pairs: int
    flagged: float
    """Share of comparisons `pgwx history` flagged."""
    left_interval: float
    """Share whose ratio left the previous run's interval (the rule before issue 38)."""


def _run(s: Scenario, rng: random.Random, n: int) -> RunRecord:
    record = play(s, rng)
    return record.model_copy(update={"id": f"sim-{n}", "started_at": EPOCH + dt.timedelta(days=n)})


def flag_rate(
    pairs: int,
    *,
    shift: float = 1.0,
    noise: float = 0.10,
    repeats: int = 10,
    ratio: float = 0.8,
    seed: int = 38,
) -> FlagRate:
    """Simulate `pairs` pairs of runs of one variant at true `ratio`, the second at
    `ratio × shift`, and count how often history flags the second.

    Args:
        pairs: Comparisons to simulate.
        shift: The true change between the two runs (1.0: none, every flag is false).
        noise: Trial-to-trial noise (standard deviation of the log duration).
        repeats: Fixed measured trials per variant in each run.
        ratio: The variant's true ratio to the baseline in the first run.
        seed: Of the random numbers, for a repeatable figure.
    """
    rng = random.Random(seed)
    flagged = left = 0
    for i in range(pairs):
        first = Scenario(noise=noise, effect=ratio, repeats=repeats)
        second = Scenario(noise=noise, effect=ratio * shift, repeats=repeats)
        runs = [_run(first, rng, 2 * i), _run(second, rng, 2 * i + 1)]
        rows = history.history(runs, variant="v1")
        before, now = rows[0], rows[1]
        flagged += bool(now.change)
        if now.ratio is not None and before.ci_low is not None and before.ci_high is not None:
            left += not before.ci_low <= now.ratio <= before.ci_high
    return FlagRate(pairs, flagged / pairs, left / pairs)
