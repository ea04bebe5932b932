"""A run's scratch directory (pgwx-run-*) is removed however the run ends."""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from pathlib import Path
from typing import Any

import pytest

from explorer.lab.results import ResultStore
from explorer.lab.runner import Runner, RunOptions
from explorer.lab.workloads.base import Workload, WorkloadError
from explorer.models import Event, TrialStarted, Variant
from explorer.server.connect import Target
from tests.conftest import server_state, small_profile


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The temp directory runs make their scratch directories in, private to the test."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def _left(folder: Path) -> list[Path]:
    """What is still in the temp directory."""
    return list(folder.iterdir())


class HeldRunner(Runner):
    """A runner whose undo waits for the test, and whose prepare can be made to fail."""

    def __init__(self, *args: Any, fail_prepare: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fail_prepare = fail_prepare
        self.winding = asyncio.Event()
        self.release = asyncio.Event()
        self.release.set()
        self.wound = asyncio.Event()
        self.workdirs: list[Path] = []

    def build_workload(self) -> Workload:
        workload = super().build_workload()
        original = workload.prepare

        async def prepare(target: Target, caps: Any, workdir: Path) -> None:
            self.workdirs.append(workdir)
            (workdir / "made-by-prepare").write_text("x")
            if self.fail_prepare:
                raise WorkloadError("prepare failed on purpose")
            await original(target, caps, workdir)

        workload.prepare = prepare  # type: ignore[method-assign]
        return workload

    async def _wind_down(self, scope: Any, sampler_task: Any) -> None:
        self.winding.set()
        try:
            await self.release.wait()
            await super()._wind_down(scope, sampler_task)
        finally:
            self.wound.set()


def _runner(pg18: Target, store: ResultStore, **kwargs: Any) -> HeldRunner:
    profile = small_profile("table-kind", [Variant(name="a")], rows=2_000, repeats=3)
    options = RunOptions(sample=False, settle_seconds=0)
    return HeldRunner(pg18, profile, store, options, **kwargs)


async def test_finished_run_removes_it(pg18: Target, store: ResultStore, scratch: Path) -> None:
    runner = _runner(pg18, store)
    record = await runner.run()
    assert record.status == "finished"
    assert runner.workdirs and not _left(scratch)


async def test_failed_run_removes_it(pg18: Target, store: ResultStore, scratch: Path) -> None:
    runner = _runner(pg18, store, fail_prepare=True)
    record = await runner.run()
    assert record.status == "failed" and "on purpose" in (record.reason or "")
    assert runner.workdirs and not _left(scratch)


@pytest.mark.parametrize("cancels", [1, 2], ids=["cancel", "cancel-during-undo"])
async def test_cancelled_run_removes_it(
    pg18: Target, store: ResultStore, scratch: Path, cancels: int
) -> None:
    before = await server_state(pg18)
    runner = _runner(pg18, store)
    started = asyncio.Event()

    def emit(event: Event) -> None:
        if isinstance(event, TrialStarted):
            started.set()

    if cancels == 2:
        runner.release.clear()  # the undo waits until the test has looked
    task = asyncio.create_task(runner.run(emit))
    await asyncio.wait_for(started.wait(), 60)
    task.cancel()
    if cancels == 2:
        await asyncio.wait_for(runner.winding.wait(), 60)
        task.cancel()  # a second Ctrl-C, or an app quitting while the undo runs
    with pytest.raises(asyncio.CancelledError):
        await task
    try:
        assert runner.workdirs and not _left(scratch)
    finally:
        runner.release.set()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(runner.wound.wait(), 60)
    assert await server_state(pg18) == before
