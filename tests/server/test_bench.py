"""`explorer.lab.run.bench`: the bench both front ends drive to run on one server or several.

Driven here directly, as `pgwx run` and the app's controller drive it: two bundled PostgreSQL
18 clusters ("18" and "18 #2") take turns, each server's events carry its label, the settings
sentence names both, one server named twice is refused, the interrupt policy cancels once,
and both servers are left as they were; then the owned PostgreSQL 15 and the bundled 18.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from explorer.errors import PgwxError, UsageError
from explorer.lab import workloads
from explorer.lab.run.bench import STILL_PUTTING_BACK, Bench, ServerChoice, server_failed
from explorer.lab.run.request import RunOptions, RunRequest
from explorer.lab.store.results import ResultStore
from explorer.models import Event, RunRecord, TrialStarted, Variant
from explorer.server.connect import Target
from explorer.server.embedded import LocalServer
from tests.support.runs import small_profile
from tests.support.server import server_state

OPTIONS = RunOptions(repeats=2, warmup=0, settle_seconds=0.0, sample=False)


async def turns_on(
    store: ResultStore, targets: list[Target], said: list[str]
) -> tuple[Bench, list[RunRecord], list[str]]:
    """A bench on `targets` that takes turns on every server, then releases them: the
    bench, the runs, and the labels of the trials in the order they started. Each server
    is checked to be left with the settings it had."""
    before = {t.label(): await server_state(t) for t in targets}
    bench = Bench(store, [ServerChoice(target=t) for t in targets])
    profile = small_profile("table-kind", [Variant(name="unlogged")], rows=500, repeats=2)
    seen: list[tuple[str, Event]] = []
    try:
        bench.resolve(said.append)
        assert [s.target for s in bench.sessions] == targets
        await bench.open(lambda _index: said.append)
        records = await bench.take_turns(
            range(len(targets)),
            profile,
            OPTIONS,
            said.append,
            lambda label: lambda event: seen.append((label, event)),
        )
    finally:
        bench.release(said.append)
    for t in targets:
        after = await server_state(t)
        assert after["pgwx_lab"] is False
        assert after["settings"] == before[t.label()]["settings"]
    return bench, records, [label for label, e in seen if isinstance(e, TrialStarted)]


@pytest.fixture
def second_pg18(pg_base: Path) -> LocalServer:
    """A second bundled PostgreSQL 18 cluster, for two servers of one version."""
    server = LocalServer(pg_base / "bench-18b")
    server.start()
    yield server  # type: ignore[misc]
    server.stop()


async def test_two_pg18_servers_take_turns_on_the_bench(
    pg18: Target, second_pg18: LocalServer, store: ResultStore
) -> None:
    said: list[str] = []
    bench, records, started = await turns_on(store, [pg18, Target(bundled=second_pg18)], said)
    assert [r.status for r in records] == ["finished", "finished"]
    assert bench.labels == ["18", "18 #2"]
    assert [r.axis.label for r in records if r.axis] == ["18", "18 #2"]
    assert started == ["18", "18 #2", "18", "18 #2"]  # the servers alternate, trial by trial
    assert any("servers take turns" in s for s in said)
    assert [r.run_id for r in bench.runners] == [r.id for r in records]
    assert all(r.undo.complete for r in bench.runners)
    sentence = bench.settings_sentence()
    assert sentence.startswith("on 18: ") and "; on 18 #2: " in sentence
    assert {r.id for r in store.group(records[1])} == {r.id for r in records}
    assert second_pg18.is_running()  # handed in: its maker's, never stopped by the bench


async def test_one_server_named_twice_is_refused(pg18: Target, store: ResultStore) -> None:
    again = Target(bundled=LocalServer(pg18.bundled.data_dir))  # type: ignore[union-attr]
    bench = Bench(store, [ServerChoice(target=pg18), ServerChoice(target=again)])
    bench.resolve(lambda _m: None)
    with pytest.raises(UsageError, match=r"is the same server as .*name each server once"):
        await bench.open(lambda _index: lambda _m: None)
    assert bench.runners == []


async def test_one_server_runs_alone_and_says_its_settings(
    pg18: Target, store: ResultStore
) -> None:
    bench = Bench(store, [ServerChoice(target=pg18)])
    assert not bench.several
    bench.resolve(lambda _m: None)
    assert bench.settings_sentence() == "no server settings were changed"
    caps = await bench.open(lambda _index: lambda _m: None)
    profile = small_profile("table-kind", [Variant(name="unlogged")], rows=200, repeats=1)
    events: list[Event] = []
    record = await bench.run_one(0, profile, OPTIONS, events.append, caps[0])
    bench.release(lambda _m: None)
    assert record.status == "finished" and record.axis is None
    assert [r.run_id for r in bench.runners] == [record.id]
    assert not bench.settings_sentence().startswith("on ")  # one server: not named


async def test_the_first_interrupt_cancels_the_later_are_counted(
    pg18: Target, store: ResultStore
) -> None:
    bench = Bench(store, [ServerChoice(target=pg18)])
    bench.resolve(lambda _m: None)
    caps = await bench.open(lambda _index: lambda _m: None)
    profile = small_profile("table-kind", [Variant(name="unlogged")], rows=200_000, repeats=3)
    said: list[str] = []
    trial = asyncio.Event()

    def emit(event: Event) -> None:
        if isinstance(event, TrialStarted):
            trial.set()

    task = asyncio.create_task(bench.run_one(0, profile, OPTIONS, emit, caps[0]))
    await trial.wait()  # in the middle of a trial: the undo has work to do
    cancels: list[int] = []

    def cancel() -> None:
        cancels.append(1)
        task.cancel()

    for _ in range(3):
        bench.interrupted(cancel, said.append)
    with pytest.raises(asyncio.CancelledError):
        await task
    bench.release(lambda _m: None)
    assert cancels == [1]  # one cancel, never a second (it would cut the undo short)
    assert said == [STILL_PUTTING_BACK, STILL_PUTTING_BACK] and bench.interrupts == 3
    assert bench.runners[0].undo.complete
    assert (await server_state(pg18))["pgwx_lab"] is False


@pytest.mark.pg15
async def test_pg15_and_pg18_take_turns_on_the_bench(
    pg15: Target, pg18: Target, store: ResultStore
) -> None:
    bench, records, started = await turns_on(store, [pg15, pg18], [])
    assert [r.axis.label for r in records if r.axis] == ["15", "18"] == bench.labels
    assert started == ["15", "18", "15", "18"]


def test_a_server_that_fails_is_named_masked() -> None:
    text = server_failed("postgresql://me:hunter2@db/x", None, PgwxError("refused"))
    assert "hunter2" not in text and "nothing ran on any server: refused" in text
    assert server_failed(None, 16, PgwxError("not installed")).startswith("--pg 16 cannot")
    assert server_failed(None, None, PgwxError("gone"), "PG 18 at /tmp/x").startswith(
        "PG 18 at /tmp/x cannot be used"
    )


async def test_the_workload_is_built_once_per_run(
    pg18: Target, store: ResultStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The request builds the workload for its size estimate and the run takes that one: a
    second build (the runner's own) fails here."""
    profile = small_profile("table-kind", [Variant(name="unlogged")], rows=200, repeats=1)
    built: list[str] = []
    real = workloads.workload_class

    def counted(kind: str) -> type[workloads.Workload]:
        built.append(kind)
        return real(kind)

    monkeypatch.setattr(workloads, "workload_class", counted)
    request = RunRequest.build(profile, repeats=1, warmup=0, settle=0.0, sample=False)
    bench = Bench(store, [ServerChoice(target=pg18)])
    bench.resolve(lambda _m: None)
    caps = await bench.open(lambda _index: lambda _m: None)
    try:
        record = await bench.run_one(0, profile, request.options, lambda _e: None, caps[0])
    finally:
        bench.release(lambda _m: None)
    assert record.status == "finished"
    assert built == ["table-kind"]
    assert request.options.for_another_run().workload is None  # another server builds its own
