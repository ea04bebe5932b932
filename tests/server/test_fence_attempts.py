"""Issue 19 (items 1, 2, 6, 7): the server fences a profile's own SQL, and pgwx drops only its own.

Every attempt of the issue runs as a real profile on PG 18 and PG 15, plainly and (where the
early check would catch the plain form) hidden from it inside `DO … EXECUTE`, so it is the
server that refuses it. Before and after each run the test compares what the SQL could have
changed: pg_settings, postgresql.auto.conf, every schema, table, ACL, role and large object
outside pgwx's schema, the rows of a user's table, a bystander's session, and the files a
program would have written. The user's look-alike schemas (`pgwx_lab`, `pgwx_lab_mydata`,
`pgwx_lab_<a run id pgwx never made>`) are part of that world, so they survive every run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from explorer.lab.profiles.catalog import ProfileError, find_profile
from explorer.lab.profiles.check import check_file, check_on_server
from explorer.lab.run.runner import Runner, RunOptions
from explorer.lab.run.session import recover
from explorer.lab.safety.fence import build_fence, tear_down
from explorer.lab.scope import create_marked_schema
from explorer.lab.workloads import build_workload
from explorer.lab.workloads.sql_spec import SqlParams
from explorer.models import Notice, Profile, Variant
from explorer.server.capabilities import probe
from explorer.server.connect import Target
from tests.support.runs import RunProfile
from tests.support.server import admin_sql

LOOK_ALIKES = ("pgwx_lab", "pgwx_lab_mydata", "pgwx_lab_20250101_000000_abcdef")
"""Schemas a user made, named like pgwx's, each with a table and a row."""


@dataclass
class Bait:
    """What an attempt aims at: the server, a bystander's session, a folder for programs."""

    target: Target
    bystander: asyncpg.Connection
    drop: Path
    """World-writable folder: a program run by the server or by pgwx would leave a file."""


async def world(bait: Bait) -> dict[str, Any]:
    """Everything an escaped statement could change, read as pgwx's superuser."""
    conn = await bait.target.connect("test")
    try:
        out: dict[str, Any] = {
            "settings": await conn.fetch("SELECT name, setting FROM pg_settings ORDER BY name"),
            "file_settings": await conn.fetch(
                "SELECT sourcefile, name, setting FROM pg_file_settings ORDER BY seqno"
            ),
            "schemas": await conn.fetch(
                "SELECT nspname, nspacl::text, obj_description(oid, 'pg_namespace') "
                "FROM pg_namespace WHERE nspname !~ '^pg_(toast_)?temp_' ORDER BY 1"
            ),
            "objects": await conn.fetch(
                "SELECT n.nspname, c.relname, c.relkind, c.relacl::text FROM pg_class c "
                "JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname !~ '^pg_(toast_)?temp_' AND n.nspname <> 'pg_toast' "
                "ORDER BY 1, 2"
            ),
            "functions": await conn.fetchval(
                "SELECT count(*) FROM pg_proc WHERE pronamespace <> 'pg_catalog'::regnamespace"
            ),
            "roles": await conn.fetch(
                "SELECT rolname, rolsuper, rolcreaterole, rolcanlogin FROM pg_roles ORDER BY 1"
            ),
            "members": await conn.fetch("SELECT roleid, member FROM pg_auth_members ORDER BY 1, 2"),
            "databases": await conn.fetch(
                "SELECT datname, datacl::text FROM pg_database ORDER BY 1"
            ),
            "large_objects": await conn.fetchval("SELECT count(*) FROM pg_largeobject_metadata"),
            "victim": await conn.fetch("SELECT i FROM public.victim ORDER BY i"),
            "look_alikes": [
                await conn.fetchval(f"SELECT count(*) FROM {name}.mine") for name in LOOK_ALIKES
            ],
            "bystander": await conn.fetchval(
                "SELECT count(*) FROM pg_stat_activity WHERE pid = $1",
                bait.bystander.get_server_pid(),
            ),
        }
    finally:
        await conn.close()
    server = bait.target.bundled
    assert server is not None
    out["auto_conf"] = (server.data_dir / "postgresql.auto.conf").read_text()
    out["files"] = sorted(p.name for p in bait.drop.iterdir())
    return {
        k: [tuple(r) if isinstance(r, asyncpg.Record) else r for r in v]
        if isinstance(v, list)
        else v
        for k, v in out.items()
    }


