"""Issue 34, point 3: nothing of a run outlives it, and no lock pgwx did not take blocks pgwx.

On servers of this module's own with `max_prepared_transactions > 0` (PG 18 and PG 15), a
profile sets its role's password, takes pgwx's own settings-lock key inside a transaction and
ends the phase with `PREPARE TRANSACTION`. After the run: no pgwx role (so nobody logs in with
the chosen password), no pgwx schema, no prepared transaction, and the settings lock is free.
A session or prepared transaction of someone else holding pgwx's key is named as what it
is — never "another pgwx" — and `pgwx restore` goes on.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest

from explorer.lab.profiles.catalog import load_profile
from explorer.lab.run.session import restore_pending
from explorer.lab.safety.owner import LOCK_CLASS, SETTINGS_KEY, RunOwner, ServerBusy
from explorer.models import Notice
from explorer.server.capabilities import probe
from explorer.server.connect import ConnectError, Target
from explorer.server.embedded import LocalServer
from tests.support.runs import RunProfile
from tests.support.server import PG15_BIN, admin_sql

CHOSEN = "chosen-by-the-profile"


@pytest.fixture(scope="module", params=["pg18", "pg15"])
def prepared_pg(request: pytest.FixtureRequest, pg_base: Path) -> Iterator[Target]:
    """A server of the module's own that allows PREPARE TRANSACTION."""
    bindir = PG15_BIN if request.param == "pg15" else None
    if bindir is not None and not (bindir / "initdb").exists():
        pytest.skip("Debian's postgresql-15 is not installed")
    server = LocalServer(pg_base / f"t34-prep-{request.param}", bindir=bindir)
    server.init()
    with (server.data_dir / "postgresql.conf").open("a") as f:
        f.write("max_prepared_transactions = 5\n")
    server.start()
    yield Target(bundled=server)
    server.stop()


async def what_is_left(target: Target) -> dict[str, object]:
    conn = await target.connect("test")
    try:
        return {
            "roles": [
                r[0]
                for r in await conn.fetch("SELECT rolname FROM pg_roles WHERE rolname ~ '^pgwx_'")
            ],
            "schemas": [
                r[0]
                for r in await conn.fetch(
                    "SELECT nspname FROM pg_namespace WHERE nspname ~ '^pgwx_lab'"
                )
            ],
            "prepared": [r[0] for r in await conn.fetch("SELECT gid FROM pg_prepared_xacts")],
            "settings_lock_free": await conn.fetchval(
                "SELECT pg_try_advisory_lock($1, $2) AND pg_advisory_unlock($1, $2)",
                LOCK_CLASS,
                SETTINGS_KEY,
            ),
        }
    finally:
        await conn.close()


def leaving_profile(tmp_path: Path) -> Path:
    path = tmp_path / "leaver.toml"
    path.write_text(
        f'''title = "leaver"
workload = "sql"
repeats = 1
settle_seconds = 0

[params]
[[params.tables]]
name = "t"
columns = "a int"

[[params.phases]]
name = "password"
sql = """DO $$ BEGIN EXECUTE 'ALTER ROLE CURRENT_USER PASSWORD '
    || quote_literal('{CHOSEN}'); END $$"""

[[params.phases]]
name = "prepare"
sql = """BEGIN; INSERT INTO {{t}} VALUES (1);
SELECT pg_advisory_xact_lock({LOCK_CLASS}, {SETTINGS_KEY});
PREPARE TRANSACTION 'pgwx_left_behind';"""

[[variants]]
name = "a"
'''
    )
    return path


async def test_a_prepared_transaction_and_a_chosen_password_do_not_outlive_the_run(
    prepared_pg: Target, run_profile: RunProfile, tmp_path: Path
) -> None:
    before = await what_is_left(prepared_pg)
    assert before == {"roles": [], "schemas": [], "prepared": [], "settings_lock_free": True}
    record, events = await run_profile(
        prepared_pg, load_profile(leaving_profile(tmp_path)), check_clean=False
    )
    # The trial fails (its tables stay locked by the prepared transaction), and says why.
    assert record.trials and "prepared transaction" in (record.trials[0].reason or "")
    assert await what_is_left(prepared_pg) == before
    errors = [e.message for e in events if isinstance(e, Notice) and e.level == "error"]
    left = ("left on the server", "could not drop", "could not roll back", "is left in")
    assert not [m for m in errors if any(w in m for w in left)], errors
    # Nobody logs in with the password the profile chose: its role is gone.
    role = f"pgwx_run_{record.id.replace('-', '_')}"
    with pytest.raises(ConnectError):
        await Target(
            bundled=prepared_pg.bundled, overrides={"user": role, "password": CHOSEN}
        ).connect("test", timeout=5)


