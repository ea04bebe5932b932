"""`pgwx run` as a separate process: a SIGKILL keeps finished trials, the bundled server stops.

These run the real command line in a child process (`python -m explorer.cli`), the way a
person runs it, so nothing in-process (an event loop, a still-open store) can help them pass.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from explorer.lab.store.results import ResultStore
from explorer.server.connect import LIBPQ_ENV, Target
from explorer.server.embedded import LocalServer
from tests.support.cli import FINISHED
from tests.support.paths import ROOT
from tests.support.server import drop_pgwx_schemas


def child_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """This checkout first on the path, a private store and journal, no libpq variables."""
    env = {k: v for k, v in os.environ.items() if k not in LIBPQ_ENV}
    env.update(
        PYTHONPATH=str(ROOT),
        PGWX_RESULTS=str(tmp_path / "results.sqlite"),
        PGWX_STATE_DIR=str(tmp_path / "state"),
        **extra,
    )
    return env


PROFILE = """
title = "kill me"
workload = "table-kind"
repeats = 3
settle_seconds = 0
params = { rows = 150000 }
[[variants]]
name = "logged"
[[variants]]
name = "unlogged"
knobs = { table_kind = "unlogged" }
"""


async def test_sigkilled_run_keeps_its_finished_trials(pg18: Target, tmp_path: Path) -> None:
    profile = tmp_path / "kill.toml"
    profile.write_text(PROFILE)
    kw = pg18.connect_kwargs()
    env = child_env(
        tmp_path,
        PGHOST=str(kw["host"]),
        PGPORT=str(kw["port"]),
        PGUSER=str(kw["user"]),
        PGDATABASE=str(kw["database"]),
    )
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "explorer.cli",
        "run",
        str(profile),
        "--no-sample",
        "--settle",
        "0",
        "--warmup",
        "0",
        env=env,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    assert child.stderr is not None
    seen: list[str] = []
    try:
        async with asyncio.timeout(120):
            while True:
                line = (await child.stderr.readline()).decode()
                assert line, "pgwx ended before its third trial:\n" + "".join(seen)
                seen.append(line)
                if line.startswith("[3/"):
                    break  # trials 1 and 2 have ended: they must be on disk now
        child.send_signal(signal.SIGKILL)
        await child.wait()
    finally:
        if child.returncode is None:
            child.kill()
            await child.wait()
        # what the dead pgwx left: its session and pgwx_lab (no server setting was touched)
        conn = await pg18.connect("test")
        try:
            await conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE application_name LIKE 'pgwx-%' AND pid <> pg_backend_pid()"
            )
            await drop_pgwx_schemas(conn)
        finally:
            await conn.close()
    store = ResultStore(tmp_path / "results.sqlite")
    try:
        assert store.db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        record = store.load("latest")
        # nobody ended it (it was killed); its owner is gone, so it reads as incomplete
        assert record.status == "incomplete"
        row = store.db.execute("SELECT status FROM runs WHERE id = ?", (record.id,)).fetchone()
        assert row[0] == "running", "reading the store must not write to it"
        done = [(t.variant, t.repeat, t.status) for t in record.trials]
        assert done[:2] == [("logged", 1, "ok"), ("unlogged", 1, "ok")], done
        assert all(t.phases for t in record.trials[:2])
    finally:
        store.close()
    # the next `pgwx runs` reports it as incomplete, finished trials counted
    runs = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "explorer.cli",
        "runs",
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(runs.communicate(), 60)
    assert runs.returncode == 0, err.decode()
    line = next(ln for ln in out.decode().splitlines() if record.id in ln)
    assert "incomplete" in line and "ok" in line
    db = sqlite3.connect(tmp_path / "results.sqlite")
    # listing never writes: the next pgwx that starts a run marks it (tests/faults/test_results.py)
    assert db.execute("SELECT status FROM runs").fetchone() == ("running",)
    db.close()


# --------------------------------------------------------------------------- the bundled server


@pytest.fixture
def data_dir() -> Iterator[Path]:
    """A short path for a fresh bundled cluster (the socket lives inside it)."""
    base = Path(tempfile.mkdtemp(prefix="pgwx-c-", dir="/tmp"))
    base.chmod(0o755)
    yield base / "pg"
    server = LocalServer(base / "pg")
    if server.initialised:
        server.stop()
    shutil.rmtree(base, ignore_errors=True)


def pgwx_run(data: Path, tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "explorer.cli",
            "run",
            "quick-demo",
            "--data-dir",
            str(data),
            "--scale",
            "0.001",
            "--repeats",
            "1",
            "--allow-undecidable",
            "--variant",
            "unlogged",
            "--no-sample",
            "--settle",
            "0",
            *extra,
        ],
        env=child_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_cli_stops_the_bundled_server_it_started(data_dir: Path, tmp_path: Path) -> None:
    done = pgwx_run(data_dir, tmp_path)
    assert done.returncode in FINISHED, done.stderr
    assert "starting bundled PostgreSQL" in done.stderr
    server = LocalServer(data_dir)
    assert server.initialised
    assert not server.is_running(), "pgwx run left the bundled server it started running"
    assert not (data_dir / "postmaster.pid").exists()
    # --keep-server: the same command leaves it up, and says how to stop it
    kept = pgwx_run(data_dir, tmp_path, "--keep-server")
    assert kept.returncode in FINISHED, kept.stderr
    assert server.is_running()
    assert "pgwx server stop" in kept.stderr
