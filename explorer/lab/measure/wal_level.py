"""The WAL level in force, where the server says it (PostgreSQL 19's `effective_wal_level`).

From 19 the level a server runs at may differ from its `wal_level` setting: `replica` is
raised to `logical` while a logical replication slot exists, and the WAL a load writes follows
the level in force, not the setting. pgwx reads both from `pg_settings` (one view, so a test
can shadow it with a session-local view of 19's shape) and says so when a variant asked for a
level that is not the one in force. Before 19 there is no such setting: the setting is the
level, and nothing is made up.
"""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg

WAL_LEVEL_SQL = (
    "SELECT (SELECT setting FROM pg_settings WHERE name = 'wal_level') AS wal_level, "
    "(SELECT setting FROM pg_settings WHERE name = 'effective_wal_level') AS effective"
)
"""wal_level and effective_wal_level (NULL where the server has no such setting)."""


@dataclass(frozen=True)
class WalLevel:
    """What one session's server says about its WAL level."""

    setting: str | None
    """The `wal_level` setting."""
    effective: str | None
    """`effective_wal_level` (19+); None where the server does not report it."""

    def mismatch(self, asked: str | None) -> str | None:
        """One sentence when a variant asked for `asked` and another level is in force.

        Checked against the level in force where the server reports it (19+), else against
        the setting (a wal_level the server could not take, e.g. skipped on a server pgwx
        does not own, is said where it was skipped, not here).
        """
        if asked is None or self.effective is None or self.effective == asked:
            return None
        return (
            f"wal_level is {self.setting or asked} but the level in force "
            f"(effective_wal_level) is {self.effective}: this variant's WAL is {self.effective}'s"
        )


async def wal_level(conn: asyncpg.Connection) -> WalLevel:
    """The WAL level `conn`'s server runs at, read from pg_settings."""
    row = await conn.fetchrow(WAL_LEVEL_SQL)
    if row is None:  # a SELECT without FROM always returns its one row
        return WalLevel(None, None)
    return WalLevel(row["wal_level"], row["effective"])
