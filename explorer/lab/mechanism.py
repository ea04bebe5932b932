"""The mechanism behind each phase: measured at the phase's edges, summed over trials.

`PhaseProbe` brackets one phase with sampler readings: a reading at the start, the workload's
statistics flushed and its helper processes (pg_restore, pgbench) gone at the end, then a
last reading. What the sampler summed in between is the phase's `PhaseMechanism`.

`MechanismSummary` is one table row's mechanism over the trials: medians per value, waits
pooled. A value that any trial could not measure is None — shown as `?` — and so is every
total that includes it (`explorer.lab.verdict.total`).
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Literal

import asyncpg

from explorer.lab.sampler import TrialSampler
from explorer.lab.verdict import total
from explorer.models import WRITERS, PhaseMechanism, PhaseResult

QUIESCE_TIMEOUT = 10.0
"""Seconds to wait for a finished tool's sessions to leave (and so publish their counters)."""

LATE_FIELDS = ("wal_fpi", "wal_records")
"""pg_stat_wal counters a backend publishes only when its transaction has ended."""

IO_KINDS: tuple[Literal["written", "extended", "fsyncs"], ...] = ("written", "extended", "fsyncs")
"""The pg_stat_io quantities split by writer."""

_GONE_SQL = """
SELECT count(*) FROM pg_stat_activity
WHERE starts_with(application_name, $1) AND NOT (pid = ANY($2::int[]))
"""


class PhaseProbe:
    """Brackets phases with sampler readings on behalf of one trial.

    Args:
        sampler: The run's sampler.
        conn: A session that is not the workload's, to see when helper processes are gone.
        prefix: application_name prefix of the workload's sessions.
    """

    def __init__(
        self, sampler: TrialSampler, conn: asyncpg.Connection, prefix: str = "pgwx-work"
    ) -> None:
        self.sampler = sampler
        self.conn = conn
        self.prefix = prefix

    async def begin(self, name: str) -> None:
        """Take a reading now and open `name`'s window there."""
        sharp = await self.sampler.sample_now()
        self.sampler.begin_phase(name, sharp=sharp)

    def split(self, name: str) -> None:
        """End the open phase at the next reading and start `name` (no await: a callback)."""
        self.sampler.split_phase(name)

    async def end(self, keep_pids: set[int]) -> dict[str, PhaseMechanism]:
        """Wait for the helpers' sessions to leave, take a reading, close the window(s).

        A backend publishes its counters on exit before it leaves pg_stat_activity, so once
        only `keep_pids` (the trial's own open sessions, already flushed) remain, the reading
        holds everything the phase did.

        Args:
            keep_pids: Server pids of the workload sessions that stay open.
        """
        deadline = time.monotonic() + QUIESCE_TIMEOUT
        while time.monotonic() < deadline:
            try:
                left = await self.conn.fetchval(_GONE_SQL, self.prefix, list(keep_pids))
            except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError):
                break
            if not left:
                break
            await asyncio.sleep(0.02)
        sharp = await self.sampler.sample_now()
        return self.sampler.end_phase(sharp=sharp)


def fold_late(into: PhaseMechanism, other: PhaseMechanism, into_name: str) -> None:
    """Move `other`'s late-published counters onto `into` (one transaction ran both phases).

    pg_restore --single-transaction publishes its FPI and pg_stat_io counts only when its
    transaction ends, so the load and COMMIT can be told apart for the WAL bytes (insert LSN),
    the waits and the background writers, but not for these: they go on `into`'s row and
    `other` says where they are (`late_in`).
    """
    for name in LATE_FIELDS:
        a, b = getattr(into, name), getattr(other, name)
        setattr(into, name, None if a is None or b is None else a + b)
        setattr(other, name, None)
    if into.writers is not None and other.writers is not None:
        mine, theirs = into.writers["workload"], other.writers.pop("workload")
        for kind in IO_KINDS:
            setattr(mine, kind, getattr(mine, kind) + getattr(theirs, kind))
    other.late_in = into_name


# --------------------------------------------------------------------------- summaries

Values = dict[str, float | None]
"""Quantity → value for one trial (None: not measured)."""

SUMMED = (
    "wal_bytes",
    "wal_fpi",
    "checkpoints",
    *IO_KINDS,
    *(f"{k}_{w}" for k in IO_KINDS for w in WRITERS),
)
"""Every quantity of a summary row, in column order."""


def _folded(m: PhaseMechanism) -> set[str]:
    if m.late_in is None:
        return set()
    out = {*LATE_FIELDS, *(f"{k}_workload" for k in IO_KINDS)}
    return out


