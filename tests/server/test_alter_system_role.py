"""A role granted ALTER SYSTEM ON PARAMETER but unable to read pg_file_settings is not offered
server settings (issue 20: every such trial failed on pg_file_settings); with both, it is."""

from __future__ import annotations

import os

from explorer.lab.profiles.availability import unavailable_reason
from explorer.models import Capabilities, Knobs
from explorer.server.capabilities import probe
from explorer.server.connect import Target

ROLE = f"t20_alter_{os.getpid()}"


async def _caps(target: Target) -> Capabilities:
    conn = await target.connect("test")
    try:
        return await probe(conn, owned=False)
    finally:
        await conn.close()


async def test_alter_system_without_pg_file_settings_is_not_offered(pg18: Target) -> None:
    assert pg18.bundled is not None
    admin = await pg18.connect("test")
    role = Target(dsn=f"host={pg18.bundled.socket_dir} port=5432 user={ROLE} dbname=postgres")
    knobs = Knobs(synchronous_commit="off")
    try:
        await admin.execute(f"CREATE ROLE {ROLE} LOGIN")
        await admin.execute(f"GRANT ALTER SYSTEM ON PARAMETER synchronous_commit TO {ROLE}")
        await admin.execute(f"GRANT ALTER SYSTEM ON PARAMETER fsync TO {ROLE}")
        caps = await _caps(role)
        assert not caps.alter_system
        why = unavailable_reason(knobs, caps, allow_risky=False) or ""
        assert "pg_file_settings" in why and "ALTER SYSTEM" in why, why

        await admin.execute(f"GRANT SELECT ON pg_file_settings TO {ROLE}")
        await admin.execute(f"GRANT EXECUTE ON FUNCTION pg_show_all_file_settings() TO {ROLE}")
        caps = await _caps(role)
        assert caps.alter_system
        assert unavailable_reason(knobs, caps, allow_risky=False) is None
    finally:
        await admin.execute(f"DROP OWNED BY {ROLE}")
        await admin.execute(f"DROP ROLE IF EXISTS {ROLE}")
        await admin.close()
