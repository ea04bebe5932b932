"""Issue 34, point 4: a run's own data is bounded by the run's size, not by fixed numbers.

The prepared data's bound grows with the profile's sizes times --scale and --allow-large raises
it; the verify row is cut on the server (a 50 MB value never crosses the wire whole); and the
store cuts any text longer than its own bound at its door, whoever made it (here a server's
error message of 300,000 characters).
"""

from __future__ import annotations

import tracemalloc
from typing import Any

import pytest

from explorer.lab.store.results import ResultStore
from explorer.lab.store.textbound import STORED_TEXT_MAX
from explorer.lab.workloads import data_bounds as bounds
from explorer.lab.workloads.data_bounds import (
    NOTE_CEILING,
    NOTE_FLOOR,
    NOTE_LARGE,
    PREPARED_CEILING,
    data_bounds,
)
from explorer.models import Profile, Variant
from explorer.server.connect import Target
from tests.support.runs import RunProfile


def sized(params: dict[str, Any]) -> Profile:
    return Profile(
        name="sized", title="sized", workload="sql", params=params, repeats=1,
        settle_seconds=0, variants=[Variant(name="a")],
    )  # fmt: skip


def test_the_bounds_follow_the_runs_size() -> None:
    small, larger = data_bounds(100_000, 1.0), data_bounds(100_000_000, 10.0)
    assert small.prepared_bytes < larger.prepared_bytes <= PREPARED_CEILING
    assert small.note_chars == NOTE_FLOOR < larger.note_chars <= NOTE_CEILING
    huge = data_bounds(10**12, 1e6)
    assert huge.prepared_bytes == PREPARED_CEILING and huge.note_chars == NOTE_CEILING
    lifted = data_bounds(10**12, 1e6, allow_large=True)
    assert lifted.prepared_bytes > PREPARED_CEILING and lifted.note_chars == NOTE_LARGE
    assert NOTE_LARGE <= STORED_TEXT_MAX


async def test_prepared_data_is_bounded_by_the_sizes_and_scale(
    pg18: Target, run_profile: RunProfile, monkeypatch: pytest.MonkeyPatch
) -> None:
    """2 MB of prepared data: over the bound of a profile of 1,000 rows (1.6 MB), within it
    at --scale 2 (3.2 MB) and with --allow-large."""
    monkeypatch.setattr(bounds, "PREPARED_FLOOR", 1_000_000)
    profile = sized(
        {
            "sizes": {"rows": 1000},
            "tables": [{"name": "t", "columns": "a text"}],
            "prepare": {"sql": "SELECT repeat('x', 999) FROM generate_series(1, 2000)"},
            "phases": [{"name": "load", "copy": "t"}],
        }
    )
    record, _ = await run_profile(pg18, profile, check_clean=False)
    assert record.status == "failed"
    reason = record.reason or ""
    assert "over this run's bound of 1.5 MiB (set by its sizes and --scale)" in reason, reason
    assert "pass --allow-large to raise the bound" in reason
    record, _ = await run_profile(pg18, profile, check_clean=False, scale=2.0)
    assert record.status == "finished", record.reason
    assert record.trials[0].phases[0].rows == 2000
    record, _ = await run_profile(pg18, profile, check_clean=False, allow_large=True)
    assert record.status == "finished", record.reason


async def test_a_50_mb_verify_value_is_cut_on_the_server(
    pg18: Target, run_profile: RunProfile, store: ResultStore
) -> None:
    profile = sized(
        {
            "tables": [{"name": "t", "columns": "a int"}],
            "phases": [{"name": "go", "sql": "INSERT INTO {t} VALUES (1)"}],
            "verify": "SELECT count(*) AS n, repeat('x', 50000000) AS big, NULL AS nothing "
            "FROM {t} -- a comment at the end",
        }
    )
    tracemalloc.start()
    try:
        record, _ = await run_profile(pg18, profile, check_clean=False)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert record.status == "finished", record.reason
    note = record.trials[0].phases[-1].detail["verify"]
    assert note.startswith("n=1, big=xxx") and len(note) < NOTE_FLOOR + 100
    assert note.endswith(
        "… (cut: 50,000,023 characters; notes keep 2,000, 60,000 with --allow-large)"
    ), note[-100:]
    # Fetched whole, the value alone is 50 MB in this process (twice: bytes, then text).
    assert peak < 20 * 1024**2, f"{peak:,} bytes at the peak"


async def test_a_verify_that_is_not_a_query_says_what_verify_must_be(
    pg18: Target, run_profile: RunProfile
) -> None:
    profile = sized(
        {
            "tables": [{"name": "t", "columns": "a int"}],
            "phases": [{"name": "go", "sql": "INSERT INTO {t} VALUES (1)"}],
            "verify": "SHOW work_mem",
        }
    )
    record, _ = await run_profile(pg18, profile, check_clean=False)
    reason = record.trials[0].reason or ""
    assert reason.startswith("verify: syntax error") and "SELECT, VALUES, TABLE" in reason
    # Read from a subquery, a verify cannot write (the guard no longer plans it).
    params = {**profile.params, "verify": "WITH d AS (DELETE FROM {t} RETURNING a) SELECT 1"}
    record, _ = await run_profile(pg18, sized(params), check_clean=False)
    assert "must be at the top level" in (record.trials[0].reason or ""), record.trials[0].reason


async def test_the_store_cuts_any_long_text_at_its_door(
    pg18: Target, run_profile: RunProfile, store: ResultStore
) -> None:
    """A server's error of 300,000 characters fails the trial; the reason, the notice and the
    event that carry it are each kept at the store's bound."""
    profile = sized(
        {
            "tables": [{"name": "t", "columns": "a int"}],
            "phases": [
                {
                    "name": "go",
                    "sql": "DO $$ BEGIN RAISE EXCEPTION '%', repeat('y', 300000); END $$",
                }
            ],
        }
    )
    record, _ = await run_profile(pg18, profile, check_clean=False)
    reason = record.trials[0].reason or ""
    assert "cut by the results store: 300,010 characters" in reason, reason[-100:]
    assert len(reason) < STORED_TEXT_MAX + 100
    longest = max(
        len(row[0])
        for table in ("trials", "events")
        for row in store.db.execute(
            f"SELECT {'result' if table == 'trials' else 'event'} FROM {table}"
        )
    )
    assert longest < STORED_TEXT_MAX + 1_000
    events = list(store.events(record.id))
    assert any("cut by the results store" in getattr(e, "message", "") for e in events)