@pytest.fixture
async def bait(any_pg: Target) -> AsyncIterator[Bait]:
    """A user's table, look-alike schemas, a bystander session and a drop folder."""
    drop = Path(tempfile.mkdtemp(prefix="pgwx-drop-", dir="/tmp"))
    os.chmod(drop, 0o777)  # the server's own user must be able to write here
    conn = await any_pg.connect("test")
    bystander = await any_pg.connect("bystander")
    try:
        await conn.execute(
            "CREATE TABLE public.victim (i int); INSERT INTO public.victim VALUES (1)"
        )
        for name in LOOK_ALIKES:
            await conn.execute(
                f"CREATE SCHEMA {name}; CREATE TABLE {name}.mine (v text); "
                f"INSERT INTO {name}.mine VALUES ('keep')"
            )
        # Not vacuous: pgwx's own superuser can run a program that writes into `drop`.
        await conn.execute(f"COPY (SELECT 1) TO PROGRAM 'cat > {drop}/sanity'")
        assert (drop / "sanity").exists()
        (drop / "sanity").unlink()
        yield Bait(any_pg, bystander, drop)
    finally:
        await bystander.close()
        # What an attempt that got through would have left (so one cannot hide the next).
        await conn.execute("DROP TABLE IF EXISTS public.victim, public.x")
        await conn.execute("DROP SCHEMA IF EXISTS evil CASCADE; DROP ROLE IF EXISTS evil")
        await conn.execute("SELECT lo_unlink(oid) FROM pg_largeobject_metadata WHERE oid = 4242")
        for name in LOOK_ALIKES:
            await conn.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")
        await conn.close()
        shutil.rmtree(drop, ignore_errors=True)


def hidden(statement: str, word: str) -> str:
    """The statement run through DO … EXECUTE, cut inside `word` so no text check reads it."""
    cut = statement.index(word) + 2
    a, b = (statement[:cut].replace("'", "''"), statement[cut:].replace("'", "''"))
    return f"DO $$ BEGIN EXECUTE '{a}' || '{b}'; END $$"


ATTEMPTS: dict[str, dict[str, Any]] = {
    "alter-system": {"sql": "ALTER SYSTEM SET fsync = off"},
    "search-path": {"sql": "SET search_path = public; INSERT INTO victim VALUES (2)"},
    "search-path-hidden": {
        "sql": "DO $$ BEGIN PERFORM set_config('search_' || 'path', 'public', false); "
        "INSERT INTO victim VALUES (2); END $$"
    },
    "reset-all": {"sql": "RESET ALL; INSERT INTO victim VALUES (2)"},
    "quoted-schema": {"sql": 'TRUNCATE "public".victim'},
    "quoted-schema-insert": {"sql": 'INSERT INTO "public".victim VALUES (2)'},
    "commented-schema": {"sql": "TRUNCATE public/**/.victim"},
    "do-execute": {"sql": hidden("INSERT INTO public.victim VALUES (2)", "public")},
    "call": {
        "setup": "CREATE PROCEDURE {schema}.p() LANGUAGE sql AS "
        "$$ INSERT INTO public.victim VALUES (2) $$",
        "sql": "CALL {schema}.p()",
    },
    "select-into": {"sql": "SELECT 1 AS x INTO public.x"},
    "create-schema": {"sql": "CREATE SCHEMA evil"},
    "create-schema-hidden": {"sql": hidden("CREATE SCHEMA evil", "SCHEMA")},
    "create-role": {"sql": "CREATE ROLE evil SUPERUSER LOGIN"},
    "create-role-hidden": {"sql": hidden("CREATE ROLE evil SUPERUSER LOGIN", "ROLE")},
    "grant-public": {"sql": "GRANT ALL ON TABLE public.victim TO PUBLIC"},
    # The server only warns "no privileges were granted", and changes nothing.
    "grant-public-hidden": {
        "sql": hidden("GRANT CREATE ON SCHEMA public TO PUBLIC", "GRANT"),
        "harmless": True,
    },
    "copy-program": {"sql": "COPY (SELECT 1) TO PROGRAM 'touch {drop}/copy'"},
    "copy-program-hidden": {
        "sql": hidden("COPY (SELECT 1) TO PROGRAM 'touch {drop}/copy'", "PROGRAM")
    },
    "lo-export": {
        "setup": "SELECT lo_from_bytea(4242, 'x')",
        "sql": "SELECT lo_export(4242, '{drop}/lo')",
    },
    "lo-export-hidden": {
        "setup": "SELECT lo_from_bytea(4242, 'x')",
        "sql": hidden("SELECT lo_export(4242, '{drop}/lo')", "lo_export"),
    },
    "lo-create-left-behind": {"sql": "SELECT lo_from_bytea(0, 'x')", "harmless": True},
    "terminate": {"sql": "SELECT pg_terminate_backend({pid})"},
    "terminate-hidden": {"sql": hidden("SELECT pg_terminate_backend({pid})", "terminate")},
    "columns-injection": {
        "columns": "a int); INSERT INTO public.victim VALUES (2); CREATE TABLE y (b int",
        "sql": "SELECT 1",
    },
    "indexes-injection": {
        "indexes": ["(a); INSERT INTO public.victim VALUES (2)"],
        "sql": "SELECT 1",
    },
    "prepare-breakout": {"prepare": "SELECT 1) TO PROGRAM 'touch {drop}/prepare' --"},
    "pgbench-unqualified": {"pgbench": "INSERT INTO victim VALUES (3);"},
    "pgbench-qualified": {"pgbench": "INSERT INTO public.victim VALUES (3);"},
}
"""Each attempt class of the issue (and the fence's own corner: a large object it makes)."""