async def test_a_lock_pgwx_did_not_take_is_named_and_never_blocks_restore(
    prepared_pg: Target, store: object
) -> None:
    await admin_sql(prepared_pg, "DROP ROLE IF EXISTS mallory", "CREATE ROLE mallory LOGIN")
    mallory = Target(bundled=prepared_pg.bundled, overrides={"user": "mallory"})
    conn = await prepared_pg.connect("test")
    caps = await probe(conn, owned=True)
    await conn.close()
    said: list[str] = []
    try:
        # A session of someone else holding pgwx's settings key, named pgwx-like.
        holder = await mallory.connect("run-20990101-000000-abcdef 1@host")
        await holder.execute("SELECT pg_advisory_lock($1, $2)", LOCK_CLASS, SETTINGS_KEY)
        owner = RunOwner(prepared_pg, "20990101-000000-aaaaaa")
        with pytest.raises(ServerBusy) as busy:
            await owner.open(settings=True)
        await owner.close()
        text = str(busy.value)
        assert "another pgwx" not in text and "not a pgwx's" in text and "mallory" in text
        await restore_pending(prepared_pg, caps, said.append)  # not refused
        await holder.close()

        # The same key held by a prepared transaction of someone else's.
        holder = await mallory.connect("test")
        await holder.execute(
            f"BEGIN; SELECT pg_advisory_xact_lock({LOCK_CLASS}, {SETTINGS_KEY}); "
            "PREPARE TRANSACTION 'mallory_holds'"
        )
        await holder.close()
        owner = RunOwner(prepared_pg, "20990101-000000-bbbbbb")
        with pytest.raises(ServerBusy) as busy:
            await owner.open(settings=True)
        await owner.close()
        text = str(busy.value)
        assert "prepared transaction that is not a pgwx's" in text and "mallory_holds" in text
        await restore_pending(prepared_pg, caps, said.append)  # not refused either
        assert not [m for m in said if "another pgwx (" in m], said
    finally:
        with contextlib.suppress(asyncpg.PostgresError):
            await admin_sql(prepared_pg, "ROLLBACK PREPARED 'mallory_holds'")
        await admin_sql(prepared_pg, "DROP ROLE mallory")


async def test_the_rollback_quotes_a_hostile_gid(prepared_pg: Target, run_profile: RunProfile,
                                                 tmp_path: Path) -> None:  # fmt: skip
    path = leaving_profile(tmp_path)
    path.write_text(
        path.read_text().replace("'pgwx_left_behind'", "'x''; DROP TABLE public.keep; --'")
    )
    await admin_sql(prepared_pg, "CREATE TABLE IF NOT EXISTS public.keep (a int)")
    try:
        record, _ = await run_profile(prepared_pg, load_profile(path), check_clean=False)
        left = await what_is_left(prepared_pg)
        assert left["prepared"] == [] and left["roles"] == [] and left["schemas"] == []
        conn = await prepared_pg.connect("test")
        try:
            assert await conn.fetchval("SELECT to_regclass('public.keep')") is not None
        finally:
            await conn.close()
    finally:
        await admin_sql(prepared_pg, "DROP TABLE IF EXISTS public.keep")
    assert isinstance(record.id, str)


async def test_a_pgwx_putting_settings_back_still_counts_as_a_pgwx(prepared_pg: Target) -> None:
    """The starting pgwx's recovery session (pgwx-admin, pgwx's own user) holds the key: a
    second pgwx is told "another pgwx", and waits, as before."""
    recovering = await prepared_pg.connect("admin")
    try:
        await recovering.execute("SELECT pg_advisory_lock($1, $2)", LOCK_CLASS, SETTINGS_KEY)
        owner = RunOwner(prepared_pg, "20990101-000000-cccccc")
        with pytest.raises(ServerBusy, match="another pgwx"):
            await owner.open(settings=True)
        await owner.close()
    finally:
        await recovering.close()
