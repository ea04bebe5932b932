"""Report formats and the command line on runs made on the bundled PG 18 (the serverless
half is tests/unit/test_profiles_report.py)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from explorer import cli
from explorer.analysis.report import render, summarize
from explorer.analysis.verdict import CLOCK_FLOOR_SECONDS
from explorer.models import Knobs, Profile, TableKind, Variant
from explorer.server.connect import Target
from tests.support.cli import FINISHED, private_store
from tests.support.runs import RunProfile


async def test_report_formats_agree(pg18: Target, run_profile: RunProfile) -> None:
    profile = Profile(
        name="r",
        title="Report test",
        workload="table-kind",
        params={"rows": 3000},
        repeats=2,
        variants=[
            Variant(name="logged"),
            Variant(name="unlogged", knobs=Knobs(table_kind=TableKind.UNLOGGED)),
            Variant(name="fast", knobs=Knobs(synchronous_commit="off")),
        ],
    )
    record, _ = await run_profile(pg18, profile)
    rows = summarize(record)
    logged_total = next(r for r in rows if r.variant == "logged" and r.phase == "total")
    assert logged_total.ratio == pytest.approx(1.0) and logged_total.n == 2
    assert logged_total.min <= logged_total.median <= logged_total.max  # type: ignore[operator]
    md = render(record, "md")
    assert "| unlogged | insert | 2 |" in md
    assert "synchronous_commit=off" in md  # the settings that differ are printed
    parsed = list(csv.DictReader(io.StringIO(render(record, "csv"))))
    assert len(parsed) == len(rows)
    data = json.loads(render(record, "json"))
    assert data["server_version"].startswith("18") and len(data["rows"]) == len(rows)
    unl = next(r for r in data["rows"] if r["variant"] == "unlogged" and r["phase"] == "total")
    verdict = unl["verdict"]
    assert verdict["word"] == "undecided" and verdict["n_candidate"] == 2
    assert verdict["label"] == "undecided, too few runs (n=2)"
    if logged_total.median >= CLOCK_FLOOR_SECONDS:  # type: ignore[operator]
        # The Hodges–Lehmann ratio lies among the pairwise ratios of the trials.
        assert unl["min"] / logged_total.max <= unl["ratio"] <= unl["max"] / logged_total.min
    else:  # below the clock's floor (1 ms): a difference in seconds, no ratio
        assert unl["ratio"] is None
        assert verdict["difference_seconds"] == pytest.approx(unl["median"] - logged_total.median)


def test_cli_run_on_bundled_then_runs_and_report(
    pg18: Target,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    private_store(monkeypatch, tmp_path)
    assert pg18.bundled is not None
    data_dir = str(pg18.bundled.data_dir)
    code = cli.main(
        [
            "run",
            "quick-demo",
            "--data-dir",
            data_dir,
            "--scale",
            "0.005",
            "--repeats",
            "1",
            "--allow-undecidable",
            "--warmup",
            "0",
            "--settle",
            "0",
            "--no-sample",
            "--format",
            "csv",
        ]
    )
    out, err = capsys.readouterr()
    assert code in FINISHED, err
    assert "variant,phase,n,min,median,max" in out.splitlines()[0]
    assert "[3/3] temporary" in err and "saved as run" in err
    assert pg18.bundled.is_running()  # it was running before: not ours to stop
    assert cli.main(["runs"]) == 0
    listing = capsys.readouterr().out
    assert "quick-demo" in listing and "finished" in listing and "3 ok" in listing
    assert cli.main(["report", "latest", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["profile"] == "quick-demo"
    assert cli.main(["report", "latest"]) == 0
    md = capsys.readouterr().out
    # the environment block and the mechanism columns; without the sampler, waits are `?`
    assert "Environment: pgwx " in md and "Machine during the run" in md
    assert (
        "| WAL | WAL/row | FPI | written | ext pages | fsyncs | evictions | ckpts | waits |" in md
    )
    logged = next(ln for ln in md.splitlines() if ln.startswith("| logged | insert |"))
    assert logged.split("|")[-3].strip() == "?"
    assert cli.main(["replay", "latest", "--headless"]) == 0
    assert "[1/3] logged" in capsys.readouterr().err
