"""Issue 34, point 1: `pgwx check` runs a profile's SQL under the same fence as `pgwx run`.

Each hostile profile of the issue — `COPY … TO PROGRAM` smuggled through a table's `columns`,
its `with`, a foreign key's `columns`, a setup statement that fooled the old splitter, text
that closed the old `DO $pgwx_check$` wrapper, and `COMMIT;` in `columns` — goes through
`pgwx check` on PG 18 and PG 15. Before and after, the test compares the roles, the schemas,
the tables in `public` (and a user's rows), the settings and the files a program would have
written. A check that found such a thing, or could not check safely, is never `ok`.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from explorer import cli
from explorer.lab.profiles.catalog import load_profile
from explorer.lab.profiles.check import CheckReport, check_file
from explorer.lab.run.checking import check_on_server
from explorer.lab.workloads.sqllex import split
from explorer.server.connect import Target
from tests.support.hostile import SPLIT_CASES as CASES
from tests.support.runs import RunProfile
from tests.support.server import admin_sql


@dataclass
class Bait:
    target: Target
    drop: Path
    """World-writable folder: a program run by the server would leave a file here."""


@pytest.fixture
async def bait(any_pg: Target) -> AsyncIterator[Bait]:
    drop = Path(tempfile.mkdtemp(prefix="pgwx-drop-", dir="/tmp"))
    os.chmod(drop, 0o777)
    conn = await any_pg.connect("test")
    try:
        await conn.execute(
            "CREATE TABLE public.victim (i int); INSERT INTO public.victim VALUES (1)"
        )
        # Not vacuous: pgwx's own superuser can run a program that writes into `drop`.
        await conn.execute(f"COPY (SELECT 1) TO PROGRAM 'cat > {drop}/sanity'")
        assert (drop / "sanity").exists()
        (drop / "sanity").unlink()
        yield Bait(any_pg, drop)
    finally:
        await conn.execute("DROP TABLE IF EXISTS public.victim, public.planted")
        await conn.execute("DROP SCHEMA IF EXISTS planted CASCADE")
        await conn.close()
        shutil.rmtree(drop, ignore_errors=True)


async def world(bait: Bait) -> dict[str, Any]:
    """Roles, schemas, tables in public (and the victim's rows), settings, files."""
    conn = await bait.target.connect("test")
    try:
        out = {
            "roles": await conn.fetch(
                "SELECT rolname, rolsuper, rolcanlogin FROM pg_roles ORDER BY 1"
            ),
            "schemas": await conn.fetch(
                "SELECT nspname, obj_description(oid, 'pg_namespace') FROM pg_namespace "
                "WHERE nspname !~ '^pg_(toast_)?temp_' ORDER BY 1"
            ),
            "public": await conn.fetch(
                "SELECT relname, relkind FROM pg_class "
                "WHERE relnamespace = 'public'::regnamespace ORDER BY 1"
            ),
            "victim": await conn.fetch("SELECT i FROM public.victim ORDER BY i"),
            "settings": await conn.fetch("SELECT name, setting FROM pg_settings ORDER BY name"),
            "prepared": await conn.fetchval("SELECT count(*) FROM pg_prepared_xacts"),
        }
    finally:
        await conn.close()
    res: dict[str, Any] = {
        k: [tuple(r) for r in v] if isinstance(v, list) else v for k, v in out.items()
    }
    res["files"] = sorted(p.name for p in bait.drop.iterdir())
    return res


def profile_text(drop: Path, *, columns: str = "a int", with_: str = "", fk: str = "",
                 setup: str = "") -> str:  # fmt: skip
    """A one-variant sql profile with a parent table and the hostile text where named."""
    child = f"[[params.tables]]\nname = \"c\"\ncolumns = '''{columns}'''\n"
    if with_:
        child += f"with = '''{with_}'''\n"
    if fk:
        child += (
            f"[[params.tables.foreign_keys]]\ncolumns = '''{fk}'''\nreferences = \"p (id)\"\n"
            "follows_knob = false\n"
        )
    return (
        'title = "hostile"\nworkload = "sql"\nrepeats = 1\nsettle_seconds = 0\n\n[params]\n'
        + (f"setup = '''{setup}'''\n" if setup else "")
        + '\n[[params.tables]]\nname = "p"\ncolumns = "id int PRIMARY KEY"\n\n'
        + child
        + '\n[[params.phases]]\nname = "fill"\nsql = "INSERT INTO {p} VALUES (1)"\n\n'
        + '[[variants]]\nname = "a"\n'
    ).replace("{drop}", str(drop))


PROGRAM = "COPY (SELECT 1) TO PROGRAM 'touch {drop}/%s'"

HOSTILE: dict[str, dict[str, str]] = {
    "columns": {"columns": f"a int); {PROGRAM % 'columns'}; SELECT (1"},
    "columns-comment": {"columns": f"a int); {PROGRAM % 'columns2'} --"},
    "with": {"with_": f"fillfactor = 90); {PROGRAM % 'with'}; SELECT (1"},
    "fk-columns": {"fk": f"a) REFERENCES p (id)); {PROGRAM % 'fk'}; --"},
    "setup-splitter": {"setup": f"SELECT E'\\''; {PROGRAM % 'setup'}; SELECT 'x'"},
    "setup-dollar-ident": {"setup": f"SELECT 1 AS a$b$; {PROGRAM % 'dollar'}; SELECT $b$"},
    "do-wrapper": {
        "setup": f"/* /* */ vacuum */ END $pgwx_check$; {PROGRAM % 'do'}; "
        "DO $pgwx_check$ BEGIN NULL"
    },
    "commit-in-columns": {
        "columns": "a int); COMMIT; DROP TABLE public.victim; CREATE TABLE public.planted (a int); "
        "CREATE SCHEMA planted; SELECT (1"
    },
    "commit-in-setup": {
        "setup": "COMMIT; DROP TABLE public.victim; CREATE TABLE public.planted (a int)"
    },
}


async def checked(bait: Bait, tmp_path: Path, text: str) -> CheckReport:
    path = tmp_path / "hostile.toml"
    path.write_text(text)
    report = check_file(path)
    assert report.ok, report.problems
    await check_on_server(bait.target, path, report)
    return report


@pytest.mark.parametrize("name", list(HOSTILE))
async def test_a_hostile_profile_changes_nothing_through_check_and_is_not_ok(
    bait: Bait, tmp_path: Path, name: str
) -> None:
    text = profile_text(bait.drop, **HOSTILE[name])
    before = await world(bait)
    report = await checked(bait, tmp_path, text)
    after = await world(bait)
    changed = {k: (before[k], after[k]) for k in before if before[k] != after[k]}
    assert not changed, f"{name} changed {sorted(changed)}"
    assert not report.ok, f"check said {name} is ok"
    assert all("Traceback" not in p and "internal error" not in p for p in report.problems)


async def test_check_runs_the_profiles_sql_as_the_fenced_role_not_as_pgwx(
    bait: Bait, tmp_path: Path
) -> None:
    """Inheriting from a user's table needs to own it: pgwx's superuser could, the run's
    fenced role may not, so the check says what the run would meet."""
    before = await world(bait)
    report = await checked(
        bait, tmp_path, profile_text(bait.drop, columns="a int) INHERITS (public.victim")
    )
    assert await world(bait) == before
    assert len(report.problems) == 1, report.problems
    assert (
        "field params.tables[1]: variant a cannot create its tables: must be owner of table victim."
        in (report.problems[0])
    )
    assert (await checked(bait, tmp_path, profile_text(bait.drop))).ok


async def test_check_without_createrole_does_not_run_the_sql_and_is_not_ok(
    bait: Bait, tmp_path: Path
) -> None:
    await admin_sql(
        bait.target,
        "DROP ROLE IF EXISTS pgwx_t_plain",
        "CREATE ROLE pgwx_t_plain LOGIN",
        "GRANT CREATE ON DATABASE postgres TO pgwx_t_plain",
    )
    try:
        plain = Target(bundled=bait.target.bundled, overrides={"user": "pgwx_t_plain"})
        path = tmp_path / "p.toml"
        path.write_text(profile_text(bait.drop))
        report = check_file(path)
        before = await world(bait)
        await check_on_server(plain, path, report)
        assert await world(bait) == before
        assert not report.ok
        assert any("SQL was not checked" in p and "no CREATEROLE" in p for p in report.problems), (
            report.problems
        )
    finally:
        await admin_sql(
            bait.target,
            "REVOKE CREATE ON DATABASE postgres FROM pgwx_t_plain",
            "DROP OWNED BY pgwx_t_plain CASCADE",
            "DROP ROLE pgwx_t_plain",
        )


def test_cli_check_of_a_hostile_profile_exits_1_and_writes_nothing(
    pg18: Target,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    drop = Path(tempfile.mkdtemp(prefix="pgwx-drop-", dir="/tmp"))
    os.chmod(drop, 0o777)
    try:
        monkeypatch.chdir(tmp_path)
        for var in ("PGHOST", "PGPORT", "PGUSER", "PGDATABASE", "PGSERVICE"):
            monkeypatch.delenv(var, raising=False)
        (tmp_path / "hostile.toml").write_text(profile_text(drop, **HOSTILE["setup-splitter"]))
        assert pg18.bundled is not None
        code = cli.main(["check", "hostile.toml", "--data-dir", str(pg18.bundled.data_dir)])
        out = capsys.readouterr().out
        assert code == 1, out
        assert "hostile.toml: ok" not in out
        assert list(drop.iterdir()) == []
    finally:
        shutil.rmtree(drop, ignore_errors=True)


async def test_each_piece_the_splitter_cuts_is_one_statement_to_the_server(any_pg: Target) -> None:
    """The splitter against the server's own lexer: no piece holds two statements."""
    conn = await any_pg.connect("test")
    try:
        for script, pieces in CASES:
            assert split(script) == pieces
            for piece in pieces:
                try:
                    await conn.prepare(piece)
                except asyncpg.PostgresError as exc:
                    assert "multiple commands" not in str(exc), (script, piece)
    finally:
        await conn.close()


@pytest.mark.parametrize("name", list(HOSTILE))
async def test_a_hostile_profile_changes_nothing_through_run_either(
    bait: Bait, tmp_path: Path, run_profile: RunProfile, name: str
) -> None:
    path = tmp_path / "hostile.toml"
    path.write_text(profile_text(bait.drop, **HOSTILE[name]))
    before = await world(bait)
    record, _ = await run_profile(bait.target, load_profile(path), check_clean=False)
    after = await world(bait)
    changed = {k: (before[k], after[k]) for k in before if before[k] != after[k]}
    assert not changed, f"{name} changed {sorted(changed)}"
    assert record.status == "failed", f"{name} was not refused: {record.trials}"
