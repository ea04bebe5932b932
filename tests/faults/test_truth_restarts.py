"""Restart-only settings (wal_level=minimal) and impossible ones end in the truth (issue 20).

A pgwx killed during a wal_level=minimal variant leaves a setting only a restart puts back;
the recovery that restarts the server must reconnect before its next step (it used to end
`internal error (InterfaceError)`). A SIGTERM while pgwx restarts the server waits for the
restart and then puts everything back, and the last line says what was put back. A value the
server cannot start with (shared_buffers = 7TB) ends the run with the server log's reason,
the value taken out of postgresql.auto.conf, and no wait.
"""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import pytest

from tests.support.faults import (
    FaultServer,
    finish,
    integrity,
    profile_toml,
    read_until,
    run_ids,
    sigkill,
    start_pgwx,
)
from tests.support.truth import last_line, leave_journal, napping, pgwx, sleeping_profile

MINIMAL = {"minimal": 'wal_level = "minimal"'}
PUT_BACK = "server settings put back (wal_level, max_wal_senders)"


RESTART_ONLY = {
    "wal_level": (MINIMAL, "wal_level", "minimal", "wal_level, max_wal_senders"),
    "shared_buffers": (
        {"sb": 'shared_buffers = "48MB"'},
        "shared_buffers",
        "6144",
        "shared_buffers",
    ),
}
"""Each restart-only variant: its knobs, the setting to see in force, and what is put back."""


async def _kill_mid_trial(
    fs: FaultServer,
    tmp_path: Path,
    variant: dict[str, str] = MINIMAL,
    seen: tuple[str, str] = ("wal_level", "minimal"),
) -> None:
    """`pgwx run` of a restart-only variant, SIGKILLed while its trial runs."""
    (tmp_path / "restart.toml").write_text(sleeping_profile(variant))
    run = ["run", str(tmp_path / "restart.toml"), "--data-dir", str(fs.server.data_dir)]
    child = await start_pgwx(tmp_path, *run, "--no-sample", "--settle", "0")
    try:
        await napping(fs)
    finally:
        await sigkill(child)
    state = await fs.state()
    assert state["settings"][seen[0]] == seen[1] and state["schemas"], state


@pytest.mark.parametrize("command", ["server start", "server stop", "restore"])
@pytest.mark.parametrize("kind", sorted(RESTART_ONLY))
async def test_recovery_after_a_kill_in_a_restart_only_variant(
    owned: FaultServer, tmp_path: Path, kind: str, command: str
) -> None:
    """The one recovery, through each command that runs it, restarts the server to put a
    restart-only setting back and reconnects before its next step."""
    variant, name, value, names = RESTART_ONLY[kind]
    before = await owned.state()
    await _kill_mid_trial(owned, tmp_path, variant, (name, value))
    data_dir = str(owned.server.data_dir)
    code, out, err = await pgwx(tmp_path, *command.split(), "--data-dir", data_dir)
    assert code == 0, (out, err)
    assert "internal error" not in err and "Traceback" not in err
    put_back = f"server settings put back ({names})"
    if command == "restore":
        assert last_line(out) == f"{out.split(': ', 1)[0]}: {put_back}", out
    else:
        assert out.splitlines()[0] == f"left by an interrupted run: {put_back}", out
    if command == "server stop":
        assert out.splitlines()[-1] == f"stopped {data_dir}", out
        assert not owned.server.is_running()
        await owned.start_again()
    await owned.assert_as_before(before)
    assert not list((tmp_path / "state").glob("undo-*.json"))


async def test_next_run_after_a_kill_in_a_restart_only_variant(
    owned: FaultServer, tmp_path: Path
) -> None:
    before = await owned.state()
    await _kill_mid_trial(owned, tmp_path)
    killed = run_ids(tmp_path / "results.sqlite")[-1]
    (tmp_path / "plain.toml").write_text(profile_toml({"plain": ""}, gate=False, rows=10))
    run = ["run", str(tmp_path / "plain.toml"), "--data-dir", str(owned.server.data_dir)]
    code, _out, err = await pgwx(tmp_path, *run, "--no-sample", "--settle", "0")
    assert code == 0, err
    assert "put back settings left by an interrupted pgwx: wal_level, max_wal_senders" in err
    assert f"run {killed} was interrupted; its finished trials are kept" in err
    run_id = run_ids(tmp_path / "results.sqlite")[-1]
    assert last_line(err) == (
        f"saved as run {run_id}; `pgwx report {run_id} --format csv|json`; "
        "no server settings were left changed"
    ), err
    await owned.assert_as_before(before)
    assert integrity(tmp_path / "results.sqlite") == "ok"


@pytest.mark.parametrize(
    ("variant", "put_back"),
    [
        (MINIMAL, PUT_BACK),
        # a restart that fails, a repair offline and a start: the SIGTERM waits for them all
        ({"huge": 'shared_buffers = "7TB"'}, "server settings put back (shared_buffers)"),
    ],
    ids=["wal_level", "impossible-shared_buffers"],
)
async def test_sigterm_during_the_restart_puts_back_and_says_so(
    owned: FaultServer, tmp_path: Path, variant: dict[str, str], put_back: str
) -> None:
    before = await owned.state()
    (tmp_path / "minimal.toml").write_text(profile_toml(variant, gate=False))
    run = ["run", str(tmp_path / "minimal.toml"), "--data-dir", str(owned.server.data_dir)]
    child = await start_pgwx(tmp_path, *run, "--no-sample", "--settle", "0")
    seen: list[str] = []
    try:
        await read_until(child, "restarting the server", seen, 120)
        child.send_signal(signal.SIGTERM)
        _out, err = await finish(child, 120)
    finally:
        await sigkill(child)
    assert child.returncode == 128 + signal.SIGTERM, err
    run_id = run_ids(tmp_path / "results.sqlite")[-1]
    assert last_line(err) == f"SIGTERM: run {run_id} cancelled; {put_back}", "".join(seen) + err
    assert "could not put back" not in err
    # pgwx found the server running (a dead pgwx's) and leaves it so
    assert owned.server.is_running()
    await owned.assert_as_before(before)


