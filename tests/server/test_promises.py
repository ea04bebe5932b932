"""Promises about leaving a server as it was, defended against real servers through the Runner.

Each test here failed when the promise it names was broken on purpose in the code (journal
written after the change, the user's own ALTER SYSTEM value lost, no replay at start, no
ALTER SYSTEM privilege ignored, undo skipped on a failed run, failure text not masked).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from explorer.analysis.report import render
from explorer.lab.scope import schema
from explorer.lab.store.results import ResultStore
from explorer.lab.workloads.base import TrialContext, WorkloadError
from explorer.lab.workloads.table_kind import TableKindWorkload
from explorer.models import Knobs, Notice, Profile, TrialStarted, Variant
from explorer.paths import state_dir
from explorer.server.connect import Target
from tests.support.runs import RunProfile, small_profile
from tests.support.server import (
    admin_sql,
    journal_text,
    leave_what_a_killed_pgwx_leaves,
    server_state,
)


def tiny(variants: list[Variant], repeats: int = 1, rows: int = 2000) -> Profile:
    return small_profile("table-kind", variants, rows=rows, repeats=repeats)


# --------------------------------------------------------------------------- journal first


async def test_journal_holds_each_setting_before_alter_system_runs(
    any_pg: Target, run_profile: RunProfile, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every ALTER SYSTEM SET finds its setting already journaled on disk."""
    seen: list[tuple[str, str]] = []
    execute = asyncpg.connection.Connection.execute

    async def watching(self: Any, query: str, *args: Any, **kwargs: Any) -> Any:
        if query.lstrip().upper().startswith("ALTER SYSTEM SET"):
            # a pgwx killed right after this statement leaves only what is on disk now
            seen.append((query, journal_text()))
        return await execute(self, query, *args, **kwargs)

    monkeypatch.setattr(asyncpg.connection.Connection, "execute", watching)
    knobs = Knobs(synchronous_commit="off", temp_buffers="16MB")
    record, _ = await run_profile(
        any_pg, tiny([Variant(name="base"), Variant(name="k", knobs=knobs)])
    )
    assert record.trials[1].settings["synchronous_commit"] == "off"
    names = {q.split()[3].strip('"') for q, _ in seen}
    assert names == {"synchronous_commit", "temp_buffers"}, seen
    for query, journal in seen:
        name = query.split()[3].strip('"')
        assert name in journal, f"{query!r} ran before {name} was journaled"


# --------------------------------------------------------------------------- the user's values


async def test_undo_puts_back_the_users_own_alter_system_value(
    any_pg: Target, run_profile: RunProfile
) -> None:
    await admin_sql(
        any_pg, "ALTER SYSTEM SET synchronous_commit = 'local'", "SELECT pg_reload_conf()"
    )
    try:
        before = await server_state(any_pg)
        assert ("synchronous_commit", "local") in before["auto_conf"]
        knobs = Knobs(synchronous_commit="off")
        record, _ = await run_profile(any_pg, tiny([Variant(name="off", knobs=knobs)]))
        assert record.trials[0].settings["synchronous_commit"] == "off"
        after = await server_state(any_pg)
        # run_profile compared everything; say the point of this test plainly too
        assert ("synchronous_commit", "local") in after["auto_conf"]
        assert after["settings"]["synchronous_commit"] == "local"  # type: ignore[index]
    finally:
        await admin_sql(any_pg, "ALTER SYSTEM RESET synchronous_commit", "SELECT pg_reload_conf()")


async def test_undo_puts_back_the_users_restart_only_values(
    pg18: Target, run_profile: RunProfile
) -> None:
    # The user's own lines in auto.conf, equal to the defaults so no restart is needed here.
    await admin_sql(
        pg18, "ALTER SYSTEM SET wal_level = 'replica'", "ALTER SYSTEM SET max_wal_senders = 10"
    )
    try:
        before = await server_state(pg18)
        knobs = Knobs(wal_level="minimal")
        record, _ = await run_profile(pg18, tiny([Variant(name="minimal", knobs=knobs)]))
        assert record.trials[0].settings["wal_level"] == "minimal"
        after = await server_state(pg18)
        assert after["auto_conf"] == before["auto_conf"]
        assert ("wal_level", "replica") in after["auto_conf"]
        assert ("max_wal_senders", "10") in after["auto_conf"]
    finally:
        await admin_sql(pg18, "ALTER SYSTEM RESET wal_level", "ALTER SYSTEM RESET max_wal_senders")


# --------------------------------------------------------------------------- replay at start


async def test_runner_puts_back_a_dead_pgwxs_journal_before_any_trial(
    pg18: Target, store: ResultStore
) -> None:
    from explorer.lab.run.runner import Runner, RunOptions
    from explorer.lab.run.session import Session

    before = await server_state(pg18)
    await leave_what_a_killed_pgwx_leaves(pg18)
    auto_conf = Path(pg18.bundled.data_dir) / "postgresql.auto.conf"  # type: ignore[union-attr]
    at_first_trial: list[tuple[str, str]] = []

    def watch(event: object) -> None:
        if isinstance(event, TrialStarted) and not at_first_trial:
            at_first_trial.append((journal_text(), auto_conf.read_text()))

    # The session both front ends open puts it back, once, before any run starts.
    session = Session(pg18, store)
    caps = await session.open()
    runner = Runner(
        pg18, tiny([Variant(name="base")]), store, RunOptions(settle_seconds=0), caps=caps
    )
    record = await runner.run(watch)
    assert record.status == "finished"
    journal, auto = at_first_trial[0]
    assert "synchronous_commit" not in journal, "the journal was still pending at the trial"
    assert "synchronous_commit" not in auto, "the dead run's setting was still in auto.conf"
    assert await server_state(pg18) == before


