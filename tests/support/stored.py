"""Synthetic runs and trials for the results store's tests: a quick-demo run on a PG 18
superuser's server (reached by a DSN, or the bundled one), `minutes_ago` old, and an ok
trial with one timed phase; a fresh database for a PostgreSQL store."""

from __future__ import annotations

import asyncio
import datetime as dt
import os
from collections.abc import Iterator
from contextlib import contextmanager

import asyncpg

from explorer.lab.profiles.catalog import load_profile
from explorer.models import PhaseResult, RunRecord, ServerInfo, TrialResult
from explorer.server.embedded import LocalServer
from tests.support.runs import fake_caps


def record(run_id: str, minutes_ago: float = 0, profile: str = "quick-demo") -> RunRecord:
    return RunRecord(
        id=run_id,
        profile=load_profile(profile),
        server=ServerInfo(
            dsn_masked="postgresql://me:***@db/app", bundled=False, capabilities=fake_caps(180006)
        ),
        started_at=dt.datetime.now(dt.UTC) - dt.timedelta(minutes=minutes_ago),
    )


def trial(run_id: str, variant: str = "logged", repeat: int = 1, secs: float = 1.0) -> TrialResult:
    return TrialResult(
        run_id=run_id,
        variant=variant,
        repeat=repeat,
        status="ok",
        started_at=dt.datetime.now(dt.UTC),
        phases=[PhaseResult(name="load", seconds=secs, rows=10)],
    )


def bundled_record(run_id: str, minutes_ago: float) -> RunRecord:
    """A quick-demo run on pgwx's bundled server, `minutes_ago` old."""
    return RunRecord(
        id=run_id,
        profile=load_profile("quick-demo"),
        server=ServerInfo(dsn_masked="bundled", bundled=True, capabilities=fake_caps(180006)),
        started_at=dt.datetime.now(dt.UTC) - dt.timedelta(minutes=minutes_ago),
    )


def store_url(server: LocalServer, database: str, password: str | None = None) -> str:
    """A `postgresql://` results-store URL for `database` on a session server's socket."""
    kw = server.connect_kwargs(database)
    auth = f"{kw['user']}:{password}" if password else str(kw["user"])
    return f"postgresql://{auth}@/{database}?host={kw['host']}&port={kw['port']}"


@contextmanager
def fresh_database(server: LocalServer, prefix: str = "pgwx_store") -> Iterator[str]:
    """A new, empty database on `server` for one test, dropped afterwards; its name."""

    async def admin(sql: str) -> None:
        conn = await asyncpg.connect(**server.connect_kwargs())  # type: ignore[arg-type]
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    database = f"{prefix}_{os.urandom(4).hex()}"
    asyncio.run(admin(f"CREATE DATABASE {database}"))
    try:
        yield database
    finally:
        asyncio.run(admin(f"DROP DATABASE {database} WITH (FORCE)"))


def history_runs(*slowdowns: float) -> list[RunRecord]:
    """quick-demo runs an hour apart, oldest first: the second variant `slowdown` times the
    baseline's duration, seven trials a side."""
    out = []
    for n, slow in enumerate(slowdowns):
        rec = record(f"2026010{n + 1}-000000-aaaaa{n}", minutes_ago=60 * (len(slowdowns) - n))
        rec.profile.variants[1:] = [rec.profile.variants[1]]
        other = rec.profile.variants[1].name
        for rep in range(1, 8):
            rec.trials.append(trial(rec.id, "logged", rep, secs=1.0 + rep / 1000))
            rec.trials.append(trial(rec.id, other, rep, secs=slow + rep / 1000))
        out.append(rec)
    return out