def attempt_profile(name: str, attempt: dict[str, Any], bait: Bait) -> Profile:
    """A one-variant sql profile that makes the attempt in the field it names."""
    table: dict[str, Any] = {"name": "t", "columns": attempt.get("columns", "a int")}
    if "indexes" in attempt:
        table["indexes"] = attempt["indexes"]
    params: dict[str, Any] = {
        "constants": {"pid": bait.bystander.get_server_pid(), "drop": str(bait.drop)},
        "tables": [table],
    }
    if "setup" in attempt:
        params["setup"] = attempt["setup"]
    if "prepare" in attempt:
        params["prepare"] = {"sql": attempt["prepare"].replace("{drop}", str(bait.drop))}
        params["phases"] = [{"name": "load", "copy": "t"}]
    elif "pgbench" in attempt:
        params["phases"] = [{"name": "bench", "pgbench": attempt["pgbench"], "transactions": 2}]
    else:
        params["phases"] = [{"name": "try", "sql": attempt["sql"]}]
    return Profile(
        name=name, title=name, workload="sql", params=params, repeats=1, settle_seconds=0,
        variants=[Variant(name="a")],
    )  # fmt: skip


@pytest.mark.parametrize("name", list(ATTEMPTS))
async def test_an_attempt_is_refused_or_fails_inside_the_fence(
    bait: Bait, run_profile: RunProfile, name: str
) -> None:
    attempt = ATTEMPTS[name]
    before = await world(bait)
    record, _ = await run_profile(
        bait.target, attempt_profile(name, attempt, bait), check_clean=False
    )
    after = await world(bait)
    changed = {k: (before[k], after[k]) for k in before if before[k] != after[k]}
    assert not changed, f"{name} changed {sorted(changed)}: {record.reason} / {record.trials}"
    if attempt.get("harmless"):
        assert record.status == "finished", record.reason
    else:
        assert record.status == "failed", f"{name} was not refused"
        reasons = [record.reason or "", *(t.reason or "" for t in record.trials)]
        assert any(reasons), "a refusal says why"
        assert not any("Traceback" in r or "internal error" in r for r in reasons)


@pytest.mark.parametrize(
    "script", ["\\shell touch {drop}/shell\nSELECT 1;", "SELECT 1;\n  \\setshell v id"]
)
async def test_a_pgbench_meta_command_that_runs_a_program_is_refused(
    bait: Bait, store: Any, script: str
) -> None:
    profile = attempt_profile("meta", {"pgbench": script.replace("{drop}", str(bait.drop))}, bait)
    with pytest.raises(ValueError, match=r"pgbench meta-command \\(set)?shell is not allowed"):
        build_workload(profile)
    with pytest.raises(ValueError, match="not allowed"):
        await Runner(bait.target, profile, store, RunOptions(sample=False)).run()
    assert list(bait.drop.iterdir()) == []
    harmless = (
        "\\set n random(1, 10)\n\\sleep 1 ms\nSELECT :n AS x \\gset\n"
        "\\if :x > 0\nSELECT 1;\n\\endif"
    )
    SqlParams.model_validate(
        {"tables": [{"name": "t", "columns": "a int"}],
         "phases": [{"name": "b", "pgbench": harmless, "transactions": 1}]}
    )  # fmt: skip


