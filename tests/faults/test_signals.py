"""A dropped SSH session (SIGHUP) or a kill (SIGTERM) does what Ctrl-C does: undo, then exit."""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from explorer.server.connect import Target
from explorer.server.embedded import LocalServer
from tests.support.paths import ROOT as WORKTREE
from tests.support.server import durability_settings

WAIT = 180.0
"""Generous: the machine is shared; conditions are awaited, never timed."""

PROFILE = """
title = "signals"
workload = "table-kind"
repeats = 5
settle_seconds = 0
params = { rows = 3000000 }

[[variants]]
name = "unsafe"
knobs = { fsync = false, synchronous_commit = "off" }
"""


@pytest.fixture
def data_dir() -> Iterator[Path]:
    """A bundled cluster of its own (short path, enterable by the server's user)."""
    base = Path(tempfile.mkdtemp(prefix="pgwx-s-", dir="/tmp"))
    base.chmod(0o755)
    yield base / "pg"
    server = LocalServer(base / "pg")
    if server.is_running():
        server._run([str(server.tool("pg_ctl")), "-D", str(server.data_dir), "-m", "i", "stop"])
    shutil.rmtree(base, ignore_errors=True)


def child_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    env.update(
        PYTHONPATH=str(WORKTREE),
        PGWX_STATE_DIR=str(tmp_path / "state"),
        XDG_DATA_HOME=str(tmp_path / "data"),
    )
    return env


async def poll_until_unsafe(server: LocalServer, child: asyncio.subprocess.Process) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT
    while True:
        assert child.returncode is None, "pgwx run ended before its settings were live"
        assert loop.time() < deadline, "the run's settings never became live"
        if server.is_running():
            try:
                if (await durability_settings(server)).get("fsync") == "off":
                    return
            except Exception:
                pass  # the server may be starting
        await asyncio.sleep(0.2)


@pytest.mark.parametrize("signo", [signal.SIGHUP, signal.SIGTERM], ids=["SIGHUP", "SIGTERM"])
async def test_pgwx_run_signal_undoes_then_exits(
    signo: signal.Signals, data_dir: Path, tmp_path: Path
) -> None:
    profile = tmp_path / "signals.toml"
    profile.write_text(PROFILE)
    child = await asyncio.create_subprocess_exec(
        *[sys.executable, "-m", "explorer.cli", "run", str(profile), "--data-dir", str(data_dir)],
        env=child_env(tmp_path),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        server = LocalServer(data_dir)
        await poll_until_unsafe(server, child)
        child.send_signal(signo)
        _, raw = await asyncio.wait_for(child.communicate(), WAIT)
    finally:
        if child.returncode is None:
            child.kill()
            await child.wait()
    err = raw.decode()
    assert child.returncode == 128 + signo, err
    assert signo.name in err and "Traceback" not in err
    assert not server.is_running(), "the bundled server pgwx started must be stopped"
    auto = (data_dir / "postgresql.auto.conf").read_text()
    assert "fsync" not in auto and "synchronous_commit" not in auto, auto
    assert not list((tmp_path / "state").glob("undo-*.json"))
    # back up: the settings are the defaults and no pgwx schema is left
    server.start()
    try:
        assert await durability_settings(server) == {"fsync": "on", "synchronous_commit": "on"}
        conn = await Target(bundled=server).connect("test")
        try:
            left = await conn.fetchval(
                "SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'pgwx%'"
            )
        finally:
            await conn.close()
        assert left == 0
    finally:
        server.stop()


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, check=True).stdout


def wait_until(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_closing_the_terminal_mid_run_puts_the_server_back(data_dir: Path, tmp_path: Path) -> None:
    """A killed tmux session (SIGHUP, terminal gone): undo, stop the server, exit."""
    session = f"pgwx-test-{os.getpid()}"
    env = child_env(tmp_path)
    exports = [
        f"{k}={shlex.quote(v)}" for k, v in env.items() if k.startswith(("PY", "XDG", "PGWX"))
    ]
    command = " ".join(
        [*exports, shlex.quote(sys.executable), "-m explorer.cli --data-dir", str(data_dir)]
    )
    subprocess.run(
        ["tmux", "new-session", "-d", "-s", session, "-x", "120", "-y", "36", command],
        check=True,
        cwd=WORKTREE,
    )
    auto = data_dir / "postgresql.auto.conf"

    def pane() -> str:
        return tmux("capture-pane", "-p", "-t", session)

    try:
        wait_until(lambda: "superuser" in pane(), "the app on its server")
        tmux("send-keys", "-t", session, "C-p")
        wait_until(lambda: "Run matrix" in pane(), "the command palette")
        tmux("send-keys", "-t", session, "Profile: durability")
        wait_until(lambda: "Profile: durability" in pane(), "the profile entry")
        tmux("send-keys", "-t", session, "Enter")
        # the palette's own entry says "Durability" too: wait for the knob panel to switch
        wait_until(lambda: re.search(r"Workload +durability", pane()) is not None, "durability")
        tmux("send-keys", "-t", session, "m")
        wait_until(
            lambda: auto.exists() and "synchronous_commit" in auto.read_text(),
            "synchronous_commit=off in force",
        )
        pid = int(tmux("display-message", "-p", "-t", session, "#{pane_pid}"))
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)

    def gone() -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False

    wait_until(gone, "pgwx to exit after its terminal closed")
    assert not LocalServer(data_dir).is_running()
    text = auto.read_text()
    assert "fsync" not in text and "synchronous_commit" not in text, text
    assert not list((tmp_path / "state").glob("undo-*.json"))
