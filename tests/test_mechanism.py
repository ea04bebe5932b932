"""The mechanism behind each phase, on real servers: WAL, writers, checkpoints, waits."""

from __future__ import annotations

from explorer.models import FkTiming, Knobs, TableKind, Variant
from explorer.server.connect import Target
from tests.conftest import RunProfile, small_profile


async def test_explore(pg18: Target, run_profile: RunProfile) -> None:
    profile = small_profile(
        "restore",
        [Variant(name="none"), Variant(name="after", knobs=Knobs(fk=FkTiming.AFTER_LOAD))],
        rows=50_000,
    )
    record, _ = await run_profile(pg18, profile, sampler=True)
    for t in record.trials:
        for p in t.phases:
            print(t.variant, p.name, round(p.seconds, 3), p.rows, p.mechanism)
    profile = small_profile(
        "bulk-write",
        [
            Variant(name="logged"),
            Variant(name="unlogged", knobs=Knobs(table_kind=TableKind.UNLOGGED)),
        ],
        rows=100_000,
    )
    record, _ = await run_profile(pg18, profile, sampler=True)
    for t in record.trials:
        for p in t.phases:
            print(t.variant, p.name, round(p.seconds, 3), p.rows, p.mechanism)