def phase_values(phase: PhaseResult) -> tuple[Values, set[str]]:
    """(quantity → value, quantities carried on another phase's row) of one trial's phase.

    Phases stored before pgwx measured mechanisms have only the WAL bytes and extended
    pages their workload read around them (PhaseResult.detail); the rest is unknown.
    """
    m = phase.mechanism
    if m is None:
        out: Values = dict.fromkeys(SUMMED)
        for key, name in (("wal_bytes", "wal_bytes"), ("extended_pages", "extended")):
            if isinstance(phase.detail.get(key), int | float):
                out[name] = phase.detail[key]
        return out, set()
    out = {
        "wal_bytes": m.wal_bytes,
        "wal_fpi": m.wal_fpi,
        "checkpoints": m.checkpoints,
    }
    folded = _folded(m)
    for kind in IO_KINDS:
        for w in WRITERS:
            key = f"{kind}_{w}"
            io = None if m.writers is None else m.writers.get(w)
            out[key] = None if io is None else getattr(io, kind)
        parts = [out[f"{kind}_{w}"] for w in WRITERS if f"{kind}_{w}" not in folded]
        out[kind] = None if m.writers is None else total(parts)
    return out, folded


@dataclass
class MechanismSummary:
    """One table row's mechanism: medians over its trials, waits pooled."""

    values: Values = field(default_factory=dict)
    """Quantity (SUMMED) → median over trials; None when any trial could not measure it."""
    folded: set[str] = field(default_factory=set)
    """Quantities shown on `late_in`'s row instead of this one."""
    late_in: str | None = None
    """The phase whose row carries this phase's late-published counters."""
    rows: int | None = None
    """Median rows of the phase (for WAL per row)."""
    waits: dict[str, int] | None = None
    """Wait → observations pooled over trials, most first; None when never sampled."""
    wait_samples: int = 0
    """Observations behind `waits`."""
    unknown: list[str] = field(default_factory=list)
    """Why values are missing, each reason once."""

    @property
    def wal_per_row(self) -> float | None:
        """Median WAL bytes per row; None when either is unknown."""
        wal = self.values.get("wal_bytes")
        return None if wal is None or not self.rows else wal / self.rows

    def wait_shares(self) -> list[tuple[str, float]]:
        """(wait, share of the observations), most first."""
        if not self.waits or not self.wait_samples:
            return []
        return [(k, v / self.wait_samples) for k, v in self.waits.items()]


def _median(values: list[float | None]) -> float | None:
    if not values or any(v is None for v in values):
        return None
    return statistics.median(v for v in values if v is not None)


def summarize_phase(phases: list[PhaseResult], rows: int | None) -> MechanismSummary:
    """The mechanism of one variant's phase over its trials (one PhaseResult per trial)."""
    per = [phase_values(p) for p in phases]
    folded = set().union(*(f for _, f in per)) if per else set()
    out = MechanismSummary(rows=rows, folded=folded)
    out.values = {k: _median([v[k] for v, _ in per]) for k in SUMMED}
    late = {p.mechanism.late_in for p in phases if p.mechanism is not None}
    out.late_in = next(iter(late - {None}), None)
    _pool_waits(out, [p.mechanism for p in phases])
    return out


def summarize_total(trials: list[list[PhaseResult]]) -> MechanismSummary:
    """The mechanism of whole trials: per trial the sum over its phases, then the median.

    A quantity one phase could not measure makes the trial's total unknown; a quantity a
    phase carries on another phase's row counts there only.
    """
    per_trial: list[Values] = []
    for phases in trials:
        sums: Values = {}
        parts = [phase_values(p) for p in phases]
        for key in SUMMED:
            sums[key] = total(0.0 if key in f else v[key] for v, f in parts)
        per_trial.append(sums)
    out = MechanismSummary()
    out.values = {k: _median([t[k] for t in per_trial]) for k in SUMMED}
    _pool_waits(out, [p.mechanism for phases in trials for p in phases])
    return out


def _pool_waits(out: MechanismSummary, mechanisms: list[PhaseMechanism | None]) -> None:
    pooled: Counter[str] = Counter()
    seen = False
    reasons: list[str] = []
    for m in mechanisms:
        if m is None:
            reasons.append("stored before pgwx measured each phase")
            continue
        reasons.extend(m.unknown)
        if m.waits is not None:
            seen = True
            pooled.update(m.waits)
    out.waits = dict(pooled.most_common()) if seen else None
    out.wait_samples = sum(pooled.values())
    out.unknown = list(dict.fromkeys(reasons))


# --------------------------------------------------------------------------- formatting

UNKNOWN = "?"
"""How a value pgwx could not measure is shown, everywhere."""


def top_waits(summary: MechanismSummary, limit: int = 3) -> str:
    """'IO:DataFileExtend 62% · CPU 30% (n=143)'; '?' when never sampled."""
    if summary.waits is None:
        return UNKNOWN
    if not summary.wait_samples:
        return "idle (n=0)"
    shares = summary.wait_shares()[:limit]
    text = " · ".join(f"{w} {s:.0%}" for w, s in shares)
    return f"{text} (n={summary.wait_samples})"
