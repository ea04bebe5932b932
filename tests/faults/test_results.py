"""The results store shared by several pgwx processes: no locks, no lost runs, private files.

These tests use real processes (`python -c` with this checkout first on PYTHONPATH) where
the promise is about processes, and SIGKILL where it is about crashes.
"""

from __future__ import annotations

import datetime as dt
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from explorer import cli
from explorer.lab.profiles.catalog import load_profile
from explorer.lab.run.runner import Runner, RunOptions
from explorer.lab.store.results import (
    Owner,
    ResultStore,
    owner_gone,
    this_process,
    write_private,
)
from explorer.models import (
    Event,
    Notice,
    PhaseResult,
    PhaseStarted,
    RunRecord,
    ServerInfo,
    TrialResult,
    TrialStatus,
    Variant,
)
from explorer.server.connect import Target
from tests.support.paths import ROOT
from tests.support.runs import fake_caps, small_profile


def make_record(run_id: str, minutes_ago: float = 0.0) -> RunRecord:
    """A run of the quick-demo profile on a made-up PG 18 (no server is needed to store one)."""
    caps = fake_caps(180006)
    return RunRecord(
        id=run_id,
        profile=load_profile("quick-demo"),
        server=ServerInfo(dsn_masked="bundled", bundled=True, capabilities=caps),
        started_at=dt.datetime.now(dt.UTC) - dt.timedelta(minutes=minutes_ago),
    )


def make_trial(run_id: str, repeat: int, status: TrialStatus = "ok") -> TrialResult:
    """One trial of variant 'logged' with a single COPY phase."""
    return TrialResult(
        run_id=run_id,
        variant="logged",
        repeat=repeat,
        status=status,
        reason=None if status == "ok" else "it broke",
        started_at=dt.datetime.now(dt.UTC),
        phases=[PhaseResult(name="load", seconds=1.5 + repeat, rows=1000)],
    )


def note(text: str) -> Notice:
    return Notice(at=0.0, level="info", message=text)


def child(code: str, **kwargs: object) -> subprocess.Popen[str]:
    """Another pgwx-like process on the same store, this checkout first on its path."""
    prelude = f"from {__name__} import *\n"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-c", prelude + textwrap.dedent(code)],
        cwd=ROOT,
        env=env,
        text=True,
        **kwargs,  # type: ignore[call-overload]
    )


def raw_status(path: Path, run_id: str) -> str:
    """The status as written on disk, not as a ResultStore presents it."""
    with sqlite3.connect(path) as db:
        return str(db.execute("SELECT status FROM runs WHERE id = ?", (run_id,)).fetchone()[0])


# --------------------------------------------------------------------------- concurrency


