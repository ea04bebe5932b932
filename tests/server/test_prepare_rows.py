"""Issue 19: prepare rows are fetched through one prepared statement and written by pgwx.

The COPY text file pgwx writes itself must load back exactly what the query returned: every
common type, NULLs, and text full of tabs, newlines, backslashes and quotes, on PG 18 and 15.
"""

from __future__ import annotations

from typing import Any

import pytest

from explorer.models import Profile, Variant
from explorer.server.connect import Target
from tests.support.runs import RunProfile
from tests.support.server import admin_sql

COLUMNS = (
    "id int, t text, n numeric, f float8, ts timestamptz, d date, iv interval, b bytea, "
    "j jsonb, arr int[], tarr text[], grid int[], ok bool, u uuid, v varchar(20)"
)
ROWS = r"""
INSERT INTO public.pgwx_rows VALUES
 (1, E'tab\there\nnew line \\ back "quoted" ''single'' é', 12345.678901234567890, 'NaN',
  '2024-02-29 23:59:59.123456+02', '2024-01-01', '1 day 02:03:04.5', '\x00ff5c0a',
  '{"a": [1, "x\ty"], "b": null}', ARRAY[1, NULL, 3], ARRAY['a b', '', 'NULL', '{x}', 'q"q', 'b\s'],
  ARRAY[[1, 2], [3, 4]], true, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 'short'),
 (2, NULL, NULL, '-Infinity', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
 (3, '', -0.5, 1e-300, 'infinity', '0001-01-01 BC', '-3 months', '', '[]', '{}', '{}', '{}',
  false, '00000000-0000-0000-0000-000000000000', '\N')
"""
CHECKSUM = "SELECT md5(string_agg(r::text, '|' ORDER BY id)) FROM {table} r"


def rows_profile(columns: str) -> Profile:
    params: dict[str, Any] = {
        "tables": [{"name": "copy_of", "columns": COLUMNS}],
        "prepare": {"source": "public.pgwx_rows", "columns": columns, "order_by": "id"},
        "phases": [{"name": "load", "copy": "copy_of"}],
        "verify": CHECKSUM.format(table="{copy_of}").replace(" FROM", " AS h FROM", 1),
    }
    params["prepare"]["limit"] = 10
    return Profile(
        name="rows", title="rows", workload="sql", params=params, repeats=1, settle_seconds=0,
        variants=[Variant(name="a")],
    )  # fmt: skip


@pytest.fixture
async def rows_table(any_pg: Target) -> Any:
    table = "public.pgwx_rows"
    create = f"CREATE TABLE {table} ({COLUMNS})"
    await admin_sql(any_pg, f"DROP TABLE IF EXISTS {table}", create, ROWS)
    yield any_pg
    await admin_sql(any_pg, "DROP TABLE IF EXISTS public.pgwx_rows")


async def test_prepared_rows_load_back_exactly(rows_table: Target, run_profile: RunProfile) -> None:
    conn = await rows_table.connect("test")
    try:
        expected = await conn.fetchval(CHECKSUM.format(table="public.pgwx_rows"))
    finally:
        await conn.close()
    record, _ = await run_profile(rows_table, rows_profile("*"))
    assert record.trials, record.reason
    trial = record.trials[0]
    assert trial.status == "ok", trial.reason
    assert trial.phases[0].rows == 3
    assert trial.phases[-1].detail["verify"] == f"h={expected}"


async def test_a_column_pgwx_cannot_write_is_named(
    rows_table: Target, run_profile: RunProfile
) -> None:
    profile = rows_profile("*")
    profile.params["prepare"] = {"sql": "SELECT 1 AS id, int4range(1, 5) AS r"}
    record, _ = await run_profile(rows_table, profile)
    assert record.status == "failed"
    assert record.reason == (
        "prepare: column r is of type int4range, which pgwx cannot write to its data file; "
        "cast it to text in the query (r::text)"
    )
