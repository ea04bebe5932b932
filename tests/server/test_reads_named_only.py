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
