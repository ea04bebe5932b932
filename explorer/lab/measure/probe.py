"""The live phase probe: brackets one phase with sampler readings.

A reading at the start, the workload's statistics flushed and its helper processes
(pg_restore, pgbench) gone at the end, then a last reading. What the sampler summed in between
is the phase's `PhaseMechanism` (summarised for the table by `explorer.analysis.mechanism`).
"""

from __future__ import annotations

import asyncio
import time

import asyncpg

from explorer.lab.measure.sampler import TrialSampler
from explorer.models import PhaseMechanism

EDGE_TIMEOUT = 5.0
"""Seconds to wait for the reading at a phase's edge (a loaded machine can be slow)."""
QUIESCE_TIMEOUT = 10.0
"""Seconds to wait for a finished tool's sessions to leave (and so publish their counters)."""

_GONE_SQL = """
SELECT count(*) FROM pg_stat_activity
WHERE starts_with(application_name, $1) AND NOT (pid = ANY($2::int[]))
"""


class PhaseProbe:
    """Brackets phases with sampler readings on behalf of one trial.

    Args:
        sampler: The run's sampler.
        conn: A session that is not the workload's, to see when helper processes are gone.
        prefix: application_name prefix of exactly this run's workload sessions
            (`explorer.lab.scope.work_prefix`). Another pgwx's sessions on the same server
            must not count: a phase used to wait its whole QUIESCE_TIMEOUT for a neighbour's
            trial to end (issue 20: 73 s in silence beside a run holding fsync=off).
    """

    def __init__(self, sampler: TrialSampler, conn: asyncpg.Connection, prefix: str) -> None:
        self.sampler = sampler
        self.conn = conn
        self.prefix = prefix

    async def begin(self, name: str) -> None:
        """Take a reading now and open `name`'s window there."""
        sharp = await self.sampler.sample_now(EDGE_TIMEOUT)
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
        sharp = await self.sampler.sample_now(EDGE_TIMEOUT)
        return self.sampler.end_phase(sharp=sharp)
