"""A workload connection in a schema of its own, and a running sampler, on a real server.

Loads end with `flush`: a backend that goes idle within a second of its previous flush
otherwise holds its pg_stat_io / pg_stat_wal counters for 10 s.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import asyncpg

from explorer.lab.measure.sampler import Sampler, SamplerNotice
from explorer.server.capabilities import probe
from explorer.server.connect import Target


@asynccontextmanager
async def lab(target: Target) -> AsyncIterator[tuple[asyncpg.Connection, str]]:
    """A workload connection (application_name pgwx-work-test) and a schema of its own."""
    conn = await target.connect("work-test")
    schema = f"sampler_t_{secrets.token_hex(4)}"
    await conn.execute(f"CREATE SCHEMA {schema}")
    try:
        yield conn, schema
    finally:
        await conn.execute(f"DROP SCHEMA {schema} CASCADE")
        await conn.close()


@asynccontextmanager
async def sampling(target: Target, **kwargs: Any) -> AsyncIterator[tuple[Sampler, list[dict]]]:
    """A running sampler and everything it emitted; stopped (and its connection gone) after."""
    probe_conn = await target.connect("probe")
    caps = await probe(probe_conn, owned=True)
    await probe_conn.close()
    sampler = Sampler(target, caps, **kwargs)
    events: list[dict | SamplerNotice] = []
    task = asyncio.create_task(sampler.run(events.append))
    try:
        assert await sampler.sample_now(timeout=5), "the sampler never produced a sample"
        yield sampler, events
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert task.cancelled(), "run() ended by itself instead of by cancellation"


def samples(events: list) -> list[dict]:
    return [e for e in events if isinstance(e, dict) and e["kind"] == "sample"]


async def flush(conn: asyncpg.Connection, sampler: Sampler) -> None:
    """Publish the workload backend's counters now, and take a reading that includes them."""
    await conn.execute("SELECT pg_stat_force_next_flush()")
    assert await sampler.sample_now()
