"""Issue 34, point 5: a store no planted row can break, on SQLite and on PostgreSQL.

A teammate with INSERT on the team's store plants rows: a run whose record is `{}`, a run
whose id holds a control character, a run whose id is yours with `_` after it, a trial that
is not a trial. Every command still works for every user: `runs` lists the damaged rows as
damaged, `report`/`compare`/`history`/`replay`/`push` skip them with a sentence, an exact id
beats a longer one, and no command ends in an internal error or writes a control character.
A store given in a form pgwx cannot read is refused before anything is created from it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from explorer import cli
from explorer.lab.store.backends import PG_SCHEMA, StoreError
from explorer.lab.store.results import DamagedRun, ResultStore
from explorer.server.embedded import LocalServer
from tests.support.stored import fresh_database, record, store_url, trial

SECRET = "pl4nted-s3cret"
MINE = "20261101-100000-aaaaaa"
OLDER = "20261101-090000-bbbbbb"
EMPTY = "20261101-110000-cccccc"
CONTROL = "20261101-120000-dddddd\x1b]0;pwned\x07"
SHADOW = MINE + "_"


@pytest.fixture(params=["sqlite", "postgres"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield str(tmp_path / "team.sqlite")
        return
    server: LocalServer = request.getfixturevalue("pg18_server")
    with fresh_database(server) as database:
        yield store_url(server, database, SECRET)


def planted(location: str) -> None:
    """Two good runs of quick-demo, then what a teammate with INSERT plants."""
    store = ResultStore(location)
    try:
        for run_id, minutes in ((OLDER, 60), (MINE, 30)):
            store.begin_run(record(run_id, minutes_ago=minutes))
            for rep in (1, 2, 3):
                store.add_trial(run_id, trial(run_id, "logged", rep, secs=1.0 + rep / 10))
                store.add_trial(run_id, trial(run_id, "unlogged", rep, secs=0.5 + rep / 10))
            store.end_run(run_id, "finished")
        good = record(MINE).model_dump_json(exclude={"trials"})
        rows = [
            (EMPTY, "2099-01-01T00:00:00+00:00", "quick-demo", "finished", "{}"),
            (CONTROL, "2099-01-02T00:00:00+00:00", "quick-demo", "finished",
             good.replace(MINE, CONTROL.replace("\x1b", "\\u001b").replace("\x07", "\\u0007"))),
            (SHADOW, "2099-01-03T00:00:00+00:00", "quick-demo", "running",
             good.replace(MINE, SHADOW)),
        ]  # fmt: skip
        store.sql.begin()
        store.sql.many("INSERT INTO runs VALUES (?, ?, ?, ?, ?)", rows)
        store.sql.many(
            "INSERT INTO trials VALUES (?, ?, ?)",
            [(EMPTY, 0, '{"status": "ok"}'), (MINE, 99, '{"status": "ok"}')],
        )
        store.sql.many("INSERT INTO events VALUES (?, ?, ?)", [(MINE, 9999, '{"kind": "x"}')])
        store.sql.commit()
    finally:
        store.close()


def pgwx(capsys: pytest.CaptureFixture[str], location: str, *args: str) -> tuple[int, str, str]:
    code = cli.main(["--results", location, *args])
    out, err = capsys.readouterr()
    for text in (out, err):
        assert "internal error" not in text and "Traceback" not in text, text
        assert "\x1b" not in text and "\x07" not in text
        assert SECRET not in text
    return code, out, err


def test_planted_rows_break_no_command(
    location: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PGWX_RESULTS", location)  # --results sets it; put it back afterwards
    planted(location)
    code, out, _ = pgwx(capsys, location, "runs")
    assert code == 0
    lines = {ln.split()[0]: ln for ln in out.splitlines()[1:]}
    assert "damaged" in lines[EMPTY] and "does not validate" in lines[EMPTY]
    assert "damaged" in lines["20261101-120000-dddddd\\x1b]0;pwned\\x07"]
    assert lines[MINE].split()[2] == "finished"
    assert "1 damaged" in lines[MINE], "a planted trial row is counted as damaged"

    # An exact id wins over the planted `<id>_`; the planted trial is left out, said once.
    code, out, err = pgwx(capsys, location, "report", MINE, "--format", "json")
    assert code == 0, err
    assert f'"{MINE}"' in out
    assert f"trial 99 of run {MINE}" in err and "damaged" in err
    # `latest` skips the newer damaged rows (and the planted run still "running").
    code, out, err = pgwx(capsys, location, "report", "latest")
    assert code == 0, err
    assert f"latest run with results: {MINE}" in err
    # Prefixes are literal: `_` and `%` are not wildcards.
    code, _, err = pgwx(capsys, location, "report", "20261101-1_0000")
    assert code == 2 and "No run matches '20261101-1_0000'" in err
    code, _, err = pgwx(capsys, location, "report", "%")
    assert code == 2 and "No run matches '%'" in err
    # A damaged run asked for by name: one sentence.
    code, _, err = pgwx(capsys, location, "report", EMPTY)
    assert code == 2 and f"Run {EMPTY} in" in err and "is damaged" in err

    code, out, err = pgwx(capsys, location, "compare", OLDER, MINE)
    assert code == 0, err
    code, out, err = pgwx(capsys, location, "history", "quick-demo")
    assert code == 0, err
    assert OLDER in out and MINE in out
    assert f"run {EMPTY} in" in err and "pgwx leaves it as it is" in err
    code, out, err = pgwx(capsys, location, "replay", MINE, "--headless", "--speed", "0")
    assert code == 0, err
    assert "event(s) of run" in err and "damaged" in err

    local = str(tmp_path / "pushed.sqlite")
    code, out, err = pgwx(capsys, location, "push", "all", "--from", location, "--to", local)
    assert code == 1, (out, err)  # something was left out, and said
    assert f"copied {OLDER}" in out and f"copied {MINE}" in out
    assert f"run {EMPTY} in" in err
    copy = ResultStore(local)
    try:
        assert sorted(r.id for r in copy.list_runs()) == [OLDER, MINE, SHADOW]
    finally:
        copy.close()


def test_a_planted_running_row_does_not_stop_the_next_run_from_starting(location: str) -> None:
    planted(location)
    store = ResultStore(location)
    try:
        store.sql.begin()
        store.sql.run(
            "INSERT INTO runs VALUES (?, ?, ?, ?, ?)",
            ("20261101-130000-eeeeee", "2099-01-04T00:00:00+00:00", "x", "running", "{}"),
        )
        store.sql.commit()
        fresh = "20261127-000000-ffffff"
        store.begin_run(record(fresh))  # marks orphans incomplete: the damaged one is left
        store.end_run(fresh, "finished")
        assert store.load(fresh).status == "finished"
        entries = store.list_entries(limit=100)
        assert sum(isinstance(e, DamagedRun) for e in entries) == 3
    finally:
        store.close()


def test_an_unreadable_schema_version_is_one_sentence(pg18_server: LocalServer) -> None:
    with fresh_database(pg18_server) as database:
        url = store_url(pg18_server, database, SECRET)
        store = ResultStore(url)
        store.sql.run(f"UPDATE {PG_SCHEMA}.meta SET value = 'abc' WHERE key = 'schema_version'")
        store.close()
        with pytest.raises(StoreError) as caught:
            ResultStore(url)
        said = str(caught.value)
        assert "schema version pgwx cannot read ('abc'" in said and "\n" not in said
        assert SECRET not in said


def test_results_takes_a_keyword_connection_string_as_dsn_does(
    pg18_server: LocalServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PGWX_RESULTS", str(tmp_path / "unused.sqlite"))
    with fresh_database(pg18_server) as database:
        kw = pg18_server.connect_kwargs(database)
        keywords = (
            f"host={kw['host']} port={kw['port']} user={kw['user']} dbname={database} "
            f"password={SECRET}"
        )
        planted(store_url(pg18_server, database))
        code, out, _ = pgwx(capsys, keywords, "runs")
        assert code == 0 and MINE in out
    assert sorted(os.listdir(tmp_path)) == [], "nothing named from the string was created"


@pytest.mark.parametrize(
    "given",
    [
        f"PostgreSQL://me:{SECRET}@db/app",
        f"postgresql:/me:{SECRET}@db/app",
        f"pgsql://me:{SECRET}@db/app",
        f"host=db passwrd={SECRET}",
        "",
        "   ",
    ],
)
def test_results_that_pgwx_cannot_read_is_refused_and_creates_nothing(
    given: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PGWX_RESULTS", str(tmp_path / "unused.sqlite"))
    code = cli.main(["--results", given, "runs"])
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    assert err.startswith("pgwx: The results store") and err.count("\n") == 1
    assert SECRET not in err and "no runs yet" not in out
    assert sorted(os.listdir(tmp_path)) == []
