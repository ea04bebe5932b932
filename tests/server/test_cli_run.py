"""`explorer.cli.run` on the bundled PG 18: a finished run's verdicts are judged once at its
end — the table, the exit status and the `--fail-on` gate all read that one judgement — and
its workload is built once, from the profile file to the table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from explorer import cli
from explorer.analysis.gate import EXIT_REGRESSED
from explorer.cli import run as _cli_run  # noqa: F401  (imported, so its `judge` is counted)
from explorer.lab.workloads.base import Workload
from explorer.server.connect import Target
from tests.support.cli import FINISHED, private_store
from tests.support.judging import count_judgements


@pytest.mark.parametrize("gated", [False, True], ids=["plain", "fail-on"])
def test_a_finished_run_is_judged_once_at_its_end(
    pg18: Target,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    gated: bool,
) -> None:
    private_store(monkeypatch, tmp_path)
    assert pg18.bundled is not None
    argv = ["--data-dir", str(pg18.bundled.data_dir), "--keep-server", "run", "quick-demo"]
    argv += ["--scale", "0.005", "--repeats", "2", "--warmup", "0", "--allow-undecidable"]
    argv += ["--settle", "0", "--no-sample"]
    if gated:
        argv += ["--fail-on", "slower"]

    calls = count_judgements(monkeypatch)
    code = cli.main(argv)
    err = capsys.readouterr().err
    assert code in (*FINISHED, EXIT_REGRESSED), err
    ended = [c for c in calls if c != "look"]
    assert len(ended) == 1, f"the run was judged {len(ended)} times at its end: {calls}"


def test_pgwx_run_builds_its_workload_once(
    pg18: Target,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Loading the profile checks its parameters, the request builds the workload for its
    size estimate, and the runner takes that one: one workload made in the whole command."""
    private_store(monkeypatch, tmp_path)
    assert pg18.bundled is not None
    made: list[str] = []
    real_init = Workload.__init__

    def counted(self: Workload, params: Any) -> None:
        made.append(type(self).__name__)
        real_init(self, params)

    monkeypatch.setattr(Workload, "__init__", counted)
    argv = ["--data-dir", str(pg18.bundled.data_dir), "--keep-server", "run", "quick-demo"]
    argv += ["--scale", "0.005", "--repeats", "1", "--warmup", "0", "--allow-undecidable"]
    argv += ["--allow-undecidable", "--settle", "0", "--no-sample"]
    code = cli.main(argv)
    assert code in FINISHED, capsys.readouterr().err
    assert len(made) == 1, f"workloads made in one pgwx run: {made}"
