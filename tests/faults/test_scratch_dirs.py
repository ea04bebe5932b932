"""A run's scratch directory (pgwx-run-*) is removed however the run ends."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from explorer.lab.run import closing
from explorer.lab.run.runner import Runner, RunOptions
from explorer.lab.run.scratch import LOCK, PREFIX, scratch_dir, sweep
from explorer.lab.store.results import ResultStore
from explorer.lab.workloads.base import Workload, WorkloadError
from explorer.models import Event, TrialStarted, Variant
from explorer.server.connect import Target
from tests.support.faults import ROOT
from tests.support.runs import small_profile
from tests.support.server import server_state


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
    """A runner whose undo can be made to wait for the test, and whose prepare to fail."""

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

    def hold_the_undo(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """The run's undo (`closing.wind_down`) waits for `release`, saying when it starts
        (`winding`) and when it is over (`wound`)."""
        real = closing.wind_down

        async def held(ctx: Any, scope: Any, sampler_task: Any) -> None:
            self.winding.set()
            try:
                await self.release.wait()
                await real(ctx, scope, sampler_task)
            finally:
                self.wound.set()

        monkeypatch.setattr(closing, "wind_down", held)


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
    pg18: Target, store: ResultStore, scratch: Path, cancels: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = await server_state(pg18)
    runner = _runner(pg18, store)
    runner.hold_the_undo(monkeypatch)
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
        task.cancel()  # a second Ctrl-C, or an app quitting while the undo runs…
        runner.release.set()  # …and the undo still runs to its end (issue 20)
    with pytest.raises(asyncio.CancelledError):
        async with asyncio.timeout(120):  # a hang fails here instead of stalling the suite
            await task
    try:
        assert runner.workdirs and not _left(scratch)
    finally:
        runner.release.set()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(runner.wound.wait(), 60)
    assert await server_state(pg18) == before


# ----------------------------------------------------------- what a killed pgwx left behind

HOLDER = """
import os, signal, sys
from explorer.lab.run.scratch import scratch_dir
with scratch_dir() as path:
    (path / "prepared.copy").write_text("rows")
    print(path, flush=True)
    if sys.stdin.readline().strip() == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
"""


async def _holder(scratch: Path) -> tuple[asyncio.subprocess.Process, Path]:
    """A process inside `scratch_dir` (TMPDIR = `scratch`), and the directory it holds."""
    env = {**os.environ, "TMPDIR": str(scratch), "PYTHONPATH": str(ROOT)}
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        HOLDER,
        env=env,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    assert child.stdout is not None
    line = await asyncio.wait_for(child.stdout.readline(), 30)
    return child, Path(line.decode().strip())


async def _end(child: asyncio.subprocess.Process, say: str) -> None:
    assert child.stdin is not None
    child.stdin.write(f"{say}\n".encode())
    await child.stdin.drain()
    await asyncio.wait_for(child.wait(), 30)


async def test_a_killed_runs_directory_goes_with_the_next_run(scratch: Path) -> None:
    child, killed = await _holder(scratch)
    await _end(child, "kill")
    assert child.returncode == -signal.SIGKILL
    assert (killed / "prepared.copy").exists()  # nothing a killed process can do about it
    with scratch_dir() as mine:
        assert not killed.exists()
        assert _left(scratch) == [mine]
    assert not _left(scratch)


async def test_a_live_runs_directory_is_left_alone(scratch: Path) -> None:
    child, live = await _holder(scratch)
    try:
        assert sweep() == []
        with scratch_dir():
            assert (live / "prepared.copy").read_text() == "rows"
    finally:
        await _end(child, "done")
    assert child.returncode == 0 and not _left(scratch)


def test_what_is_not_a_killed_runs_directory_is_left_alone(scratch: Path) -> None:
    # a directory made by pgwx 0.1 (no lock file: nothing says its run is gone)
    old = scratch / f"{PREFIX}0p1xyz"
    old.mkdir()
    # a link named like one, to a directory whose lock is free: never followed
    target = scratch / "elsewhere"
    target.mkdir()
    (target / LOCK).write_text("")
    (target / "keep").write_text("x")
    (scratch / f"{PREFIX}link").symlink_to(target)
    # a file named like one
    (scratch / f"{PREFIX}file").write_text("x")
    assert sweep() == []
    assert sorted(p.name for p in _left(scratch)) == sorted(
        [old.name, "elsewhere", f"{PREFIX}link", f"{PREFIX}file"]
    )
    assert (target / "keep").exists()


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to make another user's directory")
def test_another_users_directory_is_left_alone(scratch: Path) -> None:
    theirs = scratch / f"{PREFIX}theirs"
    theirs.mkdir()
    (theirs / LOCK).write_text("")
    os.chown(theirs, 65534, 65534)
    assert sweep() == []
    assert theirs.exists()
    os.chown(theirs, 0, 0)
    assert sweep() == [theirs] and not theirs.exists()
