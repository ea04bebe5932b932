"""Issue 34, point 3: what a profile does to its own role is said; an imitator is no pgwx.

Any role may set its own password and its own settings (`ALTER ROLE CURRENT_USER …`), and no
fence the server offers refuses it: pgwx looks at the run's roles before dropping them and
says, on the run's last line, what the profile changed (gone with the role).

Any session may take pgwx's advisory keys and call itself `pgwx-admin` or
`pgwx-run-<id> <pid>@<host>`. A holder of the settings key whose user may not change server
settings (no superuser, no ALTER SYSTEM granted) cannot be a pgwx with settings changed: it
is named as what it is, never "another pgwx".
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from explorer.lab.safety.owner import LOCK_CLASS, SETTINGS_KEY, RunOwner, ServerBusy, run_key
from explorer.models import Notice, Profile, Variant
from explorer.server.connect import Target
from tests.support.cli import private_env
from tests.support.runs import RunProfile
from tests.support.server import admin_sql

CHANGE_OWN_ROLE = """DO $$ BEGIN
  EXECUTE 'ALTER ROLE CURRENT_USER PASSWORD ' || quote_literal('chosen-by-the-profile');
  EXECUTE 'ALTER ROLE CURRENT_USER SET work_mem = ''64MB''';
END $$"""


def own_role_profile() -> Profile:
    params = {
        "tables": [{"name": "t", "columns": "a int"}],
        "phases": [{"name": "change", "sql": CHANGE_OWN_ROLE}],
    }
    return Profile(
        name="own-role", title="own-role", workload="sql", params=params, repeats=1,
        settle_seconds=0, variants=[Variant(name="a")],
    )  # fmt: skip


async def test_a_profile_changing_its_own_role_is_said(
    any_pg: Target, run_profile: RunProfile
) -> None:
    record, events = await run_profile(any_pg, own_role_profile(), check_clean=False)
    assert record.trials[0].status == "ok", record.trials[0].reason
    said = [e.message for e in events if isinstance(e, Notice) and "own role" in e.message]
    assert len(said) == 1, said
    role = f"pgwx_run_{record.id.replace('-', '_')}"
    assert f"({role}: its password, work_mem=64MB)" in said[0], said[0]
    conn = await any_pg.connect("test")
    try:
        assert not await conn.fetchval("SELECT count(*) FROM pg_roles WHERE rolname = $1", role)
    finally:
        await conn.close()


def test_the_last_line_says_it(pg18: Target, tmp_path: Path) -> None:
    assert pg18.bundled is not None
    kw = pg18.bundled.connect_kwargs()
    dsn = f"postgresql://{kw['user']}@/postgres?host={kw['host']}&port={kw['port']}"
    profile = tmp_path / "own.toml"
    profile.write_text(
        'title = "own role"\nworkload = "sql"\nrepeats = 1\nwarmup = 0\nsettle_seconds = 0\n'
        '[params]\n[[params.tables]]\nname = "t"\ncolumns = "a int"\n'
        f'[[params.phases]]\nname = "change"\nsql = """{CHANGE_OWN_ROLE}"""\n'
        '[[variants]]\nname = "a"\n'
    )
    (tmp_path / "tmp").mkdir()
    proc = subprocess.run(
        [sys.executable, "-m", "explorer.cli", "run", str(profile), "--dsn", dsn, "--no-sample"],
        env={**private_env(tmp_path), "TMPDIR": str(tmp_path / "tmp")},
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("saved as run"), proc.stderr
    assert "the profile changed its own role during the run (pgwx_run_" in last, last
    assert "its password, work_mem=64MB); pgwx drops the role at the end" in last, last


@pytest.fixture
async def mallory(any_pg: Target) -> AsyncIterator[Target]:
    """A plain login role: no superuser, no ALTER SYSTEM."""
    await admin_sql(any_pg, "DROP ROLE IF EXISTS mallory", "CREATE ROLE mallory LOGIN")
    try:
        yield Target(bundled=any_pg.bundled, overrides={"user": "mallory"})
    finally:
        await admin_sql(any_pg, "DROP ROLE mallory")


@pytest.mark.parametrize(
    "app", ["admin", "run-20990101-000000-abcdef 4242@build-host"], ids=["admin", "owner"]
)
async def test_an_imitator_of_pgwx_is_named_as_what_it_is(
    any_pg: Target, mallory: Target, app: str
) -> None:
    holder = await mallory.connect(app)  # application_name pgwx-admin / pgwx-run-… 4242@…
    try:
        await holder.execute(
            "SELECT pg_advisory_lock($1, $2), pg_advisory_lock($1, $3)",
            LOCK_CLASS,
            SETTINGS_KEY,
            run_key("20990101-000000-abcdef"),
        )
        owner = RunOwner(any_pg, "20990101-000000-dddddd")
        with pytest.raises(ServerBusy) as busy:
            await owner.open(settings=True)
        await owner.close()
    finally:
        await holder.close()
    text = str(busy.value)
    assert "another pgwx" not in text, text
    assert "a session that is not a pgwx's" in text and "user mallory" in text, text
