"""The `sql` workload: the user's tables, data and SQL under the knobs, on real servers."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from explorer.analysis.report import render
from explorer.lab.profiles.catalog import load_profile
from explorer.lab.run.runner import Runner, RunOptions
from explorer.lab.store.results import ResultStore
from explorer.lab.workloads.sql_spec import SqlParams, split_statements, substitute
from explorer.models import Knobs, PhaseStarted, Profile, RunRecord, Variant
from explorer.server.connect import Target
from tests.support.paths import EXAMPLES
from tests.support.runs import RunProfile
from tests.support.server import admin_sql


def sql_profile(params: dict[str, Any], variants: list[Variant], name: str = "own") -> Profile:
    """A one-off `sql` profile: one repeat, no settle pause."""
    return Profile(
        name=name,
        title=name,
        workload="sql",
        params=params,
        repeats=1,
        settle_seconds=0,
        variants=variants,
    )


def trials(record: RunRecord) -> dict[str, Any]:
    return {t.variant: t for t in record.trials}


def phase(record: RunRecord, variant: str, name: str) -> Any:
    trial = trials(record)[variant]
    return next(p for p in trial.phases if p.name == name)


async def fetch(target: Target, sql: str) -> Any:
    conn = await target.connect("test")
    try:
        return await conn.fetchval(sql)
    finally:
        await conn.close()


# --------------------------------------------------------------------------- format, no server


def test_substitute_leaves_unknown_braces() -> None:
    out = substitute(
        "UPDATE {t} SET d = jsonb_set(d, '{status}', '1') LIMIT {n}", {"t": "x.t", "n": "5"}
    )
    assert out == "UPDATE x.t SET d = jsonb_set(d, '{status}', '1') LIMIT 5"


def test_split_statements_respects_quotes_and_dollar_quotes() -> None:
    script = "SELECT ';'; DO $x$ BEGIN PERFORM 1; END $x$; -- a; comment\nSELECT 2;"
    assert split_statements(script) == [
        "SELECT ';'",
        "DO $x$ BEGIN PERFORM 1; END $x$",
        "-- a; comment\nSELECT 2",
    ]


def test_scale_multiplies_sizes_limit_and_transactions_only() -> None:
    params = SqlParams.model_validate(
        {
            "sizes": {"rows": 10},
            "constants": {"batch": 7},
            "tables": [{"name": "t", "columns": "a int"}],
            "prepare": {"source": "public.x", "limit": 5},
            "phases": [
                {"name": "p", "pgbench": "SELECT 1", "transactions": 3, "clients": 2},
                {"name": "q", "copy": "t"},
            ],
        }
    ).scaled(2.5)
    assert params.sizes == {"rows": 25}
    assert params.constants == {"batch": 7}
    assert params.prepare is not None and params.prepare.limit == 13
    assert params.phases[0].transactions == 8 and params.phases[0].clients == 2


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"phases": [{"name": "p", "copy": "t"}]}, "needs a [params.prepare]"),
        ({"phases": [{"name": "p", "sql": "x", "copy": "t"}]}, "exactly one of sql, copy"),
        ({"phases": [{"name": "p", "pgbench": "x"}]}, "duration or transactions"),
        ({"prepare": {"source": "public.o"}}, "needs a row limit"),
        ({"prepare": {"source": "pgwx_lab.o", "limit": 1}}, "not one of pgwx's"),
        (
            {
                "tables": [
                    {
                        "name": "t",
                        "columns": "a int",
                        "foreign_keys": [{"columns": "a", "references": "public_orders (id)"}],
                    }
                ]
            },
            "not a table declared before it",
        ),
    ],
)
def test_inconsistent_params_are_refused(change: dict[str, Any], words: str) -> None:
    base: dict[str, Any] = {
        "tables": [{"name": "t", "columns": "a int"}],
        "phases": [{"name": "p", "sql": "SELECT 1"}],
    }
    with pytest.raises(ValueError, match=words.replace("[", r"\[").replace("]", r"\]")):
        SqlParams.model_validate({**base, **change})


# --------------------------------------------------------------------------- the examples


@pytest.mark.parametrize("example", ["staging-etl", "json-documents"])
async def test_examples_run(any_pg: Target, run_profile: RunProfile, example: str) -> None:
    profile = load_profile(EXAMPLES / f"{example}.toml")
    assert profile.workload == "sql"
    record, events = await run_profile(
        any_pg, profile.model_copy(update={"repeats": 1}), scale=0.02
    )
    assert record.status == "finished", record.reason
    # The COPY phase knows how many rows prepare made, so the app can show its progress.
    copy_phase, made = {"staging-etl": ("copy-staging", 4000), "json-documents": ("insert", 100)}[
        example
    ]
    started = [e for e in events if isinstance(e, PhaseStarted) and e.phase == copy_phase]
    assert started and all(e.expected_rows == made for e in started)
    by = trials(record)
    major = record.server.capabilities.major
    if example == "staging-etl":
        assert {t.status for t in by.values()} == {"ok"}, [t.reason for t in by.values()]
        names = [p.name for p in by["unlogged-fk-after"].phases]
        assert names == ["copy-staging", "insert", "insert-commit", "add-fk", "delete-staging"]
        assert phase(record, "logged", "copy-staging").rows == 4000
        assert phase(record, "logged", "insert").rows == 4000
        assert phase(record, "logged", "delete-staging").rows == 4000
        assert phase(record, "temporary", "delete-staging").detail["verify"] == (
            "orders=4000, customers=40"
        )
    else:
        lz4 = by["lz4"]
        if major == 18:
            assert lz4.status == "skipped" and "lz4" in (lz4.reason or "")
        else:
            assert lz4.status == "ok"
            assert "compression=lz4" in phase(record, "lz4", "update-key").detail["verify"]
        assert "compression=pglz" in phase(record, "pglz", "update-key").detail["verify"]
        assert "compression=none" in phase(record, "external", "update-key").detail["verify"]
        assert phase(record, "pglz", "update-key").rows == 100


# --------------------------------------------------------------------------- knobs


KNOB_FACTS = """
SELECT (SELECT relpersistence FROM pg_class WHERE oid = '{child}'::regclass) AS child,
       (SELECT relpersistence FROM pg_class WHERE oid = '{parent}'::regclass) AS parent,
       (SELECT coalesce(nullif(attcompression::text, ''), '-') || attstorage::text FROM pg_attribute
         WHERE attrelid = '{child}'::regclass AND attname = 'body') AS body,
       (SELECT string_agg(condeferred::text || '/' || convalidated::text, ',')
          FROM pg_constraint WHERE conrelid = '{child}'::regclass AND contype = 'f') AS fk,
       current_setting('synchronous_commit') AS sync,
       (SELECT array_to_string(reloptions, ',') FROM pg_class
         WHERE oid = '{child}'::regclass) AS opts,
       (SELECT count(*) FROM pg_index WHERE indrelid = '{child}'::regclass) AS indexes