RAW = [
    "ALTER SYSTEM SET fsync = off",
    "SET search_path = public; INSERT INTO victim VALUES (2)",
    "INSERT INTO public.victim VALUES (2)",
    "TRUNCATE public.victim",
    "SELECT 1 AS x INTO public.x",
    "CREATE SCHEMA evil",
    "CREATE ROLE evil SUPERUSER LOGIN",
    "ALTER ROLE {me} SUPERUSER",
    "GRANT ALL ON TABLE public.victim TO PUBLIC",
    "SELECT * FROM public.victim",
    "SET ROLE pgwx",
    "SET SESSION AUTHORIZATION pgwx",
    "COPY (SELECT 1) TO PROGRAM 'touch {drop}/raw'",
    "COPY public.victim FROM PROGRAM 'echo 5'",
    "SELECT lo_export(lo_from_bytea(0, 'x'), '{drop}/lo')",
    "SELECT lo_import('/etc/hostname')",
    "SELECT pg_terminate_backend({pid})",
    "SELECT pg_reload_conf()",
    "CREATE TABLE public.x (a int)",
]
"""Statements sent straight to the work role's session: no pgwx check in the way."""
WARNED = ["GRANT CREATE ON SCHEMA public TO PUBLIC"]
"""Statements the server only warns about ("no privileges were granted"): they change nothing."""


async def test_the_server_refuses_the_work_role_what_the_profile_may_not_do(
    bait: Bait,
) -> None:
    target, run = bait.target, "20991231-235959-f0f0f0"
    before = await world(bait)
    conn = await target.connect("test")
    try:
        schema = await create_marked_schema(conn, run)
    finally:
        await conn.close()
    fence = await build_fence(target, run, schema)
    try:
        work = await fence.work.connect("work-test")
        try:
            assert await work.fetchval("SHOW search_path") == schema
            for raw in RAW:
                sql = raw.format(
                    me=fence.roles[0], drop=bait.drop, pid=bait.bystander.get_server_pid()
                )
                with pytest.raises(asyncpg.PostgresError):
                    await work.execute(sql)
            for sql in WARNED:
                await work.execute(sql)
            # Inside its schema it works.
            await work.execute("CREATE TABLE mine AS SELECT 1 AS i")
            assert await work.fetchval(f"SELECT count(*) FROM {schema}.mine") == 1
        finally:
            await work.close()
    finally:
        assert await tear_down(target, run) == ""
        await admin_sql(target, f"DROP SCHEMA {schema} CASCADE")
    assert await world(bait) == before


async def test_look_alike_schemas_survive_recovery_and_one_that_blocks_a_run_is_named(
    bait: Bait, store: Any, run_profile: RunProfile
) -> None:
    target = bait.target
    before = await world(bait)
    conn = await target.connect("test")
    try:
        caps = await probe(conn, owned=True)
    finally:
        await conn.close()
    # A run pgwx killed left its marked schema and roles: those go; look-alikes stay.
    dead = "20240101-000000-dead00"
    conn = await target.connect("test")
    try:
        dead_schema = await create_marked_schema(conn, dead)
        await build_fence(target, dead, dead_schema)
        await conn.execute("CREATE ROLE pgwx_run_20250101_000000_abcdef NOLOGIN")
    finally:
        await conn.close()
    said: list[str] = []
    try:
        await recover(target, caps, said.append)  # what `pgwx run`, `server start`, `restore` do
        assert f"dropped schema {dead_schema} left by an interrupted pgwx" in said
        assert not [m for m in said if "abcdef" in m or "mydata" in m or "pgwx_lab " in m]
        conn = await target.connect("test")
        try:
            roles = await conn.fetch("SELECT rolname FROM pg_roles WHERE rolname ~ '^pgwx_'")
        finally:
            await conn.close()
        assert [r[0] for r in roles] == ["pgwx_run_20250101_000000_abcdef"]
    finally:
        await admin_sql(target, "DROP ROLE pgwx_run_20250101_000000_abcdef")
    profile = attempt_profile("blocked", {"sql": "SELECT 1"}, bait)
    runner = Runner(target, profile, store, RunOptions(sample=False, settle_seconds=0, warmup=0))
    runner.run_id = "20250101-000000-abcdef"  # the user's pgwx_lab_20250101_000000_abcdef
    events: list[Any] = []
    record = await runner.run(events.append)
    assert record.status == "failed"
    assert "pgwx_lab_20250101_000000_abcdef already exists and pgwx did not make it" in (
        record.reason or ""
    )
    assert await world(bait) == before
    # An ordinary run makes its own schema and roles, and leaves nothing else changed.
    record, events = await run_profile(target, profile, check_clean=False)
    assert record.status == "finished", record.reason
    assert any(isinstance(e, Notice) and "runs as pgwx_run_" in e.message for e in events), (
        "the progress says the SQL is fenced"
    )
    assert await world(bait) == before


