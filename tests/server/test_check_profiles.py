"""`pgwx check`, `pgwx new` and where user profiles are found."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from explorer import cli
from explorer.lab.profiles.availability import lz4_hint
from explorer.lab.profiles.catalog import (
    ProfileError,
    ProfileShadowed,
    find_profile,
    list_profiles,
    load_profile,
)
from explorer.lab.profiles.check import CheckReport, check_file, check_on_server
from explorer.lab.profiles.tomlines import locate
from explorer.lab.profiles.userprofile import write_new_profile
from explorer.server.connect import Target
from tests.support.paths import EXAMPLES

VACUUM_NAME = 'name = "vacuum"'
T_NAME = 'name = "t"'

GOOD = textwrap.dedent(
    """\
    title = "t"
    workload = "sql"

    [params]
    sizes = { rows = 10 }
    verify = "SELECT count(*) FROM {t}"

    [[params.tables]]
    name = "t"
    columns = "a int, b text"

    [[params.phases]]
    name = "fill"
    sql = "INSERT INTO {t} SELECT i, 'x' FROM generate_series(1, {rows}) i"

    [[params.phases]]
    name = "vacuum"
    sql = "VACUUM {t}"

    [[variants]]
    name = "logged"

    [[variants]]
    name = "unlogged"
    knobs = { table_kind = "unlogged" }
    """
)


def line_of(text: str, needle: str, nth: int = 1) -> int:
    """1-based line of the nth line containing `needle`."""
    hits = [i for i, ln in enumerate(text.splitlines(), start=1) if needle in ln]
    return hits[nth - 1]


def write(tmp_path: Path, text: str, name: str = "mine.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_locate_follows_arrays_of_tables_and_inline_tables() -> None:
    assert locate(GOOD, ("params", "phases", 1, "sql")) == line_of(GOOD, 'sql = "VACUUM')
    assert locate(GOOD, ("params", "tables", 0, "columns")) == line_of(GOOD, "columns =")
    assert locate(GOOD, ("variants", 1, "knobs", "table_kind")) == line_of(GOOD, "knobs =")
    assert locate(GOOD, ("params", "sizes", "rows")) == line_of(GOOD, "sizes =")


def test_shape_problems_each_name_their_line_and_field(tmp_path: Path) -> None:
    text = GOOD.replace('name = "vacuum"', 'name = "vacuum"\ncopy = "t"').replace(
        'knobs = { table_kind = "unlogged" }', 'knobs = { table_kind = "sideways" }'
    )
    path = write(tmp_path, text)
    report = check_file(path)
    assert len(report.problems) == 2, report.problems
    knobs, phase = sorted(report.problems, key=lambda p: "variants" not in p)
    assert knobs.startswith(
        f"{path}:{line_of(text, 'sideways')}: field variants[1].knobs.table_kind:"
    )
    assert phase.startswith(f"{path}:{line_of(text, VACUUM_NAME) - 1}: field params.phases[1]:")
    assert "exactly one of sql, copy or pgbench" in phase
    assert all("\n" not in p and p.endswith(".") for p in report.problems)


def test_run_time_profile_errors_name_the_line_too(tmp_path: Path) -> None:
    text = GOOD.replace('name = "vacuum"', 'name = "vacuum"\nclients = 4')
    path = write(tmp_path, text)
    with pytest.raises(ProfileError) as err:
        load_profile(path)
    assert str(err.value).startswith(
        f"{path}:{line_of(text, VACUUM_NAME) - 1}: field params.phases[1]: "
    ), str(err.value)
    assert "for pgbench phases only" in str(err.value)


def test_missing_prepare_file_is_a_problem(tmp_path: Path) -> None:
    text = GOOD.replace(
        '[[params.phases]]\nname = "fill"',
        '[params.prepare]\nfile = "nope.csv"\n\n[[params.phases]]\nname = "fill"',
        1,
    )
    path = write(tmp_path, text)
    report = check_file(path)
    assert report.problems == [
        f"{path}:{line_of(text, 'nope.csv')}: field params.prepare.file: "
        f"{tmp_path / 'nope.csv'} does not exist."
    ]


def test_a_prepare_fifo_is_named_as_such_not_missing(tmp_path: Path) -> None:
    """Issue 33: a FIFO was reported as a file that "does not exist"."""
    import os

    os.mkfifo(tmp_path / "pipe.csv")
    text = GOOD.replace(
        '[[params.phases]]\nname = "fill"',
        '[params.prepare]\nfile = "pipe.csv"\n\n[[params.phases]]\nname = "fill"',
        1,
    )
    report = check_file(write(tmp_path, text))
    assert len(report.problems) == 1
    assert report.problems[0].endswith(f"{tmp_path / 'pipe.csv'} is not a regular file (a FIFO).")


async def _server_check(target: Target, path: Path) -> CheckReport:
    report = check_file(path)
    assert report.ok, report.problems
    await check_on_server(target, path, report)
    return report


async def test_check_parses_sql_without_running_it(pg18: Target, tmp_path: Path) -> None:
    conn = await pg18.connect("test")
    await conn.execute("CREATE TABLE IF NOT EXISTS public.pgwx_check_probe (a int)")
    try:
        text = GOOD.replace(
            "SELECT i, 'x' FROM generate_series(1, {rows}) i",
            "SELECT i, 'x' FROM generate_series(1, {rows}) i; "
            "INSERT INTO public.pgwx_check_probe VALUES (1)",
        ).replace('sql = "VACUUM {t}"', 'sql = "VACUUM {t}; VACUM {t}; SELECT nope FROM {t}"')
        path = write(tmp_path, text)
        report = await _server_check(pg18, path)
        at = f"{path}:{line_of(text, 'VACUM')}: field params.phases[1].sql:"
        assert report.problems == [
            f"{path}:{line_of(text, 'pgwx_check_probe')}: field params.phases[0].sql: this "
            "statement would write public.pgwx_check_probe, outside pgwx's schema; pgwx only "
            "writes the tables a profile declares (use {name} for them, and prepare.source to "
            "read yours).",
            f'{at} syntax error at or near "VACUM".',
            f'{at} column "nope" does not exist.',
        ]
        # Parsed, planned, never executed; and nothing of pgwx is left behind.
        assert await conn.fetchval("SELECT count(*) FROM public.pgwx_check_probe") == 0
        assert await conn.fetchval("SELECT to_regnamespace('pgwx_lab')") is None
    finally:
        await conn.execute("DROP TABLE public.pgwx_check_probe")
        await conn.close()


async def test_check_creates_each_variants_tables(pg18: Target, tmp_path: Path) -> None:
    text = GOOD.replace('columns = "a int, b text"', 'columns = "a int, b txet"')
    path = write(tmp_path, text)
    report = await _server_check(pg18, path)
    assert report.problems == [
        f"{path}:{line_of(text, T_NAME) - 1}: field params.tables[0]: variant logged "
        'cannot create its tables: type "txet" does not exist.',
        f"{path}:{line_of(text, T_NAME) - 1}: field params.tables[0]: variant unlogged "
        'cannot create its tables: type "txet" does not exist.',
    ]


async def test_check_tells_what_each_variant_does_and_what_is_skipped(
    any_pg: Target, tmp_path: Path
) -> None:
    path = EXAMPLES / "json-documents.toml"
    report = await _server_check(any_pg, path)
    assert report.ok, report.problems
    assert (
        "create: ALTER TABLE pgwx_lab.docs ALTER COLUMN doc SET STORAGE EXTERNAL"
        in (report.plan["external"])
    )
    conn = await any_pg.connect("test")
    major = int(await conn.fetchval("SHOW server_version_num")) // 10000
    await conn.close()
    if major == 18:
        assert list(report.plan) == ["pglz", "external"]
        line = line_of(path.read_text(), 'knobs = { toast = "lz4" }')
        assert report.skipped == [
            f"{path}:{line}: variant lz4 will be skipped here: lz4 is not built into this "
            f"server (PostgreSQL was built without --with-lz4){lz4_hint()}."
        ]
    else:
        assert (
            "create: ALTER TABLE pgwx_lab.docs ALTER COLUMN doc SET COMPRESSION lz4"
            in (report.plan["lz4"])
        )
        assert report.skipped == []


async def test_check_staging_example_plans_fk_phases(pg18: Target) -> None:
    report = await _server_check(pg18, EXAMPLES / "staging-etl.toml")
    assert report.ok, report.problems
    after = report.plan["unlogged-fk-after"]
    assert any(
        s.startswith("phase add-fk: ALTER TABLE pgwx_lab.orders ADD CONSTRAINT") for s in after
    )
    assert any("CREATE TEMPORARY TABLE pg_temp.staging" in s for s in report.plan["temporary"])
    assert any("DEFERRABLE INITIALLY DEFERRED" in s for s in report.plan["unlogged-fk-deferred"])


async def test_new_template_passes_check(pg18: Target, tmp_path: Path) -> None:
    path = write_new_profile("my-load", tmp_path)
    report = await _server_check(pg18, path)
    assert report.ok and not report.skipped, (report.problems, report.skipped)
    assert list(report.plan) == ["logged", "unlogged", "temporary"]


def test_cli_new_and_check(
    pg18: Target,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    for var in ("PGHOST", "PGPORT", "PGUSER", "PGDATABASE", "PGSERVICE"):
        monkeypatch.delenv(var, raising=False)
    assert cli.main(["new", "nightly"]) == 0
    assert (tmp_path / "nightly.toml").is_file()
    assert cli.main(["new", "nightly"]) == 2
    assert "exists already" in capsys.readouterr().err
    assert pg18.bundled is not None
    data_dir = str(pg18.bundled.data_dir)
    assert cli.main(["check", "nightly.toml", "--data-dir", data_dir]) == 0
    out = capsys.readouterr().out
    assert "nightly.toml: ok" in out and "phase load: COPY the prepared data" in out
    bad = GOOD.replace("generate_series(1, {rows}) i", "generate_serie(1, {rows}) i")
    write(tmp_path, bad, "bad.toml")
    assert cli.main(["check", "bad", "--data-dir", data_dir]) == 1
    out = capsys.readouterr().out
    assert f"bad.toml:{line_of(bad, 'generate_serie(')}: field params.phases[0].sql:" in out
    assert "function generate_serie(integer, integer) does not exist" in out


# --------------------------------------------------------------------------- discovery


def test_user_profiles_are_found_and_shadow_shipped_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work, config = tmp_path / "work", tmp_path / "config"
    work.mkdir()
    (config / "pgwx" / "profiles").mkdir(parents=True)
    monkeypatch.chdir(work)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    (work / "pyproject.toml").write_text('[project]\nname = "x"\n')
    (work / "nightly.toml").write_text(GOOD)
    (work / "quick-demo.toml").write_text(GOOD.replace('title = "t"', 'title = "mine"'))
    (config / "pgwx" / "profiles" / "etl.toml").write_text(GOOD)

    found = {p: loaded for p, loaded in list_profiles()}
    names = [p.stem for p in found]
    assert "pyproject" not in names
    assert names[:3] == ["nightly", "quick-demo", "etl"]
    assert {"staging-etl", "json-documents", "durability"} <= set(names)
    shadowed = [(p, e) for p, e in found.items() if isinstance(e, ProfileShadowed)]
    assert len(shadowed) == 1 and shadowed[0][0].stem == "quick-demo"
    assert "quick-demo.toml" in str(shadowed[0][1]) and "used instead" in str(shadowed[0][1])
    assert find_profile("quick-demo").samefile(work / "quick-demo.toml")
    assert find_profile("etl").samefile(config / "pgwx" / "profiles" / "etl.toml")
    assert find_profile("staging-etl").samefile(EXAMPLES / "staging-etl.toml")


async def test_check_as_a_user_without_create_says_so(pg18: Target, tmp_path: Path) -> None:
    conn = await pg18.connect("test")
    await conn.execute("DROP ROLE IF EXISTS pgwx_plain_user")
    await conn.execute("CREATE ROLE pgwx_plain_user LOGIN")
    try:
        plain = Target(bundled=pg18.bundled, overrides={"user": "pgwx_plain_user"})
        path = write(tmp_path, GOOD)
        report = await _server_check(plain, path)
        assert report.problems == [
            f"{path}: pgwx cannot work on this server: permission denied for database postgres "
            "(it needs to create schemas of its own, pgwx_lab_…)."
        ]
        # Issue 19: and `pgwx run` would refuse its SQL here: no role can fence it.
        assert any("no CREATEROLE" in s and "--trust-sql" in s for s in report.skipped)
    finally:
        await conn.execute("DROP ROLE pgwx_plain_user")
        await conn.close()


async def test_check_refuses_a_mistyped_setting_and_plans_the_others(
    pg18: Target, tmp_path: Path
) -> None:
    """Other settings (issue 37): `pgwx check` asks the server, as `pgwx run` would."""
    path = tmp_path / "s.toml"
    head = 'title = "t"\nworkload = "bulk-write"\n[[variants]]\nname = "a"\n'
    path.write_text(head + 'settings = { max_wal_size = "4GB", wal_compression = "pglz" }\n')
    report = await _server_check(pg18, path)
    assert not report.problems, report.problems
    assert report.plan["a"] == ["bulk-write workload: max_wal_size=4GB, wal_compression=pglz"]
    path.write_text(head + 'settings = { max_wal_sise = "4GB" }\n')
    report = await _server_check(pg18, path)
    assert len(report.problems) == 1
    assert "has no setting named max_wal_sise; did you mean max_wal_size" in report.problems[0]