"""


async def test_every_knob_applies_to_declared_objects_and_is_undone(
    any_pg: Target, run_profile: RunProfile
) -> None:
    params = {
        "sizes": {"rows": 50},
        "tables": [
            {"name": "parent", "columns": "id int PRIMARY KEY", "table_kind": False},
            {
                "name": "child",
                "columns": "id int, parent_id int, body text",
                "with": "fillfactor = 70",
                "indexes": ["(parent_id)", "USING hash (id)"],
                "toast": ["body"],
                "foreign_keys": [{"columns": "parent_id", "references": "parent (id)"}],
            },
        ],
        "setup": "INSERT INTO {parent} VALUES (1)",
        "phases": [
            {
                "name": "load",
                "sql": "INSERT INTO {child} SELECT i, 1, 'x' FROM generate_series(1, {rows}) i",
            }
        ],
        "verify": KNOB_FACTS,
    }
    variants = [
        Variant(name="plain"),
        Variant(name="unlogged", knobs=Knobs(table_kind="unlogged", fk="immediate")),  # type: ignore[arg-type]
        Variant(name="deferred", knobs=Knobs(fk="deferred", toast="external")),  # type: ignore[arg-type]
        Variant(name="not-valid", knobs=Knobs(fk="not-valid", synchronous_commit="off")),  # type: ignore[arg-type]
        Variant(name="temporary", knobs=Knobs(table_kind="temporary")),  # type: ignore[arg-type]
    ]
    record, _ = await run_profile(any_pg, sql_profile(params, variants))
    by = trials(record)
    assert by["plain"].status == "ok", by["plain"].reason
    notes = {v: t.phases[-1].detail["verify"] for v, t in by.items() if t.status == "ok"}
    assert (
        notes["plain"]
        == "child=p, parent=p, body=px, fk=None, sync=on, opts=fillfactor=70, indexes=2"
    )
    assert (
        notes["unlogged"]
        == "child=u, parent=p, body=px, fk=false/true, sync=on, opts=fillfactor=70, indexes=2"
    )
    assert (
        notes["deferred"]
        == "child=p, parent=p, body=-e, fk=true/true, sync=on, opts=fillfactor=70, indexes=2"
    )
    assert (
        notes["not-valid"]
        == "child=p, parent=p, body=px, fk=false/true, sync=off, opts=fillfactor=70, indexes=2"
    )
    assert [p.name for p in by["not-valid"].phases] == ["load", "add-fk", "validate-fk"]
    # A TEMPORARY child cannot reference a permanent parent: skipped with the reason.
    assert by["temporary"].status == "skipped"
    assert "foreign key" in (by["temporary"].reason or "")
    assert by["plain"].phases[0].rows == 50


async def test_temporary_table_in_a_pgbench_phase_is_skipped(
    pg18: Target, run_profile: RunProfile
) -> None:
    params = {
        "tables": [{"name": "t", "columns": "a int"}],
        "phases": [
            {
                "name": "bench",
                "pgbench": "INSERT INTO {t} VALUES (1);",
                "transactions": 5,
                "clients": 2,
            },
            {
                "name": "timed",
                "pgbench": "\\set x random(1, 9)\nSELECT :x FROM {t} LIMIT 1;",
                "duration": 1,
            },
        ],
        "verify": "SELECT count(*) AS n FROM {t}",
    }
    variants = [Variant(name="logged"), Variant(name="temp", knobs=Knobs(table_kind="temporary"))]  # type: ignore[arg-type]
    record, _ = await run_profile(pg18, sql_profile(params, variants), scale=2)
    by = trials(record)
    assert by["logged"].status == "ok", by["logged"].reason
    bench, timed = by["logged"].phases
    assert bench.rows == 20 and "tps" in bench.detail and timed.detail["verify"] == "n=20"
    assert timed.rows is not None and timed.rows > 0 and 0.9 < timed.seconds < 5
    assert by["temp"].status == "skipped" and "pgbench" in (by["temp"].reason or "")


# --------------------------------------------------------------------------- failures


async def test_a_failing_phase_is_recorded_and_the_run_goes_on(
    any_pg: Target, run_profile: RunProfile
) -> None:
    params = {
        "tables": [{"name": "t", "columns": "a int"}],
        "phases": [
            {"name": "fill", "sql": "INSERT INTO {t} SELECT generate_series(1, 10)"},
            {
                "name": "boom",
                "sql": "DO $$ BEGIN IF (SELECT relpersistence FROM pg_class "
                "WHERE oid = '{t}'::regclass) = 'u' THEN RAISE EXCEPTION 'boom on "
                "unlogged'; END IF; END $$",
            },
            {"name": "after", "sql": "DELETE FROM {t}"},
        ],
    }
    variants = [
        # The failing variant also changes a server setting: it must be put back all the same.
        Variant(name="unlogged", knobs=Knobs(table_kind="unlogged", synchronous_commit="off")),  # type: ignore[arg-type]
        Variant(name="logged"),
    ]
    record, _ = await run_profile(any_pg, sql_profile(params, variants))
    by = trials(record)
    assert record.status == "finished"
    assert by["unlogged"].status == "failed"
    assert by["unlogged"].reason == "phase boom: boom on unlogged"
    assert [p.name for p in by["unlogged"].phases] == ["fill"]
    assert by["logged"].status == "ok"
    assert by["logged"].phases[-1].rows == 10
    table = render(record, "md")
    failed_row = next(ln for ln in table.splitlines() if ln.startswith("| unlogged |"))
    assert "phase boom: boom on unlogged" in failed_row


async def test_a_phase_of_several_statements_counts_the_rows_of_each(
    pg18: Target, run_profile: RunProfile
) -> None:
    """Two UPDATEs in one phase once reported the second's rows only (the string's last
    command tag, issue 21). Each statement's rows count, the phase stays one transaction,
    and a phase with its own transaction control says its rows are unknown, not the last
    statement's."""
    params = {
        "tables": [{"name": "t", "columns": "id int PRIMARY KEY, a int"}],
        "setup": "INSERT INTO {t} SELECT g, 0 FROM generate_series(1, 100) g",
        "phases": [
            {
                "name": "two-updates",
                "sql": "UPDATE {t} SET a = 1 WHERE id <= 10;\n"
                "SELECT count(*) FROM {t};\n"
                "UPDATE {t} SET a = 2 WHERE id > 10 AND id <= 35;",
            },
            {
                "name": "one-txn",
                # Fails on its second statement: the trial fails with the server's sentence.
                "sql": "UPDATE {t} SET a = 9 WHERE id = 1; SELECT 1 / (SELECT count(*) - "
                "count(*) FROM {t} WHERE a = 9)",
            },
        ],
    }
    record, _ = await run_profile(pg18, sql_profile(params, [Variant(name="logged")]))
    trial = trials(record)["logged"]
    assert [p.name for p in trial.phases] == ["two-updates"]
    # 10 + 25 rows written; the SELECT between them is a read, not a write.
    assert trial.phases[0].rows == 35
    assert trial.status == "failed" and "division by zero" in (trial.reason or "")

    params["phases"] = [
        {
            "name": "own-txn",
            "sql": "BEGIN; UPDATE {t} SET a = 3 WHERE id <= 5; COMMIT",
        },
        {"name": "check", "sql": "UPDATE {t} SET a = a WHERE a = 3"},
    ]
    record, _ = await run_profile(pg18, sql_profile(params, [Variant(name="logged")], "own2"))
    trial = trials(record)["logged"]
    assert trial.status == "ok", trial.reason
    assert trial.phases[0].rows is None  # its own BEGIN/COMMIT: unknown, not COMMIT's nothing
    assert trial.phases[1].rows == 5  # and its writes were committed, as written