@contextlib.asynccontextmanager
async def plain_user(target: Target) -> AsyncIterator[Target]:
    """The server as a user that may create schemas but not roles (no CREATEROLE)."""
    await admin_sql(
        target,
        "DROP ROLE IF EXISTS pgwx_t_plain",
        "CREATE ROLE pgwx_t_plain LOGIN",
        "GRANT CREATE ON DATABASE postgres TO pgwx_t_plain",
    )
    try:
        yield Target(bundled=target.bundled, overrides={"user": "pgwx_t_plain"})
    finally:
        await admin_sql(
            target,
            "REVOKE CREATE ON DATABASE postgres FROM pgwx_t_plain",
            "DROP OWNED BY pgwx_t_plain CASCADE",
            "DROP ROLE pgwx_t_plain",
        )


async def test_without_createrole_own_sql_is_refused_unless_trusted(bait: Bait, store: Any) -> None:
    profile = attempt_profile("plain", {"sql": "INSERT INTO {t} VALUES (1)"}, bait)
    async with plain_user(bait.target) as plain:
        before = await world(bait)
        options = RunOptions(sample=False, settle_seconds=0, warmup=0)
        record = await Runner(plain, profile, store, options).run()
        assert record.status == "failed"
        assert "pgwx_t_plain may not create roles here (no CREATEROLE)" in (record.reason or "")
        assert "--trust-sql" in (record.reason or "")
        assert await world(bait) == before
        events: list[Any] = []
        options = dataclasses.replace(options, trust_sql=True)
        record = await Runner(plain, profile, store, options).run(events.append)
        assert record.status == "finished", record.reason
        assert any(isinstance(e, Notice) and "--trust-sql" in e.message for e in events)


def test_a_profile_picked_up_by_name_from_the_working_directory_is_announced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "cloned.toml").write_text('workload = "sql"\n')
    monkeypatch.chdir(tmp_path)
    said: list[str] = []
    assert find_profile("cloned", said.append) == tmp_path / "cloned.toml"
    assert said == ["using ./cloned.toml from the working directory"]
    said.clear()
    find_profile("cloned.toml", said.append)  # given as a path: the user chose the file
    assert said == []
    with pytest.raises(ProfileError):
        find_profile("no-such-profile", said.append)


CHECKED = [
    "alter-system",
    "search-path",
    "quoted-schema",
    "commented-schema",
    "select-into",
    "create-schema",
    "create-role",
    "grant-public",
    "copy-program",
    "lo-export",
    "terminate",
    "pgbench-qualified",
]
"""Attempts `pgwx check` names before anything runs (it said "ok" to most of them before)."""


@pytest.mark.parametrize("name", CHECKED)
async def test_check_names_a_plain_attempt_before_it_runs(
    bait: Bait, tmp_path: Path, name: str
) -> None:
    attempt = ATTEMPTS[name]
    body = attempt.get("sql") or attempt["pgbench"]
    kind = "sql" if "sql" in attempt else "pgbench"
    extra = "" if kind == "sql" else "transactions = 1\n"
    path = tmp_path / "attempt.toml"
    path.write_text(
        f"""title = "attempt"
workload = "sql"
[params]
constants = {{ pid = {bait.bystander.get_server_pid()}, drop = "{bait.drop}" }}
[[params.tables]]
name = "t"
columns = "a int"
[[params.phases]]
name = "try"
{kind} = '''{body}'''
{extra}[[variants]]
name = "a"
"""
    )
    report = check_file(path)
    assert report.ok, report.problems
    before = await world(bait)
    await check_on_server(bait.target, path, report)
    assert report.problems, f"check said {name} is fine"
    assert all(f"field params.phases[0].{kind}:" in p for p in report.problems)
    assert await world(bait) == before


async def test_a_statement_explain_cannot_plan_is_never_taken_as_fine(
    bait: Bait, store: Any, run_profile: RunProfile
) -> None:
    """It uses a table setup creates: fenced, the server decides; unfenced, it is refused."""
    attempt = {"setup": "CREATE TEMP TABLE later (a int)", "sql": "INSERT INTO later VALUES (1)"}
    profile = attempt_profile("later", attempt, bait)
    record, _ = await run_profile(bait.target, profile, check_clean=False)
    assert record.status == "finished", record.reason  # inside the fence: it just runs
    async with plain_user(bait.target) as plain:
        options = RunOptions(sample=False, settle_seconds=0, warmup=0, trust_sql=True)
        record = await Runner(plain, profile, store, options).run()
    trial = record.trials[0]
    assert trial.status == "failed" and not trial.phases
    assert (trial.reason or "").startswith(
        'params.phases[0].sql cannot be checked before it runs (relation "later" does not '
        "exist), and with --trust-sql nothing else would stop it"
    ), trial.reason
