"""A server that PANICs on a full disk is not waited for (issue 20).

pgwx's own server on a small tmpfs PANICs when its WAL cannot grow, and does not come back.
The run used to wait 120 s per trial for it; it now ends at once with the server log's PANIC
line, says exactly what is still set and where, and the `pgwx restore` that finishes the job.
Once there is space again, `pgwx server start` puts the setting back and does not blame
postgresql.auto.conf for the full disk.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest

from explorer.server.embedded import LocalServer
from tests.support.faults import (
    FaultServer,
    Gate,
    finish,
    integrity,
    profile_toml,
    run_ids,
    sigkill,
    small_tmpfs,
    start_pgwx,
)
from tests.support.truth import last_line, pgwx


@pytest.fixture
def small_disk() -> Iterator[Path]:
    """A 96 MB tmpfs; whatever server is left on it is killed before it is unmounted."""
    with small_tmpfs() as mount:
        try:
            yield mount
        finally:
            pid = mount / "pg" / "postmaster.pid"
            with contextlib.suppress(OSError, ValueError):
                os.kill(int(pid.read_text().split()[0]), signal.SIGKILL)


async def _fill_and_panic(fs: FaultServer, mount: Path) -> None:
    """Leave 64 kB free, then write WAL until the server PANICs (it cannot make a segment)."""
    conn = await fs.admin()
    free = os.statvfs(mount)
    with (mount / "ballast").open("wb") as f:
        os.posix_fallocate(f.fileno(), 0, free.f_bavail * free.f_frsize - 64 * 1024)
    try:
        for _ in range(40):
            await conn.execute("SELECT pg_logical_emit_message(false, 'x', repeat('x', 4000000))")
            await conn.execute("SELECT pg_switch_wal()")
    except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError):
        pass  # the PANIC took this session with it
    finally:
        conn.terminate()


async def test_a_panic_on_a_full_disk_ends_the_run_at_once(
    small_disk: Path, tmp_path: Path
) -> None:
    server = LocalServer(small_disk / "pg")
    await asyncio.to_thread(server.start)
    server.release()
    fs = FaultServer(server)
    before = await fs.state()
    data_dir = server.data_dir
    variants = {"sync-off": 'synchronous_commit = "off"'}
    (tmp_path / "full.toml").write_text(profile_toml(variants, rows=100, repeats=3))
    run = ["run", str(tmp_path / "full.toml"), "--data-dir", str(data_dir), "--no-sample"]
    async with Gate(fs) as gate:
        child = await start_pgwx(tmp_path, *run, "--settle", "0")
        try:
            await gate.reached()
            await _fill_and_panic(fs, small_disk)
            started = asyncio.get_running_loop().time()
            _out, err = await finish(child, 100)
        finally:
            await sigkill(child)
    took = asyncio.get_running_loop().time() - started
    assert child.returncode == 1, err
    assert took < 60 and "still waiting" not in err, (took, err)
    assert re.search(r"stopped after a PANIC \(.*PANIC: .*No space left on device", err), err
    run_id = run_ids(tmp_path / "results.sqlite")[-1]
    auto_conf = data_dir / "postgresql.auto.conf"
    final = re.fullmatch(
        rf"saved as run {run_id}; `pgwx report {run_id} --format csv\|json`; server settings NOT "
        r"all put back \((?P<why>[^\n]+)\): synchronous_commit='off' still set in "
        rf"{re.escape(str(auto_conf))}; run `pgwx restore --data-dir {re.escape(str(data_dir))}` "
        "to put them back",
        last_line(err),
    )
    assert final, err
    assert "synchronous_commit = 'off'" in auto_conf.read_text()
    assert integrity(tmp_path / "results.sqlite") == "ok"

    # space again: the server starts, blames nothing in postgresql.auto.conf, puts it back
    (small_disk / "ballast").unlink()
    code, out, err = await pgwx(tmp_path, "server", "start", "--data-dir", str(data_dir))
    assert code == 0, (out, err)
    assert out.splitlines()[0] == (
        "left by an interrupted run: server settings put back (synchronous_commit)"
    ), out
    assert "postgresql.auto.conf sets" not in err
    await fs.assert_as_before(before)
