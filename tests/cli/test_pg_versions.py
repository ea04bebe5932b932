"""`pgwx --pg 15`: a cluster of Debian's PostgreSQL 15, owned by pgwx like the bundled 18.

Every command runs the real command line in a child process, the way a person types it, on
private data directories (never pgwx's default ones) and a private store and journal. The
owned 15 gets what the bundled 18 gets: lz4 (which the bundled build lacks) with a verdict,
restart-only settings (wal_level=minimal), the restore COMMIT timed from the server's own log,
and the undo journal and recovery after pgwx is killed mid-run.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from explorer.lab.store.results import ResultStore
from explorer.lab.workloads.restore import LOG_RESOLUTION
from explorer.models import RunRecord
from explorer.server.embedded import LocalServer
from tests.support.cli import FINISHED
from tests.support.faults import child_env, read_until, start_pgwx
from tests.support.server import PG15_BIN

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.pg15


def pgwx(tmp_path: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "explorer.cli", *args],
        env=child_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=str(tmp_path),
    )


@pytest.fixture(scope="module")
def owned15() -> Iterator[Path]:
    """A PostgreSQL 15 cluster made and started by `pgwx server start --pg 15`."""
    if not (PG15_BIN / "initdb").exists():
        if os.environ.get("CI"):
            pytest.fail("Debian's postgresql-15 is not installed; .ci/run must apt-get it.")
        pytest.skip("Debian's postgresql-15 is not installed (apt-get install -y postgresql-15)")
    base = Path(tempfile.mkdtemp(prefix="pgwx-v-", dir="/tmp"))
    base.chmod(0o755)  # the server's user must get through to its cluster
    data = base / "pg15"
    try:
        started = pgwx(base, "server", "start", "--pg", "15", "--data-dir", str(data))
        assert started.returncode == 0, started.stderr
        assert "PostgreSQL 15." in started.stdout and str(PG15_BIN) in started.stdout
        yield data
    finally:
        stopped = pgwx(base, "server", "stop", "--pg", "15", "--data-dir", str(data))
        assert stopped.returncode == 0, stopped.stderr
        shutil.rmtree(base, ignore_errors=True)


def on15(data: Path) -> list[str]:
    return ["--pg", "15", "--data-dir", str(data)]


async def connect(data: Path) -> asyncpg.Connection:
    return await asyncpg.connect(**LocalServer(data, PG15_BIN).connect_kwargs())


def run_on15(
    owned15: Path, tmp_path: Path, profile: str, variants: list[str], scale: str, repeats: int
) -> tuple[dict[str, Any], RunRecord, str]:
    """`pgwx --pg 15 run PROFILE` quickly: its JSON report, its stored record, its stderr."""
    chosen = [arg for name in variants for arg in ("--variant", name)]
    quick = ["--warmup", "0", "--settle", "0", "--no-sample", "--format", "json"]
    args = ["--scale", scale, "--repeats", str(repeats), "--allow-undecidable", *quick]
    done = pgwx(tmp_path, "run", profile, *on15(owned15), *chosen, *args)
    assert done.returncode in FINISHED, done.stderr
    report = json.loads(done.stdout)
    store = ResultStore(tmp_path / "results.sqlite")
    try:
        return report, store.load(report["run"]), done.stderr
    finally:
        store.close()


# --------------------------------------------------------------------------- the cluster


def test_owned_15_is_a_cluster_of_its_own(owned15: Path, tmp_path: Path) -> None:
    assert (owned15 / "PG_VERSION").read_text().strip() == "15"
    status = pgwx(tmp_path, "server", "status", *on15(owned15))
    assert status.returncode == 0, status.stderr
    assert "running" in status.stdout and f"from {PG15_BIN}" in status.stdout
    if os.geteuid() == 0:  # PostgreSQL refuses root: the cluster belongs to the service user
        assert owned15.stat().st_uid != 0
    # the bundled 18's programs refuse this 15 cluster in one sentence, and leave it alone
    started = pgwx(tmp_path, "server", "start", "--pg", "18", "--data-dir", str(owned15))
    assert started.returncode == 2
    assert "holds a PostgreSQL 15 cluster" in started.stderr and "--pg 15" in started.stderr
    assert "Traceback" not in started.stderr
    assert (owned15 / "PG_VERSION").read_text().strip() == "15"


async def test_owned_15_listens_on_its_unix_socket_only(owned15: Path) -> None:
    conn = await connect(owned15)
    try:
        assert await conn.fetchval("SHOW listen_addresses") == ""
        assert int(await conn.fetchval("SHOW server_version_num")) // 10000 == 15
        assert await conn.fetchval("SHOW data_directory") == str(owned15)
    finally:
        await conn.close()


# --------------------------------------------------------------------------- what it runs


def test_lz4_runs_on_the_owned_15_with_a_verdict(owned15: Path, tmp_path: Path) -> None:
    report, record, _ = run_on15(
        owned15, tmp_path, "toast-compression", ["pglz", "lz4"], "0.05", repeats=3
    )
    assert record.server.capabilities.major == 15 and record.server.capabilities.lz4
    lz4 = [t for t in record.trials if t.variant == "lz4"]
    assert len(lz4) == 3 and all(t.status == "ok" for t in lz4), [t.reason for t in lz4]
    rows = [r for r in report["rows"] if r["variant"] == "lz4"]
    assert rows and all(r["verdict"] for r in rows), rows
    # the report names the installed PostgreSQL the run used
    env = report["environment"]
    assert str(PG15_BIN) in env["server_programs"] and "15." in env["server_programs"]
    md = pgwx(tmp_path, "report", report["run"])
    assert "made with `postgres (PostgreSQL) 15." in md.stdout


def test_wal_level_minimal_runs_on_the_owned_15(owned15: Path, tmp_path: Path) -> None:
    _, record, said = run_on15(
        owned15, tmp_path, "durability", ["defaults", "minimal-same-txn"], "0.005", repeats=1
    )
    assert "restarting the server pgwx owns for wal_level" in said
    by = {t.variant: t for t in record.trials}
    assert by["minimal-same-txn"].status == "ok", by["minimal-same-txn"].reason
    assert by["minimal-same-txn"].settings["wal_level"] == "minimal"
    assert by["defaults"].settings["wal_level"] == "replica"


async def test_wal_level_after_the_run_is_as_before(owned15: Path) -> None:
    conn = await connect(owned15)
    try:
        assert await conn.fetchval("SHOW wal_level") == "replica"
        assert (
            await conn.fetchval(
                "SELECT count(*) FROM pg_file_settings WHERE sourcefile LIKE '%auto.conf'"
            )
            == 0
        )
    finally:
        await conn.close()


def test_the_restore_commit_is_the_server_logs_on_the_owned_15(
    owned15: Path, tmp_path: Path
) -> None:
    _, record, _ = run_on15(owned15, tmp_path, "fk-timing-restore", ["deferred"], "0.005", 1)
    (trial,) = record.trials
    assert trial.status == "ok", trial.reason
    commit = next(p for p in trial.phases if p.name == "commit")
    assert commit.detail["commit_resolution"] == LOG_RESOLUTION  # type: ignore[index]
    assert commit.seconds > 0


# --------------------------------------------------------------------------- a killed pgwx

KILL_ME = """
title = "killed while wal_level is minimal"
workload = "bulk-write"
repeats = 3
settle_seconds = 0
params = { rows = 20000 }
[[variants]]
name = "minimal"
knobs = { wal_level = "minimal", synchronous_commit = "off" }
"""


async def test_undo_and_recovery_hold_on_the_owned_15_after_a_kill(
    owned15: Path, tmp_path: Path
) -> None:
    profile = tmp_path / "kill.toml"
    profile.write_text(KILL_ME)
    child = await start_pgwx(tmp_path, "run", str(profile), *on15(owned15), "--no-sample")
    seen: list[str] = []
    try:
        await read_until(child, "server restarted", seen, timeout=120)
    finally:
        child.send_signal(signal.SIGKILL)
        await child.wait()
    conn = await connect(owned15)
    try:
        # what the dead pgwx left: wal_level=minimal in force, its schema
        assert await conn.fetchval("SHOW wal_level") == "minimal"
    finally:
        await conn.close()
    journal = list((tmp_path / "state").glob("undo-*.json"))
    assert journal, "the journal must hold what pgwx changed before it changed it"
    # the next pgwx on the owned 15 puts it all back (restarting for wal_level)
    put_back = await asyncio.to_thread(pgwx, tmp_path, "restore", *on15(owned15))
    assert put_back.returncode == 0, put_back.stderr
    assert "wal_level" in put_back.stdout and "PostgreSQL 15." in put_back.stdout
    conn = await connect(owned15)
    try:
        assert await conn.fetchval("SHOW wal_level") == "replica"
        assert await conn.fetchval("SHOW synchronous_commit") == "on"
        left = await conn.fetchval(
            "SELECT count(*) FROM pg_file_settings WHERE sourcefile LIKE '%auto.conf'"
        )
        assert left == 0
        schemas = await conn.fetchval(
            r"SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'pgwx\_lab%'"
        )
        assert schemas == 0
    finally:
        await conn.close()
