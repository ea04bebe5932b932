"""Issue 34, point 4: every statement a profile makes pgwx wait for is bounded client-side.

SQL phases, create, setup and verify were bounded by `params.statement_seconds`; a COPY phase
(slowed by a trigger of the profile's own, after `SET statement_timeout = 0`), a pgbench phase
whose script turns the server's timeout off, and the prepare query were not: each hung the run
as long as the profile liked. Now each ends at the bound, the trial (or the prepare step)
failed with the sentence, and no statement of it is left running on the server.
"""

from __future__ import annotations

import time
from typing import Any

from explorer.models import Profile, Variant
from explorer.server.connect import Target
from tests.support.runs import RunProfile

BOUND = 2.0
SLEEP = 30


def bounded(params: dict[str, Any]) -> Profile:
    return Profile(
        name="bounded", title="bounded", workload="sql",
        params={"statement_seconds": BOUND, **params}, repeats=1, settle_seconds=0,
        variants=[Variant(name="a")],
    )  # fmt: skip


async def still_sleeping(target: Target) -> int:
    conn = await target.connect("test")
    try:
        return int(
            await conn.fetchval(
                "SELECT count(*) FROM pg_stat_activity WHERE query ~ 'pg_sleep' "
                "AND state = 'active' AND pid <> pg_backend_pid()"
            )
        )
    finally:
        await conn.close()


SLOW_TRIGGER = f"""
CREATE FUNCTION slow() RETURNS trigger LANGUAGE plpgsql AS
  $f$ BEGIN PERFORM pg_sleep({SLEEP}); RETURN NEW; END $f$;
CREATE TRIGGER slow BEFORE INSERT ON {{t}} FOR EACH ROW EXECUTE FUNCTION slow();
SET statement_timeout = 0;
"""


async def test_a_copy_phase_is_bounded(any_pg: Target, run_profile: RunProfile) -> None:
    profile = bounded(
        {
            "tables": [{"name": "t", "columns": "a int"}],
            "prepare": {"sql": "SELECT g FROM generate_series(1, 3) g"},
            "setup": SLOW_TRIGGER,
            "phases": [{"name": "load", "copy": "t"}],
        }
    )
    began = time.monotonic()
    record, _ = await run_profile(any_pg, profile, check_clean=False)
    assert time.monotonic() - began < SLEEP
    reason = record.trials[0].reason or ""
    assert reason.startswith("phase load: a statement ran longer than 2 s and was cancelled")
    assert await still_sleeping(any_pg) == 0


async def test_a_pgbench_phase_is_bounded(any_pg: Target, run_profile: RunProfile) -> None:
    profile = bounded(
        {
            "tables": [{"name": "t", "columns": "a int"}],
            "phases": [
                {
                    "name": "bench",
                    "pgbench": f"SET statement_timeout = 0;\nSELECT pg_sleep({SLEEP});\n",
                    "transactions": 1,
                }
            ],
        }
    )
    began = time.monotonic()
    record, _ = await run_profile(any_pg, profile, check_clean=False)
    assert time.monotonic() - began < SLEEP
    reason = record.trials[0].reason or ""
    assert reason.startswith("phase bench: a statement ran longer than 2 s"), reason
    assert await still_sleeping(any_pg) == 0


async def test_the_prepare_query_is_bounded(any_pg: Target, run_profile: RunProfile) -> None:
    profile = bounded(
        {
            "tables": [{"name": "t", "columns": "a int"}],
            "prepare": {"sql": f"SELECT 1 AS a FROM pg_sleep({SLEEP})"},
            "phases": [{"name": "load", "copy": "t"}],
        }
    )
    began = time.monotonic()
    record, _ = await run_profile(any_pg, profile, check_clean=False)
    assert time.monotonic() - began < SLEEP
    assert record.status == "failed"
    assert (record.reason or "").startswith("prepare: a statement ran longer than 2 s"), (
        record.reason
    )
    assert await still_sleeping(any_pg) == 0