# --------------------------------------------------------------------------- prepare kinds


CHECKSUM = "SELECT md5(string_agg(s::text, ',' ORDER BY id)) FROM public.pgwx_test_src s"


@pytest.fixture
async def source_table(any_pg: Target) -> Any:
    conn = await any_pg.connect("test")
    try:
        await conn.execute("DROP TABLE IF EXISTS public.pgwx_test_src")
        await conn.execute(
            "CREATE TABLE public.pgwx_test_src AS SELECT i AS id, md5(i::text) AS v "
            "FROM generate_series(1, 500) AS i"
        )
        yield any_pg
    finally:
        await conn.execute("DROP TABLE IF EXISTS public.pgwx_test_src")
        await conn.close()


async def test_source_table_is_only_read(source_table: Target, run_profile: RunProfile) -> None:
    target = source_table
    before = await fetch(target, CHECKSUM)
    params = {
        "tables": [{"name": "copy_of", "columns": "id int, v text"}],
        "prepare": {
            "source": "public.pgwx_test_src",
            "columns": "id, v",
            "order_by": "id",
            "limit": 40,
        },
        "phases": [
            {"name": "load", "copy": "copy_of"},
            {"name": "touch", "sql": "UPDATE {copy_of} SET v = 'changed'"},
        ],
        "verify": "SELECT max(id) AS top FROM {copy_of}",
    }
    record, _ = await run_profile(target, sql_profile(params, [Variant(name="a")]), scale=0.5)
    trial = trials(record)["a"]
    assert trial.status == "ok", trial.reason
    assert trial.phases[0].rows == 20 and trial.phases[-1].detail["verify"] == "top=20"
    assert await fetch(target, CHECKSUM) == before

    # A prepare query that tries to write runs in a READ ONLY transaction: refused.
    params["prepare"] = {
        "sql": "WITH d AS (DELETE FROM public.pgwx_test_src RETURNING id, v) SELECT * FROM d"
    }
    record, _ = await run_profile(target, sql_profile(params, [Variant(name="a")]))
    assert record.status == "failed" and "read-only" in (record.reason or "")
    assert await fetch(target, CHECKSUM) == before


