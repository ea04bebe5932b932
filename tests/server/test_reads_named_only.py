"""Issue 34, point 2: a profile reads only what it names.

The read role gets SELECT on the table `prepare.source` names, for the run, and nothing else:
no `pg_read_all_data`, so a prepare query cannot copy every role's SCRAM verifier out of
`pg_authid` (nor another of the user's tables) into the notes and the store. `prepare.file`
is read only under the profile's folder or the working directory, never through a link out.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from explorer.lab.profiles.catalog import ProfileError, load_profile
from explorer.lab.workloads import build_workload
from explorer.models import Profile, Variant
from explorer.server.connect import Target
from tests.support.runs import RunProfile
from tests.support.server import admin_sql


def reading(prepare: dict[str, Any], verify: str = "") -> Profile:
    params: dict[str, Any] = {
        "tables": [{"name": "t", "columns": "a text, b text"}],
        "prepare": prepare,
        "phases": [{"name": "load", "copy": "t"}],
        "verify": verify,
    }
    return Profile(
        name="reader", title="reader", workload="sql", params=params, repeats=1,
        settle_seconds=0, variants=[Variant(name="a")],
    )  # fmt: skip


@pytest.fixture
async def tables(any_pg: Target) -> Any:
    await admin_sql(
        any_pg,
        "CREATE TABLE public.src (a text, b text); INSERT INTO public.src VALUES ('x', 'y')",
        "CREATE TABLE public.other (a text, b text)",
        "INSERT INTO public.other VALUES ('secret-row', 't')",
    )
    yield any_pg
    await admin_sql(any_pg, "DROP TABLE public.src, public.other")


@pytest.mark.parametrize(
    "query",
    ["SELECT rolname, rolpassword FROM pg_authid", "SELECT a, b FROM public.other"],
)
async def test_a_prepare_query_reads_nothing_the_profile_does_not_name(
    tables: Target, run_profile: RunProfile, query: str
) -> None:
    record, _ = await run_profile(tables, reading({"sql": query}), check_clean=False)
    assert record.status == "failed"
    assert "permission denied" in (record.reason or ""), record.reason
    dumped = record.model_dump_json()
    assert "SCRAM-SHA-256$" not in dumped
    assert "secret-row" not in dumped


async def test_the_named_source_is_read_and_nothing_else(
    tables: Target, run_profile: RunProfile
) -> None:
    profile = reading(
        {"source": "public.src", "limit": 10},
        verify="SELECT count(*) AS n, max(a) AS a FROM {t}",
    )
    record, _ = await run_profile(tables, profile, check_clean=False)
    assert record.status == "finished", record.reason
    assert record.trials[0].phases[-1].detail.get("verify") == "n=1, a=x"


def test_a_system_catalog_is_never_a_source() -> None:
    with pytest.raises(ValueError, match="not a system catalog"):
        build_workload(reading({"source": "pg_catalog.pg_authid", "limit": 10}))


def _profile_file(folder: Path, data: str) -> Path:
    path = folder / "p.toml"
    path.write_text(
        f"""title = "p"
workload = "sql"
[params]
prepare = {{ file = "{data}" }}
[[params.tables]]
name = "t"
columns = "a text"
[[params.phases]]
name = "load"
copy = "t"
[[variants]]
name = "a"
"""
    )
    return path


def test_a_prepare_file_outside_the_profiles_folder_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, elsewhere = tmp_path / "profile", tmp_path / "cwd"
    folder.mkdir()
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    (folder / "rows.txt").write_text("x\n")
    (folder / "link.txt").symlink_to("/etc/hostname")
    assert load_profile(_profile_file(folder, "rows.txt")).params["prepare"]["file"] == str(
        folder / "rows.txt"
    )
    for given in ("/etc/hostname", "link.txt", "../../../../etc/hostname"):
        with pytest.raises(ProfileError, match="outside the profile's folder") as caught:
            load_profile(_profile_file(folder, given))
        assert "field params.prepare.file" in str(caught.value)
    (elsewhere / "here.txt").write_text("x\n")
    assert load_profile(_profile_file(folder, str(elsewhere / "here.txt")))


def test_a_user_profile_shadowing_a_shipped_one_is_announced_when_it_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 34, point 4: a `durability.toml` in the config folder runs only with a notice."""
    config, work = tmp_path / "config", tmp_path / "work"
    (config / "pgwx" / "profiles").mkdir(parents=True)
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    mine = config / "pgwx" / "profiles" / "durability.toml"
    mine.write_text('title = "mine"\nworkload = "table-kind"\n[[variants]]\nname = "a"\n')
    said: list[str] = []
    assert load_profile("durability", said.append).title == "mine"
    assert len(said) == 1 and said[0].startswith(f"using {mine}, not the shipped profile")


def _bounded(sql: str, verify: str, seconds: float) -> Profile:
    params: dict[str, Any] = {
        "tables": [{"name": "t", "columns": "a int"}],
        "phases": [{"name": "go", "sql": sql}],
        "verify": verify,
        "statement_seconds": seconds,
    }
    return Profile(
        name="bounded", title="bounded", workload="sql", params=params, repeats=1,
        settle_seconds=0, variants=[Variant(name="a")],
    )  # fmt: skip


async def test_a_statement_is_bounded_client_side_and_notes_are_bounded(
    any_pg: Target, run_profile: RunProfile
) -> None:
    """Issue 34, point 4: `SET statement_timeout = 0` cannot make a phase hang the run, and a
    verify row of 100,000 characters is not 100,000 characters in the notes and the store."""
    hang = _bounded("SET statement_timeout = 0; SELECT pg_sleep(120)", "", 2)
    record, _ = await run_profile(any_pg, hang, check_clean=False)
    trial = record.trials[0]
    assert trial.status == "failed"
    assert "ran longer than 2 s and was cancelled" in (trial.reason or ""), trial.reason
    conn = await any_pg.connect("test")
    try:
        assert not await conn.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(120)%' "
            "AND pid <> pg_backend_pid()"
        )
    finally:
        await conn.close()
    big = _bounded("INSERT INTO {t} VALUES (1)", "SELECT repeat('x', 100000) AS big", 60)
    record, _ = await run_profile(any_pg, big, check_clean=False)
    assert record.status == "finished", record.reason
    note = record.trials[0].phases[-1].detail["verify"]
    assert len(note) < 2_100 and "cut: 100,004 characters" in note


async def test_a_prepare_step_cannot_fill_the_disk(
    any_pg: Target, run_profile: RunProfile, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 34, point 4: the prepared data has a bound (64 MiB at least; 100 kB here), one
    sentence naming it and --allow-large."""
    from explorer.lab.workloads import data_bounds as bounds

    monkeypatch.setattr(bounds, "PREPARED_FLOOR", 100_000)
    profile = reading({"sql": "SELECT repeat('x', 1000), 'y' FROM generate_series(1, 1000)"})
    record, _ = await run_profile(any_pg, profile, check_clean=False)
    assert record.status == "failed"
    assert (
        "the prepare step's data (after 99 rows) is more than 97.7 KiB, over this run's "
        "bound of 97.7 KiB" in (record.reason or "")
    ), record.reason
    assert "--allow-large" in (record.reason or "")