async def test_impossible_shared_buffers_ends_the_run_with_the_servers_reason(
    owned: FaultServer, tmp_path: Path
) -> None:
    before = await owned.state()
    variants = {"plain": "", "huge": 'shared_buffers = "7TB"'}
    (tmp_path / "huge.toml").write_text(profile_toml(variants, gate=False, rows=10))
    run = ["run", str(tmp_path / "huge.toml"), "--data-dir", str(owned.server.data_dir)]
    started = asyncio.get_running_loop().time()
    code, _out, err = await pgwx(tmp_path, *run, "--no-sample", "--settle", "0")
    took = asyncio.get_running_loop().time() - started
    assert code == 1, err
    assert "waiting for the server" not in err and took < 100, (took, err)
    # the server log's own reason, and the repair, in the run's end
    assert "could not start with shared_buffers='7TB'" in err, err
    assert "FATAL" in err and f"removed shared_buffers='7TB' from {owned.server.data_dir}" in err
    run_id = run_ids(tmp_path / "results.sqlite")[-1]
    assert last_line(err) == (
        f"saved as run {run_id}; `pgwx report {run_id} --format csv|json`; "
        "server settings put back (shared_buffers)"
    ), err
    assert owned.server.is_running()
    await owned.assert_as_before(before)
    assert "shared_buffers" not in (owned.server.data_dir / "postgresql.auto.conf").read_text()


IMPOSSIBLE = {
    "shared_buffers": {"auto": None, "set": "7TB"},
    "synchronous_commit": {"auto": None, "set": "off"},
}
"""What a pgwx killed while it restarted its server for shared_buffers = 7TB leaves."""


@pytest.mark.parametrize("command", ["server start", "restore", "run"])
async def test_settings_repaired_offline_are_said_among_those_put_back(
    owned: FaultServer, tmp_path: Path, command: str
) -> None:
    """The server cannot start with 7TB: the value is taken out of postgresql.auto.conf
    offline, and the recovery's sentence names it with the rest (it used to say only what
    the journal still held afterwards: synchronous_commit)."""
    before = await owned.state()
    alter = {name: entry["set"] for name, entry in IMPOSSIBLE.items()}
    journal = await leave_journal(owned, tmp_path, IMPOSSIBLE, alter)
    await asyncio.to_thread(owned.server.stop)
    data_dir = owned.server.data_dir
    args = [*command.split(), "--data-dir", str(data_dir)]
    if command == "run":
        (tmp_path / "plain.toml").write_text(profile_toml({"plain": ""}, gate=False, rows=10))
        args = ["run", str(tmp_path / "plain.toml"), *args[1:], "--no-sample", "--settle", "0"]
    code, out, err = await pgwx(tmp_path, *args)
    assert code == 0, (out, err)
    assert (
        "removed shared_buffers='7TB', synchronous_commit='off' from "
        f"{data_dir / 'postgresql.auto.conf'} and started it again"
    ) in err, err
    assert (
        "put back settings left by an interrupted pgwx: shared_buffers, synchronous_commit"
    ) in err, err
    put_back = "server settings put back (shared_buffers, synchronous_commit)"
    if command == "server start":
        assert out.splitlines()[0] == f"left by an interrupted run: {put_back}", out
    elif command == "restore":
        assert last_line(out) == f"{out.split(': ', 1)[0]}: {put_back}", out
        await owned.start_again()  # restore stopped the server it started
    else:
        run_id = run_ids(tmp_path / "results.sqlite")[-1]
        assert last_line(err) == (
            f"saved as run {run_id}; `pgwx report {run_id} --format csv|json`; "
            "no server settings were left changed"
        ), err
        await owned.start_again()  # the run stopped the server it started
    await owned.assert_as_before(before)
    assert journal.load() == {}


async def test_the_app_after_a_kill_in_a_restart_only_variant(
    owned: FaultServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The app opens its session through the same recovery: wal_level is put back by a
    restart, said in the log, and the app goes on (no internal error)."""
    from explorer.lab.store.results import ResultStore
    from explorer.server.connect import LIBPQ_ENV
    from explorer.tui.app import PgwxApp
    from tests.support.app import connected, log_text, wait_for

    before = await owned.state()
    await _kill_mid_trial(owned, tmp_path)
    for name in LIBPQ_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PGWX_STATE_DIR", str(tmp_path / "state"))  # the killed pgwx's journal
    store = ResultStore(tmp_path / "results.sqlite")
    try:
        app = PgwxApp(data_dir=owned.server.data_dir, store=store)
        async with app.run_test(size=(120, 36)) as pilot:
            lab = await connected(pilot)
            said = log_text(lab)
            assert "putbacksettingsleftbyaninterruptedpgwx:wal_level,max_wal_senders" in said, said
            assert "internalerror" not in said.lower()
            assert "wasinterrupted;itsfinishedtrialsarekept" in said
            await pilot.press("q")
            await wait_for(pilot, lambda: not app.is_running, 60)
    finally:
        store.close()
    assert not owned.server.is_running()  # the app stopped the server the dead pgwx left
    await owned.start_again()
    await owned.assert_as_before(before)
