"""Ctrl-C twice, and Ctrl-C while pgwx starts up, end in the truth (issue 20).

A second Ctrl-C used to cut the undo short: the schema stayed and Python printed "coroutine …
was never awaited". It now only says the undo is under way; the undo runs to its end, and
the last line says what the server holds.
"""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

from tests.support.faults import (
    FaultServer,
    Gate,
    finish,
    profile_toml,
    read_until,
    run_ids,
    sigkill,
    start_pgwx,
)
from tests.support.truth import last_line


async def test_a_double_ctrl_c_still_undoes_everything(owned: FaultServer, tmp_path: Path) -> None:
    before = await owned.state()
    variants = {"sync-off": 'synchronous_commit = "off"'}
    (tmp_path / "twice.toml").write_text(profile_toml(variants))
    run = ["run", str(tmp_path / "twice.toml"), "--data-dir", str(owned.server.data_dir)]
    async with Gate(owned) as gate:
        child = await start_pgwx(tmp_path, *run, "--no-sample", "--settle", "0")
        try:
            await gate.reached()
            child.send_signal(signal.SIGINT)
            await asyncio.sleep(0.05)
            child.send_signal(signal.SIGINT)  # while the first one's undo runs
            _out, err = await finish(child, 60)
        finally:
            await sigkill(child)
    assert child.returncode == 130, err
    assert "never awaited" not in err and "Traceback" not in err, err
    run_id = run_ids(tmp_path / "results.sqlite")[-1]
    assert last_line(err) == (
        f"cancelled: finished trials kept in run {run_id} (`pgwx report {run_id}`); "
        "server settings put back (synchronous_commit)"
    ), err
    await owned.assert_as_before(before)


async def test_ctrl_c_while_the_server_starts_is_one_line(owned_base: Path, tmp_path: Path) -> None:
    data_dir = owned_base / "startup"
    (tmp_path / "plain.toml").write_text(profile_toml({"plain": ""}, gate=False, rows=10))
    child = await start_pgwx(
        tmp_path, "run", str(tmp_path / "plain.toml"), "--data-dir", str(data_dir)
    )
    seen: list[str] = []
    try:
        await read_until(child, "starting bundled PostgreSQL", seen, 60)
        child.send_signal(signal.SIGINT)
        _out, err = await finish(child, 120)
    finally:
        await sigkill(child)
    err = "".join(seen) + err
    assert child.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert last_line(err).startswith("cancelled before the run started"), err
