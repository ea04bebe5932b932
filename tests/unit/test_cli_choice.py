"""`explorer.cli.choice`: --results names the store as an argument, never through os.environ."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from explorer import cli
from explorer.lab.store.results import ResultStore
from explorer.paths import recordings_dir


def test_results_names_the_store_and_leaves_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    default, chosen = tmp_path / "default.sqlite", tmp_path / "chosen.sqlite"
    monkeypatch.setenv("PGWX_RESULTS", str(default))
    recording = recordings_dir() / "quick-demo.pgwx"
    assert cli.main(["--results", str(chosen), "import", str(recording)]) == 0
    assert os.environ["PGWX_RESULTS"] == str(default)  # not rewritten for the process
    assert cli.main(["--results", str(chosen), "runs"]) == 0
    listed = capsys.readouterr().out
    assert "quick-demo" in listed
    store = ResultStore(chosen)
    try:
        assert [r.profile.name for r in store.list_runs()] == ["quick-demo"]
    finally:
        store.close()
    assert cli.main(["runs"]) == 0  # without --results: $PGWX_RESULTS, which holds nothing
    assert "no runs yet" in capsys.readouterr().out