async def test_file_prepare_relative_to_profile_and_sizes(
    pg18: Target, run_profile: RunProfile, tmp_path: Path
) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "rows.csv").write_text("a,b\n" + "".join(f"{i},x{i}\n" for i in range(7)))
    (tmp_path / "mine.toml").write_text(
        """title = "mine"
workload = "sql"
repeats = 1
settle_seconds = 0
[params]
sizes = { rows = 30 }
constants = { word = "'w'" }
[[params.tables]]
name = "t"
columns = "a int, b text"
[params.prepare]
file = "data/rows.csv"
format = "csv"
header = true
[[params.phases]]
name = "copy"
copy = "t"
[[params.phases]]
name = "more"
sql = "INSERT INTO {t} SELECT i, {word} FROM generate_series(1, {rows}) i"
commit_apart = true
[[variants]]
name = "only"
"""
    )
    profile = load_profile(tmp_path / "mine.toml")
    assert Path(profile.params["prepare"]["file"]).is_absolute()
    record, _ = await run_profile(pg18, profile, scale=2)
    trial = trials(record)["only"]
    assert trial.status == "ok", trial.reason
    assert [(p.name, p.rows) for p in trial.phases] == [
        ("copy", 7),
        ("more", 60),
        ("more-commit", None),
    ]


