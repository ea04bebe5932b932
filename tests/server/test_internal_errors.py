"""A programming error in a trial keeps its traceback: logged, stored as an internal error,
raised on to the front end, and the server is still put back."""

from __future__ import annotations

from pathlib import Path

import pytest

from explorer.lab.run.runner import Runner, RunOptions
from explorer.lab.store.results import ResultStore
from explorer.lab.workloads.base import TrialContext, WorkloadError
from explorer.lab.workloads.table_kind import TableKindWorkload
from explorer.models import Knobs, Variant
from explorer.server.connect import Target
from tests.support.runs import RunProfile, small_profile
from tests.support.server import server_state

VARIANTS = [
    Variant(name="logged", knobs=Knobs()),
    Variant(name="fsync-off", knobs=Knobs(fsync=False)),
]


async def divide_rows_by_zero(self: TableKindWorkload, ctx: TrialContext) -> None:
    """A workload phase with a bug in it."""
    async with ctx.phase("insert", expected_rows=self.params.rows):
        self.params.rows // 0


async def refuse_politely(self: TableKindWorkload, ctx: TrialContext) -> None:
    """A workload phase that fails the user's way (one sentence, the run goes on)."""
    async with ctx.phase("insert"):
        raise WorkloadError("the table is full; try a smaller --scale")


async def test_a_bug_in_a_trial_keeps_its_traceback(
    pg18: Target, store: ResultStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(TableKindWorkload, "trial", divide_rows_by_zero)
    before = await server_state(pg18)
    profile = small_profile("table-kind", VARIANTS, rows=10, repeats=2)
    runner = Runner(pg18, profile, store, RunOptions(settle_seconds=0, warmup=0, sample=False))
    with pytest.raises(ZeroDivisionError):
        await runner.run()
    log = tmp_path / "state" / "pgwx.log"  # the store fixture points PGWX_STATE_DIR there
    reason = f"internal error (see {log})"
    record = store.load(runner.run_id)
    assert (record.status, record.reason) == ("failed", reason)
    assert [(t.variant, t.status, t.reason) for t in record.trials] == [
        ("logged", "failed", reason)
    ], "the run stops at the first bug"
    text = log.read_text()
    assert "Traceback" in text and "ZeroDivisionError" in text
    assert "divide_rows_by_zero" in text, "the traceback names the function at fault"
    assert text.count("Traceback") == 1, "logged once, however many layers report it"
    assert await server_state(pg18) == before, "a bug still gets the server put back"


async def test_a_user_error_in_a_trial_is_one_sentence_and_the_run_goes_on(
    pg18: Target, run_profile: RunProfile, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(TableKindWorkload, "trial", refuse_politely)
    profile = small_profile("table-kind", VARIANTS[:1], rows=10, repeats=2)
    record, _ = await run_profile(pg18, profile)
    assert [t.reason for t in record.trials] == ["the table is full; try a smaller --scale"] * 2
    assert not (tmp_path / "state" / "pgwx.log").exists(), "no traceback for the user's error"
