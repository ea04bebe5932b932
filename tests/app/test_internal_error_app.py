"""The app's worker handler says a bug is an internal error and names the log; no traceback
on screen, and the run is stored as such."""

from __future__ import annotations

from pathlib import Path

import pytest

from explorer.lab.store.results import ResultStore
from explorer.lab.workloads.base import TrialContext
from explorer.lab.workloads.table_kind import TableKindWorkload
from explorer.models import Variant
from explorer.server.connect import Target
from explorer.tui.app import PgwxApp
from explorer.tui.controller import RunController
from tests.support.app import connected, log_text, wait_for
from tests.support.runs import small_profile


async def call_a_missing_method(self: TableKindWorkload, ctx: TrialContext) -> None:
    """A workload phase with a bug in it."""
    async with ctx.phase("insert"):
        ctx.no_such_method()  # type: ignore[attr-defined]


async def test_the_app_says_a_bug_is_an_internal_error(
    pg18: Target, store: ResultStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(TableKindWorkload, "trial", call_a_missing_method)
    profile = small_profile("table-kind", [Variant(name="a")], rows=10)
    log = tmp_path / "state" / "pgwx.log"  # the store fixture points PGWX_STATE_DIR there
    async with PgwxApp(target=pg18, store=store).run_test(size=(120, 36)) as pilot:
        lab = await connected(pilot)
        lab.query_one(RunController).run_profile(profile, 1.0, lab.caps, single=False)
        said = "".join(f"The run failed: internal error (see {log})".split())
        await wait_for(pilot, lambda: said in log_text(lab))
        assert "Traceback" not in log_text(lab)
    assert "call_a_missing_method" in log.read_text()
    (run,) = store.list_runs()
    assert (run.status, run.reason) == ("failed", f"internal error (see {log})")