def test_second_store_reads_and_writes_while_a_run_holds_events(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite"
    live = ResultStore(path)
    live.begin_run(make_record("live"))
    live.add_event("live", note("before the first trial"))
    live.add_trial("live", make_trial("live", 1))
    live.add_event("live", note("held until the next trial"))

    other = ResultStore(path)
    assert [r.id for r in other.list_runs()] == ["live"]
    assert other.list_runs()[0].status == "running"
    assert len(other.load("live").trials) == 1
    assert [e.message for e in other.events("live")] == ["before the first trial"]  # type: ignore[union-attr]
    assert other.mark_interrupted() == []
    other.begin_run(make_record("second"))  # a second writer is not locked out either
    other.close()

    assert raw_status(path, "live") == "running"
    live.end_run("live", "finished")
    assert len(list(ResultStore(path).events("live"))) == 2
    live.close()


def test_runs_in_another_terminal_during_a_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "r.sqlite"
    proc = child(
        f"""
        import sys
        store = ResultStore(Path({str(path)!r}))
        store.begin_run(make_record("busy"))
        store.add_event("busy", note("setup"))
        store.add_trial("busy", make_trial("busy", 1))
        store.add_event("busy", note("phase started"))
        print("ready", flush=True)
        sys.stdin.readline()
        store.add_trial("busy", make_trial("busy", 2))
        store.end_run("busy", "finished")
        store.close()
        """,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        monkeypatch.setenv("PGWX_RESULTS", str(path))
        assert cli.main(["runs"]) == 0
        out = capsys.readouterr().out
        assert "busy" in out and "running" in out and "1 ok" in out
        assert cli.main(["report", "busy"]) == 0
        assert "logged" in capsys.readouterr().out
        assert raw_status(path, "busy") == "running"
    finally:
        assert proc.stdin is not None
        proc.stdin.write("go on\n")
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0
    record = ResultStore(path).load("busy")
    assert record.status == "finished" and len(record.trials) == 2


async def test_pgwx_runs_while_the_runner_is_mid_trial(pg18: Target, store: ResultStore) -> None:
    """The real runner, the real `pgwx runs` in another process, mid-phase of trial two."""
    profile = small_profile("table-kind", [Variant(name="logged")], rows=2000, repeats=2)
    runner = Runner(pg18, profile, store, RunOptions(settle_seconds=0.0, warmup=0))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PGWX_RESULTS": str(store.path)}
    listings: list[subprocess.CompletedProcess[str]] = []

    def emit(event: Event) -> None:
        if isinstance(event, PhaseStarted) and not listings and store.trial_counts(runner.run_id):
            listings.append(
                subprocess.run(
                    [sys.executable, "-m", "explorer.cli", "runs"],
                    cwd=ROOT,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=60,
                )
            )

    record = await runner.run(emit)
    assert listings, "no phase started after the first trial"
    listing = listings[0]
    assert listing.returncode == 0, listing.stderr
    assert runner.run_id in listing.stdout and "running" in listing.stdout
    assert record.status == "finished" and len(record.trials) == 2


def test_dead_owner_is_marked_by_the_next_writer_not_by_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "r.sqlite"
    proc = child(
        f"""
        store = ResultStore(Path({str(path)!r}))
        store.begin_run(make_record("orphan"))
        store.add_trial("orphan", make_trial("orphan", 1))
        os._exit(0)  # no end_run: as if killed
        """
    )
    assert proc.wait(timeout=30) == 0

    monkeypatch.setenv("PGWX_RESULTS", str(path))
    assert cli.main(["runs"]) == 0
    assert "incomplete" in capsys.readouterr().out  # shown for what it is ...
    assert raw_status(path, "orphan") == "running"  # ... without writing

    writer = ResultStore(path)
    assert writer.begin_run(make_record("next")) == ["orphan"]
    assert raw_status(path, "orphan") == "incomplete"
    assert writer.load("orphan").trials[0].status == "ok"
    writer.close()


def test_a_failed_trial_write_keeps_its_events_for_the_next(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite"
    store = ResultStore(path)
    store.begin_run(make_record("r"))
    store.add_event("r", note("one"))
    with sqlite3.connect(path) as db:
        db.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON trials WHEN NEW.seq = 0 "
            "BEGIN SELECT RAISE(ABORT, 'refused'); END"
        )
    with pytest.raises(sqlite3.IntegrityError):
        store.add_trial("r", make_trial("r", 1))
    assert list(ResultStore(path).events("r")) == []  # rolled back with the trial
    with sqlite3.connect(path) as db:
        db.execute("DROP TRIGGER refuse")
    store.add_event("r", note("two"))
    store.add_trial("r", make_trial("r", 2))
    assert [e.message for e in ResultStore(path).events("r")] == ["one", "two"]  # type: ignore[union-attr]
    store.close()


def test_owner_identity_survives_pid_reuse() -> None:
    me = this_process()
    assert not owner_gone(me)
    assert owner_gone(Owner(me.host, me.pid, "another-boot:12345"))  # recycled pid
    assert not owner_gone(Owner(socket.gethostname() + "-elsewhere", 1, None))
    assert owner_gone(None)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    assert owner_gone(Owner(me.host, dead.pid, None))


def test_sigkill_during_store_writes_keeps_the_store_sound(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite"
    store = ResultStore(path)
    store.begin_run(make_record("kept", minutes_ago=5))
    for rep in range(3):
        store.add_event("kept", note(f"trial {rep}"))
        store.add_trial("kept", make_trial("kept", rep))
    store.end_run("kept", "finished")
    kept = store.load("kept").model_dump()
    store.close()

    killed = []
    for attempt in range(4):
        proc = child(
            f"""
            store = ResultStore(Path({str(path)!r}))
            run_id = "k{attempt}"
            store.begin_run(make_record(run_id))
            print("writing", flush=True)
            for rep in range(100000):
                for n in range(20):
                    store.add_event(run_id, note("x" * 500))
                store.add_trial(run_id, make_trial(run_id, rep))
            """,
            stdout=subprocess.PIPE,
        )
        assert proc.stdout is not None and proc.stdout.readline() == "writing\n"
        time.sleep(0.2 + 0.15 * attempt)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        killed.append(f"k{attempt}")

    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    after = ResultStore(path)
    assert after.load("kept").model_dump() == kept
    for run_id in killed:
        trials = after.load(run_id).trials
        assert trials, f"{run_id}: no trial reached the disk"
        assert [t.repeat for t in trials] == list(range(len(trials)))
    after.mark_interrupted()  # each child already marked the one killed before it
    assert {raw_status(path, run_id) for run_id in killed} == {"incomplete"}
    after.close()


# --------------------------------------------------------------------------- latest


def test_latest_is_the_latest_run_with_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "r.sqlite"
    store = ResultStore(path)
    store.begin_run(make_record("with-results", minutes_ago=30))
    store.add_trial("with-results", make_trial("with-results", 1))
    store.end_run("with-results", "finished")
    store.begin_run(make_record("all-failed", minutes_ago=20))
    store.add_trial("all-failed", make_trial("all-failed", 1, "failed"))
    store.end_run("all-failed", "failed", "no trial finished")
    store.begin_run(make_record("empty", minutes_ago=10))
    store.end_run("empty", "incomplete", "pgwx stopped before the run ended")
    assert store.choose("latest")[0] == "with-results"
    assert store.resolve("latest") == "empty"  # the newest run, for code that means that
    store.close()

    monkeypatch.setenv("PGWX_RESULTS", str(path))
    assert cli.main(["report", "latest"]) == 0
    out, err = capsys.readouterr()
    assert "latest run with results: with-results (quick-demo, " in err
    assert "logged" in out
    assert cli.main(["replay", "latest", "--headless"]) == 0
    out, err = capsys.readouterr()
    assert "latest run with results: with-results" in err and "logged" in out


def test_latest_without_any_result_is_one_sentence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "r.sqlite"
    store = ResultStore(path)
    store.begin_run(make_record("empty"))
    store.end_run("empty", "incomplete")
    store.close()
    monkeypatch.setenv("PGWX_RESULTS", str(path))
    assert cli.main(["report"]) == 2
    err = capsys.readouterr().err
    assert "No run has a finished trial yet" in err and "Traceback" not in err


# --------------------------------------------------------------------------- file modes


def mode(path: Path) -> int:
    return os.stat(path).st_mode & 0o777


def test_store_and_exports_are_private(tmp_path: Path) -> None:
    made = tmp_path / "home" / "pgwx"
    store = ResultStore(made / "results.sqlite")
    store.begin_run(make_record("r"))
    store.add_trial("r", make_trial("r", 1))
    assert mode(made) == 0o700
    for name in ("results.sqlite", "results.sqlite-wal", "results.sqlite-shm"):
        assert mode(made / name) == 0o600, name
    export = write_private(made / "exports" / "r.md", "| a |\n")
    assert mode(made / "exports") == 0o700 and mode(export) == 0o600
    store.close()


def test_an_existing_directory_keeps_its_mode(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o755)
    ResultStore(shared / "results.sqlite").close()
    assert mode(shared) == 0o755
    assert mode(shared / "results.sqlite") == 0o600
    old = shared / "old.md"
    old.write_text("wide")
    old.chmod(0o644)
    write_private(old, "narrow")
    assert mode(old) == 0o600 and old.read_text() == "narrow"


# --------------------------------------------------------------------------- pipes


@pytest.mark.parametrize("argv", [["runs"], ["report", "latest"], ["profiles"]])
def test_closed_pipe_ends_quietly(tmp_path: Path, argv: list[str]) -> None:
    path = tmp_path / "r.sqlite"
    store = ResultStore(path)
    for n in range(3):
        store.begin_run(make_record(f"run-{n}", minutes_ago=n))
        store.add_trial(f"run-{n}", make_trial(f"run-{n}", 1))
        store.end_run(f"run-{n}", "finished")
    store.close()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PGWX_RESULTS": str(path)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "explorer.cli", *argv],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # like `| head -0`: the reader is gone before pgwx writes
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 0, err
    assert "Broken pipe" not in err and "Traceback" not in err and "Exception" not in err
