"""The fence is checked from the server's side before a profile's SQL runs (issue 40, promise
3): a grant to PUBLIC on something outside the run's schema, which the run's role would then
hold too, makes pgwx refuse the run, naming it, before any of the profile's SQL has run."""

from __future__ import annotations

import pytest

from explorer.lab.store.results import ResultStore
from explorer.models import Profile, Variant
from explorer.server.connect import Target
from tests.support.runs import RunProfile
from tests.support.server import admin_sql

PROFILE = Profile(
    name="fenced",
    title="fenced",
    workload="sql",
    params={
        "tables": [{"name": "t", "columns": "a int"}],
        "phases": [{"name": "load", "sql": "INSERT INTO {t} VALUES (1)"}],
    },
    repeats=1,
    settle_seconds=0,
    variants=[Variant(name="a")],
)

PLANTED = {
    "table": (
        "CREATE TABLE public.pgwx_t_open (a int)",
        "GRANT INSERT ON public.pgwx_t_open TO PUBLIC",
        "DROP TABLE public.pgwx_t_open",
        "table public.pgwx_t_open",
    ),
    "sequence": (
        "CREATE SEQUENCE public.pgwx_t_seq",
        "GRANT UPDATE ON SEQUENCE public.pgwx_t_seq TO PUBLIC",
        "DROP SEQUENCE public.pgwx_t_seq",
        "sequence public.pgwx_t_seq",
    ),
    "schema": (
        "CREATE SCHEMA pgwx_t_open_schema",
        "GRANT CREATE ON SCHEMA pgwx_t_open_schema TO PUBLIC",
        "DROP SCHEMA pgwx_t_open_schema",
        "schema pgwx_t_open_schema",
    ),
}
"""What is planted (made, then granted to PUBLIC), how it is removed, and how pgwx names it."""


@pytest.mark.parametrize("kind", list(PLANTED))
async def test_a_grant_to_public_outside_the_schema_refuses_the_run(
    pg18: Target, run_profile: RunProfile, store: ResultStore, kind: str
) -> None:
    make, grant, drop, named = PLANTED[kind]
    await admin_sql(pg18, make, grant)
    try:
        record, _ = await run_profile(pg18, PROFILE)
    finally:
        await admin_sql(pg18, drop)
    assert record.status == "failed"
    assert (record.reason or "").startswith(
        "the fence around the profile's SQL would not hold: any role may still write "
    ), record.reason
    assert f"{named} (granted to PUBLIC); revoke that from PUBLIC, or pass --trust-sql" in (
        record.reason or ""
    )
    assert record.trials == []  # refused before any of the profile's SQL ran
    assert store.load(record.id).reason == record.reason  # and stored as such
    # Without the grant the same profile runs.
    record, _ = await run_profile(pg18, PROFILE)
    assert record.status == "finished", record.reason
