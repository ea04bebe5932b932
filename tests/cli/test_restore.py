"""A damaged undo journal is never taken for empty; `pgwx restore` and `pgwx server start|stop`
put back what a journal holds."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from explorer.lab.safety.settings import Journal, JournalUnreadable
from explorer.server.capabilities import probe
from explorer.server.connect import Target
from explorer.server.embedded import LocalServer
from tests.support.cli import FINISHED
from tests.support.paths import ROOT as WORKTREE
from tests.support.server import durability_settings

DAMAGED = '{\n "fsync": {\n  "auto": null\n },\n "synchronous_commit": {\n  "au'
"""A journal cut short: fsync's entry is whole, synchronous_commit's is not."""


@pytest.fixture
def server(tmp_path: Path) -> Iterator[LocalServer]:
    """A bundled cluster of its own, running, its directory lock let go (as a dead pgwx's)."""
    base = Path(tempfile.mkdtemp(prefix="pgwx-r-", dir="/tmp"))
    base.chmod(0o755)
    srv = LocalServer(base / "pg")
    srv.start()
    srv.release()
    yield srv
    if srv.is_running():
        srv._run([str(srv.tool("pg_ctl")), "-D", str(srv.data_dir), "-m", "i", "stop"])
    shutil.rmtree(base, ignore_errors=True)


async def pgwx(tmp_path: Path, *args: str) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    env.update(
        PYTHONPATH=str(WORKTREE),
        PGWX_STATE_DIR=str(tmp_path / "state"),
        XDG_DATA_HOME=str(tmp_path / "data"),
    )
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "explorer.cli",
        *args,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 300)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def leave_unsafe(server: LocalServer, tmp_path: Path, journal_text: str) -> Path:
    """What a pgwx killed mid-run leaves: settings changed, and its journal."""
    conn = await Target(bundled=server).connect("test")
    try:
        caps = await probe(conn, owned=True)
        await conn.execute("ALTER SYSTEM SET fsync = off")
        await conn.execute("ALTER SYSTEM SET synchronous_commit = off")
        await conn.execute("SELECT pg_reload_conf()")
    finally:
        await conn.close()
    path = Journal(caps.system_identifier, tmp_path / "state").path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(journal_text)
    return path


def test_damaged_journal_is_an_error_not_empty(tmp_path: Path) -> None:
    journal = Journal("123", tmp_path)
    journal.path.write_text(DAMAGED)
    with pytest.raises(JournalUnreadable) as err:
        journal.load()
    text = str(err.value)
    assert str(journal.path) in text and "pgwx restore" in text and "\n" not in text
    assert journal.path.read_text() == DAMAGED  # kept as it was
    assert journal.salvage() == {"fsync": {"auto": None}}


async def test_damaged_journal_stops_a_run_and_pgwx_restore_puts_settings_back(
    server: LocalServer, tmp_path: Path
) -> None:
    path = await leave_unsafe(server, tmp_path, DAMAGED)
    code, out, err = await pgwx(
        tmp_path, "run", "quick-demo", "--scale", "0.001", "--data-dir", str(server.data_dir)
    )
    assert code == 2, (out, err)
    lines = [line for line in err.splitlines() if line.startswith("pgwx:")]
    assert len(lines) == 1 and str(path) in lines[0] and "pgwx restore" in lines[0], err
    assert "Traceback" not in err
    assert await durability_settings(server) == {"fsync": "off", "synchronous_commit": "off"}
    assert path.read_text() == DAMAGED

    code, out, err = await pgwx(tmp_path, "restore", "--data-dir", str(server.data_dir))
    assert code in FINISHED, (out, err)
    assert "fsync" in out and "synchronous_commit" in out
    assert await durability_settings(server) == {"fsync": "on", "synchronous_commit": "on"}
    auto = (server.data_dir / "postgresql.auto.conf").read_text()
    assert "fsync" not in auto and "synchronous_commit" not in auto
    assert not path.exists()
    kept = list(path.parent.glob(path.name + ".corrupt-*"))
    assert len(kept) == 1 and kept[0].read_text() == DAMAGED
    assert server.is_running()  # restore does not stop a server it did not start

    code, out, _ = await pgwx(tmp_path, "restore", "--data-dir", str(server.data_dir))
    assert code == 0 and "nothing to put back" in out


async def test_server_start_puts_back_a_pending_journal(
    server: LocalServer, tmp_path: Path
) -> None:
    path = await leave_unsafe(
        server, tmp_path, '{"fsync": {"auto": null}, "synchronous_commit": {"auto": null}}'
    )
    assert server.stop() is True  # a later boot would come up with fsync=off
    code, out, err = await pgwx(tmp_path, "server", "start", "--data-dir", str(server.data_dir))
    assert code == 0, (out, err)
    assert await durability_settings(server) == {"fsync": "on", "synchronous_commit": "on"}
    assert not path.exists()

    path = await leave_unsafe(server, tmp_path, '{"fsync": {"auto": null}}')
    code, out, err = await pgwx(tmp_path, "server", "stop", "--data-dir", str(server.data_dir))
    assert code == 0, (out, err)
    assert not path.exists()
    auto = (server.data_dir / "postgresql.auto.conf").read_text()
    assert "fsync" not in auto
