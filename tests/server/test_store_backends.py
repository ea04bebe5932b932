"""The results store's promises, on both backends: a SQLite file and a team's PostgreSQL.

Each test here runs twice — once on a private SQLite file, once on a fresh database of the
session's PostgreSQL 18 — through the same `ResultStore` API: a finished trial is committed as
it ends, a killed run is marked by the next writer and never by a reader, two writers never
clash, `latest` skips a run still going, and no password is stored.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from explorer.lab.store.backends import PG_SCHEMA, SCHEMA_VERSION, StoreError
from explorer.lab.store.results import ResultStore
from explorer.server.embedded import LocalServer
from tests.support.stored import fresh_database, record, store_url, trial

SECRET = "s3cret-never-stored"


@pytest.fixture(params=["sqlite", "postgres"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """Where a fresh store lives: a file, or a new database on PG 18."""
    if request.param == "sqlite":
        yield str(tmp_path / "r.sqlite")
        return
    server: LocalServer = request.getfixturevalue("pg18_server")
    with fresh_database(server) as database:
        yield store_url(server, database, SECRET)


def test_a_finished_trial_is_readable_by_another_store_at_once(location: str) -> None:
    writer, reader = ResultStore(location), ResultStore(location)
    writer.begin_run(record("r1"))
    writer.add_trial("r1", trial("r1", secs=1.25))
    # committed as it ended: a second connection sees it before the run ends
    assert [t.phases[0].seconds for t in reader.load("r1").trials] == [1.25]
    writer.end_run("r1", "finished")
    assert reader.load("r1").status == "finished"
    writer.close()
    reader.close()


def test_latest_skips_a_run_still_going(location: str) -> None:
    store = ResultStore(location)
    store.begin_run(record("ended", minutes_ago=30))
    store.add_trial("ended", trial("ended"))
    store.end_run("ended", "finished")
    store.begin_run(record("going", minutes_ago=1))
    store.add_trial("going", trial("going"))
    assert store.choose("latest")[0] == "ended"
    assert [r.id for r in store.list_runs()] == ["going", "ended"]
    store.close()


KILLED_WRITER = textwrap.dedent(
    """
    import os, sys, datetime as dt
    sys.path.insert(0, {root!r})
    from tests.support.stored import fresh_database, record, store_url, trial
    from explorer.lab.store.results import ResultStore
    store = ResultStore({location!r})
    store.begin_run(record("killed"))
    store.add_trial("killed", trial("killed"))
    os._exit(0)  # gone without end_run, as a kill -9 would leave it
    """
)


def test_a_killed_run_is_marked_by_the_next_writer_never_by_a_reader(location: str) -> None:
    root = str(Path(__file__).resolve().parents[2])
    code = KILLED_WRITER.format(root=root, location=location)
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
    reader = ResultStore(location)
    assert reader.list_runs()[0].status == "incomplete"  # as seen…
    assert reader.sql.one("SELECT status FROM runs WHERE id = ?", ("killed",)) == ("running",)
    assert reader.load("killed").trials, "its finished trial is kept"
    writer = ResultStore(location)
    assert writer.begin_run(record("next")) == ["killed"]
    assert reader.sql.one("SELECT status FROM runs WHERE id = ?", ("killed",)) == ("incomplete",)
    reader.close()
    writer.close()


CONCURRENT_WRITER = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, {root!r})
    from tests.support.stored import fresh_database, record, store_url, trial
    from explorer.lab.store.results import ResultStore
    run_id, start = sys.argv[1], float(sys.argv[2])
    store = ResultStore({location!r})
    store.begin_run(record(run_id))
    while time.time() < start:  # every writer starts at once: their trials collide
        time.sleep(0.001)
    for n in range({trials}):
        store.add_trial(run_id, trial(run_id, repeat=n + 1))
    store.end_run(run_id, "finished")
    store.close()
    """
)
WRITERS, TRIALS = 4, 150
"""Enough to collide: with a write transaction that takes the lock only at its first write
(a deferred BEGIN), SQLite's "database is locked" ended a writer in most such runs."""


def test_two_writers_at_once_never_clash(location: str) -> None:
    """Several processes writing trials at once all succeed (issue 40, promise 7)."""
    root = str(Path(__file__).resolve().parents[2])
    code = CONCURRENT_WRITER.format(root=root, location=location, trials=TRIALS)
    start = str(time.time() + 3)  # after every child has started and opened the store
    children = [
        subprocess.Popen(
            [sys.executable, "-c", code, f"w{n}", start], stderr=subprocess.PIPE, text=True
        )
        for n in range(WRITERS)
    ]
    said = [c.communicate(timeout=180)[1] for c in children]
    assert [c.returncode for c in children] == [0] * WRITERS, said
    store = ResultStore(location)
    for n in range(WRITERS):
        run = store.load(f"w{n}")
        assert run.status == "finished"
        assert [t.repeat for t in run.trials] == list(range(1, TRIALS + 1))
    store.close()


def test_events_held_in_memory_are_written_with_the_trial(location: str) -> None:
    from explorer.models import Notice

    store = ResultStore(location)
    store.begin_run(record("ev"))
    for n in range(3):
        store.add_event("ev", Notice(t=float(n), message=f"note {n}"))
    store.add_trial("ev", trial("ev"))
    other = ResultStore(location)
    assert [e.message for e in other.events("ev")] == ["note 0", "note 1", "note 2"]  # type: ignore[union-attr]
    store.close()
    other.close()


def test_no_password_reaches_the_store_or_its_name(location: str) -> None:
    store = ResultStore(location)
    store.begin_run(record("pw"))
    store.add_trial("pw", trial("pw"))
    store.end_run("pw", "finished")
    assert SECRET not in str(store.path)
    rows = store.sql.all("SELECT record FROM runs") + store.sql.all("SELECT result FROM trials")
    assert rows and all(SECRET not in str(r) for r in rows)
    store.close()
    if not location.startswith("postgresql://"):
        assert SECRET.encode() not in Path(location).read_bytes()


def test_postgres_store_has_a_schema_version_and_refuses_a_newer_one(
    pg18_server: LocalServer,
) -> None:
    with fresh_database(pg18_server) as database:
        url = store_url(pg18_server, database)
        ResultStore(url).close()
        store = ResultStore(url)
        version = store.sql.one(f"SELECT value FROM {PG_SCHEMA}.meta WHERE key = 'schema_version'")
        assert version == (str(SCHEMA_VERSION),)
        store.sql.run(f"UPDATE {PG_SCHEMA}.meta SET value = '99' WHERE key = 'schema_version'")
        store.close()
        with pytest.raises(StoreError, match="schema version 99"):
            ResultStore(url)


def test_an_unreachable_postgres_store_is_one_sentence_without_the_password(
    tmp_path: Path,
) -> None:
    url = f"postgresql://me:{SECRET}@/nowhere?host={tmp_path}&port=5999"
    with pytest.raises(StoreError) as caught:
        ResultStore(url)
    said = str(caught.value)
    assert SECRET not in said and said.startswith("Cannot open the results store")
    assert "\n" not in said