# --------------------------------------------------------------------------- privileges


async def test_variants_needing_alter_system_are_skipped_without_the_privilege(
    pg18: Target, store: ResultStore
) -> None:
    from explorer.lab.run.runner import Runner, RunOptions

    role = "pgwx_t_noalter"
    conn = await pg18.connect("test")
    try:
        db = await conn.fetchval("SELECT current_database()")
        await conn.execute(f"DROP ROLE IF EXISTS {role}")
        await conn.execute(f"CREATE ROLE {role} LOGIN")
        await conn.execute(f'GRANT CREATE ON DATABASE "{db}" TO {role}')
    finally:
        await conn.close()
    plain = Target(overrides={**pg18.connect_kwargs(), "user": role})
    try:
        before = await server_state(pg18)
        knobs = Knobs(synchronous_commit="off")
        profile = tiny([Variant(name="base"), Variant(name="sync-off", knobs=knobs)])
        events: list[Any] = []
        runner = Runner(plain, profile, store, RunOptions(settle_seconds=0))
        record = await runner.run(events.append)
        by = {t.variant: t for t in record.trials}
        assert by["base"].status == "ok"
        assert by["sync-off"].status == "skipped"
        assert "ALTER SYSTEM" in (by["sync-off"].reason or "")
        warnings = [e.message for e in events if isinstance(e, Notice) and e.level == "warning"]
        assert any("sync-off" in m and "ALTER SYSTEM" in m for m in warnings)
        assert await server_state(pg18) == before
    finally:
        await admin_sql(pg18, f'REVOKE CREATE ON DATABASE "{db}" FROM {role}', f"DROP ROLE {role}")


# --------------------------------------------------------------------------- failures


def failing_trial(error: Exception, created: list[str]) -> Any:
    """A table-kind trial that fails after the variant's settings are in force."""

    async def trial(self: TableKindWorkload, ctx: TrialContext) -> None:
        created.append(await ctx.db.fetchval("SHOW synchronous_commit"))
        await ctx.db.execute(f"CREATE TABLE {schema()}.half_done (i int)")
        raise error

    return trial


async def test_failed_run_still_undoes_settings_and_drops_the_schema(
    any_pg: Target, run_profile: RunProfile, store: ResultStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[str] = []
    monkeypatch.setattr(
        TableKindWorkload, "trial", failing_trial(ValueError("unexpected boom"), seen)
    )
    profile = tiny([Variant(name="off", knobs=Knobs(synchronous_commit="off", fsync=False))])
    before = await server_state(any_pg)
    # A bug (not the user's error) is raised on to the front end once everything is undone.
    with pytest.raises(ValueError, match="unexpected boom"):
        await run_profile(any_pg, profile, allow_risky=True)
    assert seen == ["off"], "the failure must come while the variant's setting is in force"
    assert await server_state(any_pg) == before, "settings, auto.conf and pgwx_lab put back"
    (record,) = store.list_runs()
    assert record.status == "failed" and "internal error (see " in (record.reason or "")


async def test_failure_text_with_a_password_is_stored_and_shown_masked(
    pg18: Target, run_profile: RunProfile, store: ResultStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "s3cretPW"
    dsn = f"postgresql://bob:{secret}@db.example/app"
    monkeypatch.setattr(
        TableKindWorkload,
        "trial",
        failing_trial(WorkloadError(f"could not reach {dsn}: refused"), []),
    )
    record, events = await run_profile(pg18, tiny([Variant(name="a")]))
    assert record.trials[0].status == "failed"
    assert "postgresql://bob:***@db.example/app" in (record.trials[0].reason or "")
    shown = render(record, "md") + "".join(e.model_dump_json() for e in events)
    stored = render(store.load(record.id), "md") + "".join(
        e.model_dump_json() for e in store.events(record.id)
    )
    assert "could not reach" in shown and "could not reach" in stored
    assert secret not in shown and secret not in stored
    # and not in the database file either (a later `pgwx report` or replay reads it)
    store.db.commit()
    raw = b"".join(
        p.read_bytes() for p in store.path.parent.glob(store.path.name + "*") if p.is_file()
    )
    assert b"could not reach" in raw and secret.encode() not in raw


async def test_run_failure_reason_with_a_password_is_masked(
    pg18: Target, run_profile: RunProfile, store: ResultStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "hunter2x"
    monkeypatch.setattr(
        TableKindWorkload,
        "trial",
        failing_trial(ValueError(f"lost host=db user=bob password={secret} midway"), []),
    )
    # A ValueError is a bug: the run is stored as an internal error, the traceback logged.
    with pytest.raises(ValueError):
        await run_profile(pg18, tiny([Variant(name="a")]))
    (record,) = store.list_runs()
    assert record.status == "failed" and "internal error (see " in (record.reason or "")
    log = (state_dir() / "pgwx.log").read_text()
    assert "lost host=db" in log and "password=***" in log
    ended = json.dumps([e.model_dump(mode="json") for e in store.events(record.id)])
    assert secret not in (record.reason or "") and secret not in ended and secret not in log
