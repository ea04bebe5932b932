"""Whoever starts the bundled server stops it, or says it is left running, why, and how to
stop it (issue 20): a killed pgwx's server reused by the next run, two runs on one
--data-dir whichever ends first."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import asyncpg
import pytest

from explorer.server.embedded import LocalServer
from tests.support.faults import (
    FaultServer,
    finish,
    profile_toml,
    sigkill,
    start_pgwx,
    wait_until,
)
from tests.support.truth import force_stop, napping, pgwx, sleeping_profile

PLAIN = profile_toml({"plain": ""}, gate=False, rows=10)
QUICK = ("--no-sample", "--settle", "0")


async def test_a_killed_pgwxs_server_reused_is_said_to_be_left_running(
    owned: FaultServer, tmp_path: Path
) -> None:
    data_dir = owned.server.data_dir
    (tmp_path / "nap.toml").write_text(sleeping_profile({"plain": ""}))
    child = await start_pgwx(
        tmp_path, "run", str(tmp_path / "nap.toml"), "--data-dir", str(data_dir), *QUICK
    )
    try:
        await napping(owned)
    finally:
        await sigkill(child)
    (tmp_path / "plain.toml").write_text(PLAIN)
    code, _out, err = await pgwx(
        tmp_path, "run", str(tmp_path / "plain.toml"), "--data-dir", str(data_dir), *QUICK
    )
    assert code == 0, err
    assert (
        f"bundled server left running in {data_dir}: it was already running when this pgwx "
        f"started; `pgwx server stop --data-dir {data_dir}` stops it"
    ) in err
    assert owned.server.is_running()


async def _two_runs(tmp_path: Path, data_dir: Path, starter_ends_first: bool) -> tuple[str, str]:
    """A run that starts the server and one that attaches to it, each held at a gate of its
    own until the test lets it end; stderr of each."""
    held: list[asyncpg.Connection] = []
    children: list[asyncio.subprocess.Process] = []
    fs = FaultServer(LocalServer(data_dir))
    try:
        for key in (1, 2):
            path = tmp_path / f"run{key}.toml"
            path.write_text(_gated(key))
            child = await start_pgwx(
                tmp_path, "run", str(path), "--data-dir", str(data_dir), *QUICK
            )
            children.append(child)
            if key == 1:  # the first run started the server: shut both gates during its nap
                await napping(fs)
                held.append(await fs.admin())
                await held[0].execute("SELECT pg_advisory_lock(1)")
                await held[0].execute("SELECT pg_advisory_lock(2)")
        await wait_until(lambda: _waiting(fs, 2), "both runs at their gates", 120)
        said = {}
        for key in (1, 2) if starter_ends_first else (2, 1):
            await held[0].execute("SELECT pg_advisory_unlock($1::bigint)", key)
            said[key] = await finish(children[key - 1])
            assert children[key - 1].returncode == 0, said[key]
    finally:
        for conn in held:
            conn.terminate()
        for child in children:
            await sigkill(child)
    return said[1][1], said[2][1]


def _gated(key: int) -> str:
    """A profile whose trial naps 3 s, then waits for advisory lock `key` (the test's gate)."""
    text = profile_toml({}, gate=False, rows=10)
    text += '[[params.phases]]\nname = "nap"\nsql = "SELECT pg_sleep(3)"\n'
    text += f'[[params.phases]]\nname = "gate"\nsql = "SELECT pg_advisory_xact_lock({key})"\n'
    return text + '[[variants]]\nname = "plain"\nknobs = {}\n'


async def _waiting(fs: FaultServer, count: int) -> bool:
    """`count` pgwx sessions wait for an advisory lock."""
    try:
        conn = await fs.admin()
    except (OSError, asyncpg.PostgresError):
        return False
    try:
        waiting = await conn.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'pgwx%' "
            "AND wait_event = 'advisory'"
        )
    finally:
        await conn.close()
    return bool(waiting == count)


@pytest.mark.parametrize("starter_ends_first", [True, False])
async def test_two_runs_on_one_data_dir(
    owned_base: Path, tmp_path: Path, starter_ends_first: bool
) -> None:
    data_dir = owned_base / f"shared-{starter_ends_first}"
    try:
        starter, second = await _two_runs(tmp_path, data_dir, starter_ends_first)
        left_running = LocalServer(data_dir).is_running()
    finally:
        force_stop(data_dir)
    assert not left_running  # whichever ended last stopped it
    stop = f"`pgwx server stop --data-dir {data_dir}`"
    if starter_ends_first:
        # the starter leaves it to the other, which stops it as it leaves last
        assert (
            f"bundled server left running in {data_dir}: another pgwx is using it; {stop} "
            "stops it once that one is done"
        ) in starter
        assert (
            f"stopped the bundled server in {data_dir}: the pgwx that started it has left, "
            "and nobody else uses it"
        ) in second
    else:
        assert "left running" not in starter, starter
        assert (
            f"bundled server left running in {data_dir}: the pgwx that holds it is still "
            "using it, and stops it when done"
        ) in second


async def test_a_run_without_settings_beside_one_holding_fsync_off_never_waits_for_it(
    owned: FaultServer, tmp_path: Path
) -> None:
    """Issue 20: such a run waited 73 s in silence — each of its phases waited up to 10 s
    for the neighbour's workload sessions to leave. It waits for nobody else's now, says it
    leaves the neighbour's settings alone, and the neighbour puts fsync back."""
    from explorer.lab.measure.probe import QUIESCE_TIMEOUT
    from explorer.lab.store.results import ResultStore
    from explorer.models import PhaseEnded, PhaseStarted
    from tests.support.faults import run_ids
    from tests.support.truth import last_line

    before = await owned.state()
    data_dir = str(owned.server.data_dir)
    (tmp_path / "nofsync.toml").write_text(sleeping_profile({"nofsync": 'fsync = "off"'}))
    holder = await start_pgwx(
        tmp_path, "run", str(tmp_path / "nofsync.toml"), "--data-dir", data_dir, *QUICK
    )
    try:
        await napping(owned)
        assert (await owned.state())["settings"]["fsync"] == "off"
        text = profile_toml({}, gate=False, rows=10, repeats=2)
        text += '[[params.phases]]\nname = "second"\nsql = "SELECT count(*) FROM {t}"\n'
        (tmp_path / "plain.toml").write_text(text + '[[variants]]\nname = "plain"\nknobs = {}\n')
        # sampled (no --no-sample): the phase readings are where the wait was
        code, _out, err = await pgwx(
            tmp_path, "run", str(tmp_path / "plain.toml"), "--data-dir", data_dir, "--settle", "0"
        )
        assert code == 0, err
        assert "server settings stay as they are: another pgwx" in err
        run_id = run_ids(tmp_path / "results.sqlite")[-1]
        store = ResultStore(tmp_path / "results.sqlite")
        try:
            events = list(store.events(run_id))
        finally:
            store.close()
        started = [e for e in events if isinstance(e, PhaseStarted)]
        ended = [e for e in events if isinstance(e, PhaseEnded)]
        assert len(started) == len(ended) == 4, events
        overheads = [e.at - s.at - e.result.seconds for s, e in zip(started, ended, strict=True)]
        assert max(overheads) < QUIESCE_TIMEOUT / 2, overheads
        holder.send_signal(signal.SIGINT)
        _out, err = await finish(holder, 60)
    finally:
        await sigkill(holder)
    assert holder.returncode == 130, err
    assert last_line(err).endswith("server settings put back (fsync)"), err
    await owned.assert_as_before(before)
