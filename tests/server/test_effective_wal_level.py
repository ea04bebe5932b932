"""PostgreSQL 19's effective_wal_level verifies the WAL level a variant runs at (issue 37,
point 5): read where the server reports it, never made up before.

No 19 build can be installed here: a session-local pg_settings of 19's shape (the catalog's
rows plus effective_wal_level) shadows the catalog's view, as in test_ready_for_19.
"""

from __future__ import annotations

from explorer.lab.measure.wal_level import wal_level
from explorer.server.connect import Target


async def test_the_level_in_force_is_read_and_checked_where_reported(pg18: Target) -> None:
    conn = await pg18.connect("test")
    try:
        real = await wal_level(conn)
        await conn.execute(
            "CREATE TEMP VIEW pg_settings AS SELECT name, setting FROM pg_catalog.pg_settings "
            "UNION ALL SELECT 'effective_wal_level', 'logical'"
        )
        nineteen = await wal_level(conn)
    finally:
        await conn.close()
    # 18 has no effective_wal_level: unknown, nothing to check against
    assert real.setting in ("replica", "minimal", "logical") and real.effective is None
    assert real.mismatch("replica") is None and real.mismatch("minimal") is None
    # 19 raises replica to logical while a logical slot exists: said, in one sentence
    assert nineteen.setting == real.setting and nineteen.effective == "logical"
    said = nineteen.mismatch("replica")
    assert said is not None and "effective_wal_level) is logical" in said
    assert nineteen.mismatch("logical") is None
    assert nineteen.mismatch(None) is None  # no wal_level knob: nothing asked


async def test_15_has_no_effective_wal_level(pg15: Target) -> None:
    conn = await pg15.connect("test")
    try:
        level = await wal_level(conn)
    finally:
        await conn.close()
    assert level.setting is not None and level.effective is None
