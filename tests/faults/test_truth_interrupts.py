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
    run_status,
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


async def test_ctrl_c_in_the_app_during_a_live_matrix_says_press_q(
    owned: FaultServer, tmp_path: Path
) -> None:
    """Ctrl-C during a matrix on the bundled server names the key that quits, and quits
    nothing; that key (the footer's q) cancels the run and puts the server back."""
    from explorer.lab.profiles.catalog import load_profile
    from explorer.lab.store.results import ResultStore
    from explorer.server.connect import Target
    from explorer.tui.app import PgwxApp
    from tests.support.app import connected, wait_for

    before = await owned.state()
    path = tmp_path / "live.toml"
    path.write_text(profile_toml({"sync-off": 'synchronous_commit = "off"'}))
    profile = load_profile(str(path))
    store = ResultStore(tmp_path / "results.sqlite")
    app = PgwxApp(target=Target(bundled=owned.server), store=store, profiles=[profile])
    said: list[str] = []
    app.notify = lambda message, **_kw: said.append(str(message))  # type: ignore[method-assign]
    try:
        async with Gate(owned) as gate:
            async with app.run_test(size=(120, 36)) as pilot:
                lab = await connected(pilot)
                lab.knob_panel.choose_profile(profile.name)
                await pilot.pause()
                await pilot.press("m")
                await gate.reached()
                await pilot.press("ctrl+c")
                await pilot.pause(0.2)
                assert any("Ctrl-C does not quit pgwx: press q" in m for m in said), said
                # nothing stopped: the app runs, and so does the trial at the gate
                assert app.is_running and await gate.waiting()
                assert (await owned.state())["settings"]["synchronous_commit"] == "off"
                await pilot.press("q")
                await wait_for(pilot, lambda: not app.is_running, 60)
    finally:
        store.close()
    await owned.assert_as_before(before)
    run_id = run_ids(tmp_path / "results.sqlite")[-1]
    assert run_status(tmp_path / "results.sqlite", run_id) == ("cancelled", "cancelled by the user")
