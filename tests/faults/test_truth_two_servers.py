"""A pgwx killed during a run on two servers leaves each recoverable, as a one-server run does.

`pgwx run --pg 15 --pg 18` of a restart-only variant (wal_level=minimal, synchronous_commit
off) is SIGKILLed once both servers have restarted with it. Each server has its own undo
journal; `pgwx restore --pg 15` and `--pg 18` each put their server back: the settings in
force and postgresql.auto.conf as before the run, no pgwx schema left.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest

from explorer.server.embedded import LocalServer
from tests.support.faults import child_env, finish, read_until, sigkill, start_pgwx
from tests.support.server import PG15_BIN, settings_and_auto_conf

pytestmark = pytest.mark.pg15

KILL_ME = """
title = "killed on two servers while wal_level is minimal"
workload = "bulk-write"
repeats = 3
warmup = 0
settle_seconds = 0
params = { rows = 20000 }
[[variants]]
name = "minimal"
knobs = { wal_level = "minimal", synchronous_commit = "off" }
"""

BINDIRS = {"15": PG15_BIN, "18": None}


def pgwx(base: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "explorer.cli", *args],
        env=child_env(base, PGWX_CLUSTER_HOME=str(base / "clusters")),
        capture_output=True,
        text=True,
        timeout=300,
        cwd=str(base),
    )


@pytest.fixture
def base() -> Iterator[Path]:
    if not (PG15_BIN / "initdb").exists():
        if os.environ.get("CI"):
            pytest.fail("Debian's postgresql-15 is not installed; .ci/run must apt-get it.")
        pytest.skip("Debian's postgresql-15 is not installed (apt-get install -y postgresql-15)")
    where = Path(tempfile.mkdtemp(prefix="pgwx-k2-", dir="/tmp"))
    where.chmod(0o755)  # the servers' user must get through to their clusters
    try:
        yield where
    finally:
        for major in BINDIRS:
            pgwx(where, "server", "stop", "--pg", major)
        shutil.rmtree(where, ignore_errors=True)


async def state(base: Path, major: str) -> tuple[dict[str, str], list[tuple[str, str]], int]:
    """Settings in force, postgresql.auto.conf's lines, and how many pgwx schemas."""
    server = LocalServer(base / "clusters" / f"pg{major}", BINDIRS[major])
    conn = await asyncpg.connect(**server.connect_kwargs())
    try:
        settings, auto = await settings_and_auto_conf(conn)
        schemas = await conn.fetchval(
            r"SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'pgwx\_lab%'"
        )
        return settings, auto, int(schemas)
    finally:
        await conn.close()


@pytest.mark.parametrize("how", ["restore", "next run"])
async def test_undo_holds_on_each_server_after_a_kill(base: Path, how: str) -> None:
    # each server as it is before any run (made and started once, then stopped again)
    before = {}
    for major in BINDIRS:
        started = await asyncio.to_thread(pgwx, base, "server", "start", "--pg", major)
        assert started.returncode == 0, started.stderr
        settings, auto, _ = await state(base, major)
        before[major] = (settings, auto)
    (base / "kill.toml").write_text(KILL_ME)
    env = {"PGWX_CLUSTER_HOME": str(base / "clusters")}
    child = await start_pgwx(
        base, "run", str(base / "kill.toml"), "--pg", "15", "--pg", "18", "--no-sample", **env
    )
    seen: list[str] = []
    try:
        # both servers restarted with wal_level=minimal: the second only in its turn
        while not any("[18]" in line and "server restarted" in line for line in seen):
            await read_until(child, "server restarted", seen, timeout=180)
    finally:
        await sigkill(child)
    assert any("[15]" in line and "server restarted" in line for line in seen), seen
    for major in BINDIRS:
        settings, auto, _ = await state(base, major)
        assert settings["wal_level"] == "minimal", major  # what the dead pgwx left
        assert ("wal_level", "minimal") in auto, major
    journals = list((base / "state").glob("undo-*.json"))
    assert len(journals) == 2, journals  # one per server: each undone on its own
    if how == "next run":  # the next run on both servers recovers each as it opens
        quick = (
            "--scale",
            "0.01",
            "--repeats",
            "1",
            "--allow-undecidable",
            "--allow-undecidable",
            "--warmup",
            "0",
            "--settle",
            "0",
        )
        again = await asyncio.to_thread(
            pgwx, base, "run", "quick-demo", "--pg", "15", "--pg", "18", *quick, "--no-sample"
        )
        assert again.returncode in (0, 4), again.stderr
        recovered = [line for line in again.stderr.splitlines() if "put back settings" in line]
        assert len(recovered) == 2 and all("wal_level" in line for line in recovered), recovered
    for major in BINDIRS:
        if how == "restore":
            put_back = await asyncio.to_thread(pgwx, base, "restore", "--pg", major)
            assert put_back.returncode == 0, put_back.stderr
            assert "wal_level" in put_back.stdout and f"PostgreSQL {major}." in put_back.stdout
        settings, auto, schemas = await state(base, major)
        was_settings, was_auto = before[major]
        assert auto == was_auto, major
        for name in ("wal_level", "synchronous_commit", "max_wal_senders"):
            assert settings[name] == was_settings[name], (major, name)
        assert schemas == 0, major


async def test_a_sigterm_puts_each_server_back_and_the_last_line_says_so(base: Path) -> None:
    before = {}
    for major in BINDIRS:
        started = await asyncio.to_thread(pgwx, base, "server", "start", "--pg", major)
        assert started.returncode == 0, started.stderr
        settings, auto, _ = await state(base, major)
        before[major] = (settings, auto)
    (base / "kill.toml").write_text(KILL_ME)
    env = {"PGWX_CLUSTER_HOME": str(base / "clusters")}
    child = await start_pgwx(
        base, "run", str(base / "kill.toml"), "--pg", "15", "--pg", "18", "--no-sample", **env
    )
    seen: list[str] = []
    try:
        while not any("[18]" in line and "server restarted" in line for line in seen):
            await read_until(child, "server restarted", seen, timeout=180)
        child.send_signal(signal.SIGTERM)
        _, rest = await finish(child, timeout=180)
    finally:
        await sigkill(child)
    assert child.returncode == 128 + signal.SIGTERM, rest
    last = [line for line in rest.splitlines() if line.strip()][-1]
    assert last.startswith("SIGTERM: run ") and " cancelled; " in last, last
    assert "on 15: server settings put back" in last and "on 18: server settings put back" in last
    for major in BINDIRS:
        settings, auto, schemas = await state(base, major)
        assert auto == before[major][1], major
        assert settings["wal_level"] == before[major][0]["wal_level"], major
        assert schemas == 0, major