def test_new_profile_template_is_valid_toml_and_params(tmp_path: Path) -> None:
    from explorer.lab.profiles.userprofile import write_new_profile

    path = write_new_profile("my-load", tmp_path)
    data = tomllib.loads(path.read_text())
    SqlParams.model_validate(data["params"])
    assert load_profile(path).name == "my-load"


@pytest.mark.parametrize(
    ("where", "sql"),
    [
        ("phases[0].sql", "DELETE FROM public.pgwx_test_src WHERE id < 10"),
        (
            "phases[0].sql",
            "WITH d AS (UPDATE public.pgwx_test_src SET v = 'x' RETURNING 1) "
            "SELECT count(*) FROM d",
        ),
        ("phases[0].sql", "TRUNCATE public.pgwx_test_src"),
        ("setup", "VACUUM public.pgwx_test_src"),
    ],
)
async def test_sql_that_writes_a_user_table_is_refused_before_it_runs(
    source_table: Target, run_profile: RunProfile, where: str, sql: str
) -> None:
    target = source_table
    before = await fetch(target, CHECKSUM)
    params: dict[str, Any] = {
        "tables": [{"name": "t", "columns": "a int"}],
        "phases": [{"name": "harm", "sql": sql}],
    }
    if where == "setup":
        params["setup"] = sql
        params["phases"] = [{"name": "ok", "sql": "INSERT INTO {t} VALUES (1)"}]
    record, _ = await run_profile(target, sql_profile(params, [Variant(name="a")]))
    trial = trials(record)["a"]
    assert trial.status == "failed"
    assert trial.reason is not None and trial.reason.startswith(f"params.{where} would write ")
    assert "outside pgwx's schema" in trial.reason and not trial.phases
    assert await fetch(target, CHECKSUM) == before


