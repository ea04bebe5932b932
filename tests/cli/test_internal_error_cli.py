"""`pgwx run` with a bug in a trial: exit 3, the log named, the run stored as an internal error."""

from __future__ import annotations

from pathlib import Path

import pytest

from explorer import cli
from explorer.lab.store.results import ResultStore
from explorer.lab.workloads.base import TrialContext
from explorer.lab.workloads.table_kind import TableKindWorkload
from explorer.server.connect import Target


async def look_up_a_missing_key(self: TableKindWorkload, ctx: TrialContext) -> None:
    """A workload phase with a bug in it."""
    async with ctx.phase("insert"):
        _ = {}["rows"]


def test_pgwx_run_surfaces_a_bug_with_its_log(
    pg18: Target,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("PGWX_RESULTS", str(tmp_path / "r.sqlite"))
    monkeypatch.setenv("PGWX_STATE_DIR", str(tmp_path / "state"))
    for var in cli.LIBPQ_ENV:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(TableKindWorkload, "trial", look_up_a_missing_key)
    assert pg18.bundled is not None
    argv = ["--data-dir", str(pg18.bundled.data_dir), "--keep-server", "run", "quick-demo"]
    argv += [
        "--scale",
        "0.005",
        "--repeats",
        "1",
        "--allow-undecidable",
        "--allow-undecidable",
        "--settle",
        "0",
        "--no-sample",
    ]
    assert cli.main(argv) == 3
    log = tmp_path / "state" / "pgwx.log"
    err = capsys.readouterr().err
    assert f"pgwx: internal error (KeyError); the traceback is in {log}" in err, err
    assert "Traceback" not in err, "the traceback goes to the log, not the screen"
    assert "look_up_a_missing_key" in log.read_text()
    store = ResultStore(tmp_path / "r.sqlite")
    try:
        (run,) = store.list_runs()
        assert (run.status, run.reason) == ("failed", f"internal error (see {log})")
    finally:
        store.close()
