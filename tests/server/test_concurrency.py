"""Two pgwx on one server: own schemas, own sessions, and one owner of the server settings."""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Callable
from pathlib import Path

import pytest

from explorer.lab.measure.probe import QUIESCE_TIMEOUT
from explorer.lab.run.runner import Runner, RunOptions
from explorer.lab.run.session import recover
from explorer.lab.safety.owner import ServerBusy
from explorer.lab.scope import create_marked_schema, schema_for
from explorer.lab.store.results import ResultStore
from explorer.models import Event, Knobs, PhaseEnded, PhaseStarted, Profile, TrialEnded, Variant
from explorer.server.capabilities import probe
from explorer.server.connect import Target
from tests.support.runs import small_profile
from tests.support.server import server_state

WAIT = 180.0
"""Generous: the machine is shared; conditions are awaited, never timed."""


def long_profile(knobs: Knobs, rows: int, repeats: int) -> Profile:
    return small_profile("table-kind", [Variant(name="v", knobs=knobs)], rows=rows, repeats=repeats)


async def until(condition: Callable[[], bool], what: str) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT
    while not condition():
        assert loop.time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


def in_phase(events: list[Event]) -> Callable[[], bool]:
    return lambda: any(getattr(e, "kind", "") == "phase-started" for e in events)


async def schemas(target: Target) -> set[str]:
    conn = await target.connect("test")
    try:
        rows = await conn.fetch("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'pgwx%'")
    finally:
        await conn.close()
    return {r["nspname"] for r in rows}


async def setting(target: Target, name: str) -> str:
    conn = await target.connect("test")
    try:
        return str(await conn.fetchval("SELECT current_setting($1)", name))
    finally:
        await conn.close()


def runner(target: Target, profile: Profile, path: Path) -> Runner:
    return Runner(
        target, profile, ResultStore(path), RunOptions(settle_seconds=0, sample=True, warmup=0)
    )


async def test_two_runs_without_settings_keep_apart_and_a_cancel_ends_only_its_own(
    pg18: Target, store: ResultStore, tmp_path: Path
) -> None:
    before = await server_state(pg18)
    a = runner(pg18, long_profile(Knobs(), rows=3_000_000, repeats=3), tmp_path / "a.sqlite")
    b = runner(pg18, long_profile(Knobs(), rows=1_000_000, repeats=1), tmp_path / "b.sqlite")
    ea: list[Event] = []
    eb: list[Event] = []
    task_a = asyncio.create_task(a.run(ea.append))
    task_b = asyncio.create_task(b.run(eb.append))

    async def both() -> None:
        await until(in_phase(ea), "run A's first phase")
        await until(in_phase(eb), "run B's first phase")
        # each run in its own schema, at the same time
        assert {schema_for(a.run_id), schema_for(b.run_id)} <= await schemas(pg18)
        assert not task_b.done(), "B must still be inside its trial when A is cancelled"
        task_a.cancel()

    results = await asyncio.gather(task_a, task_b, both(), return_exceptions=True)
    assert isinstance(results[0], asyncio.CancelledError)
    record_b = results[1]
    assert not isinstance(record_b, BaseException), record_b
    assert record_b.status == "finished"
    assert [t.status for t in record_b.trials] == ["ok"], [t.reason for t in record_b.trials]
    # the sampler of B saw B's backends only: its wait-event filter carries B's run id
    assert a.store.load(a.run_id).status == "cancelled"
    assert await server_state(pg18) == before
    assert not any(s.startswith("pgwx_lab") for s in await schemas(pg18))


async def test_a_phase_never_waits_for_another_runs_workload_sessions(
    pg18: Target, store: ResultStore, tmp_path: Path
) -> None:
    """Issue 20: beside a run holding fsync=off, a run without settings waited 73 s in silence —
    each phase's end waited up to QUIESCE_TIMEOUT for every pgwx-work session on the server to
    leave, the neighbour's included. Only this run's own helpers are waited for now."""
    neighbour = await pg18.connect("work-20990101-000000-aaaaaa-main")  # another run's session
    try:
        profile = small_profile("table-kind", [Variant(name="v")], rows=1000, repeats=2)
        events: list[Event] = []
        record = await runner(pg18, profile, tmp_path / "r.sqlite").run(events.append)
    finally:
        await neighbour.close()
    assert record.status == "finished", [t.reason for t in record.trials]
    started = [e for e in events if isinstance(e, PhaseStarted)]
    ended = [e for e in events if isinstance(e, PhaseEnded)]
    assert len(started) == len(ended) >= 4
    # a phase's end (its last reading, once its own helpers are gone) is quick; the wait
    # that counted the neighbour took QUIESCE_TIMEOUT, every phase
    overheads = [e.at - s.at - e.result.seconds for s, e in zip(started, ended, strict=True)]
    assert max(overheads) < QUIESCE_TIMEOUT / 2, overheads


async def test_second_pgwx_changing_settings_is_refused_naming_the_first(
    pg18: Target, store: ResultStore, tmp_path: Path
) -> None:
    before = await server_state(pg18)
    first = runner(
        pg18,
        long_profile(Knobs(synchronous_commit="off"), rows=3_000_000, repeats=3),
        tmp_path / "a.sqlite",
    )
    second = runner(
        pg18, long_profile(Knobs(fsync=False), rows=1000, repeats=1), tmp_path / "b.sqlite"
    )
    events: list[Event] = []
    task = asyncio.create_task(first.run(events.append))

    async def later() -> None:
        await until(in_phase(events), "the first run's trial")
        assert await setting(pg18, "synchronous_commit") == "off"
        await second.run()

    try:
        with pytest.raises(ServerBusy) as refused:
            await asyncio.gather(later(), asyncio.shield(task))
        sentence = str(refused.value)
        assert f"pid {os.getpid()} on {socket.gethostname()[:20]}" in sentence
        assert "running since 20" in sentence and "\n" not in sentence
        # the refused run changed nothing and stored nothing
        assert await setting(pg18, "fsync") == "on"
        assert second.store.list_runs() == []

        # a session opening now recovers only what dead runs left: not the live run's settings
        # or schema, but a schema whose run is gone
        conn = await pg18.connect("test")
        try:
            caps = await probe(conn, owned=True)
            dead = await create_marked_schema(conn, "20200101-000000-dead")
        finally:
            await conn.close()
        said: list[str] = []
        assert await recover(pg18, caps, said.append) == []
        assert dead not in await schemas(pg18)
        assert schema_for(first.run_id) in await schemas(pg18)
        assert await setting(pg18, "synchronous_commit") == "off"
        assert any("another pgwx" in m for m in said), said
        assert not task.done()
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    ended = [e.result for e in events if isinstance(e, TrialEnded)]
    assert ended and ended[-1].status == "cancelled"
    assert await server_state(pg18) == before


def test_a_runs_sessions_match_its_own_prefix_only() -> None:
    from explorer.lab.scope import run_scope, schema, work_app, work_prefix

    with run_scope("20261122-030405-ab12"):
        mine, prefix, own = work_app("main"), work_prefix(), schema()
        with run_scope("20261122-030405-cd34"):
            other = work_app("main")
    assert mine.startswith(prefix) and not other.startswith(prefix)
    assert own == "pgwx_lab_20261122_030405_ab12" and schema() == "pgwx_lab"
    assert len(work_app("pgbench")) < 64