async def test_reading_a_user_table_in_a_phase_is_refused_prepare_source_reads_it(
    source_table: Target, run_profile: RunProfile
) -> None:
    # Issue 19: a phase runs as the run's fenced role, which has no privilege outside the
    # run's schema, reading included; the data comes in through prepare.source.
    params: dict[str, Any] = {
        "tables": [{"name": "t", "columns": "id int, v text"}],
        "phases": [
            {"name": "copy-in", "sql": "INSERT INTO {t} SELECT * FROM public.pgwx_test_src"},
        ],
    }
    record, _ = await run_profile(source_table, sql_profile(params, [Variant(name="a")]))
    trial = trials(record)["a"]
    assert trial.status == "failed" and not trial.phases
    assert trial.reason is not None and trial.reason.startswith(
        "params.phases[0].sql would write or read outside pgwx's schema (permission denied "
        "for table pgwx_test_src)"
    )
    params["prepare"] = {"source": "public.pgwx_test_src", "limit": 500}
    params["phases"] = [{"name": "copy-in", "copy": "t"}]
    record, _ = await run_profile(source_table, sql_profile(params, [Variant(name="a")]))
    trial = trials(record)["a"]
    assert trial.status == "ok", trial.reason
    assert [p.rows for p in trial.phases] == [500]


async def test_new_profile_template_runs(
    pg18: Target, run_profile: RunProfile, tmp_path: Path
) -> None:
    from explorer.lab.profiles.userprofile import write_new_profile

    profile = load_profile(write_new_profile("starter", tmp_path))
    profile = profile.model_copy(update={"repeats": 1})
    record, _ = await run_profile(pg18, profile, scale=0.01)
    assert record.status == "finished", record.reason
    for trial in record.trials:
        assert trial.status == "ok", trial.reason
        assert [(p.name, p.rows) for p in trial.phases] == [
            ("load", 1000),
            ("update", 100),
            ("delete", 100),
        ]
        assert trial.phases[-1].detail["verify"] == "rows=900"


@pytest.fixture
async def trusted_user(pg18: Target) -> Any:
    """The server as a user that may create schemas but not roles, and may write a table
    `public.t_same` (named like the profile's table) that is the user's own data."""
    await admin_sql(
        pg18,
        "DROP TABLE IF EXISTS public.t_same",
        "DROP ROLE IF EXISTS pgwx_t_trusted",
        "CREATE ROLE pgwx_t_trusted LOGIN",
        "GRANT CREATE ON DATABASE postgres TO pgwx_t_trusted",
        "CREATE TABLE public.t_same (a int)",
        "GRANT ALL ON public.t_same TO pgwx_t_trusted",
        "GRANT USAGE ON SCHEMA public TO pgwx_t_trusted",
    )
    try:
        yield Target(bundled=pg18.bundled, overrides={"user": "pgwx_t_trusted"})
    finally:
        await admin_sql(
            pg18,
            "DROP TABLE public.t_same",
            "REVOKE CREATE ON DATABASE postgres FROM pgwx_t_trusted",
            "REVOKE USAGE ON SCHEMA public FROM pgwx_t_trusted",
            "DROP OWNED BY pgwx_t_trusted CASCADE",
            "DROP ROLE pgwx_t_trusted",
        )


async def test_unqualified_names_resolve_in_the_runs_schema_with_trust_sql(
    trusted_user: Target, store: ResultStore
) -> None:
    """Unfenced (--trust-sql: pgwx's own user, whose search_path starts with public), a phase's
    unqualified `t_same` is still the run's table, never the user's same-named one (issue 40,
    promise 2): each trial's session sets the run's schema as its search path."""
    params = {
        "tables": [{"name": "t_same", "columns": "a int"}],
        "phases": [{"name": "load", "sql": "INSERT INTO t_same SELECT generate_series(1, 5)"}],
        "verify": "SELECT count(*) AS n FROM t_same",
    }
    profile = sql_profile(params, [Variant(name="a")])
    events: list[Any] = []
    options = RunOptions(sample=False, settle_seconds=0, warmup=0, trust_sql=True)
    record = await Runner(trusted_user, profile, store, options).run(events.append)
    assert any("--trust-sql: the profile's SQL runs unfenced" in str(e) for e in events)
    trial = trials(record)["a"]
    assert trial.status == "ok", trial.reason
    assert trial.phases[0].rows == 5 and trial.phases[-1].detail["verify"] == "n=5"
    assert await fetch(trusted_user, "SELECT count(*) FROM public.t_same") == 0
