"""`--format bmf`: a stored run in Bencher Metric Format, validated against the published
shape (tests/fixtures/bmf.schema.json, written from Bencher's reference page)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import jsonschema
import pytest

from explorer import cli
from explorer.analysis.judge import judge
from explorer.lab.store.results import ResultStore
from explorer.models import PhaseMechanism, PhaseResult, TrialResult
from tests.support.stored import record

SCHEMA = json.loads((Path(__file__).parents[1] / "fixtures" / "bmf.schema.json").read_text())


def _trial(run_id: str, variant: str, repeat: int, secs: float, wal: int | None) -> TrialResult:
    return TrialResult(
        run_id=run_id,
        variant=variant,
        repeat=repeat,
        status="ok",
        started_at=dt.datetime.now(dt.UTC),
        phases=[
            PhaseResult(
                name="load",
                seconds=secs,
                rows=10,
                mechanism=PhaseMechanism(wal_bytes=wal),
            ),
            PhaseResult(name="commit", seconds=secs / 2000, rows=0),  # under the 1 ms clock
        ],
    )


@pytest.fixture
def stored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    path = tmp_path / "r.sqlite"
    monkeypatch.setenv("PGWX_RESULTS", str(path))
    store = ResultStore(path)
    run_id = "20260101-000000-aaaaaa"
    store.begin_run(record(run_id))
    for rep in range(1, 11):
        store.add_trial(run_id, _trial(run_id, "logged", rep, 1 + rep / 1000, 8_000_000 + rep))
        # unlogged: WAL not measured in one trial, so its median is unknown
        store.add_trial(
            run_id, _trial(run_id, "unlogged", rep, 0.5 + rep / 1000, None if rep == 3 else 900)
        )
    store.end_run(run_id, "finished")
    store.close()
    return run_id


def test_the_schema_is_itself_valid() -> None:
    jsonschema.Draft7Validator.check_schema(SCHEMA)


def test_report_as_bmf_has_each_variant_phase_with_ratio_seconds_and_wal(
    stored: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["report", stored, "--format", "bmf"]) == 0
    doc = json.loads(capsys.readouterr().out)
    jsonschema.validate(doc, SCHEMA)
    assert set(doc) == {
        f"quick-demo/{v}/{p}" for v in ("logged", "unlogged") for p in ("load", "commit", "total")
    }
    base = doc["quick-demo/logged/load"]
    assert "ratio" not in base  # the baseline is not compared with itself
    assert (
        base["seconds"]["lower_value"] <= base["seconds"]["value"] <= base["seconds"]["upper_value"]
    )
    assert base["wal-bytes"]["value"] == 8_000_005.5
    unlogged = doc["quick-demo/unlogged/load"]
    ratio = unlogged["ratio"]
    assert ratio["lower_value"] < ratio["value"] < ratio["upper_value"] < 1
    # an unknown WAL median is left out, never 0
    assert "wal-bytes" not in unlogged
    # a phase below the timer floor carries its difference in seconds, not a ratio
    commit = doc["quick-demo/unlogged/commit"]
    assert "ratio" not in commit and commit["difference-seconds"]["value"] < 0


def test_bmf_ratio_is_the_verdict_s(stored: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["report", stored, "--format", "bmf"]) == 0
    doc = json.loads(capsys.readouterr().out)
    store = ResultStore()
    try:
        v = judge(store.load(stored)).verdicts[("unlogged", "load")]
    finally:
        store.close()
    assert doc["quick-demo/unlogged/load"]["ratio"] == {
        "value": v.ratio, "lower_value": v.ci_low, "upper_value": v.ci_high,
    }  # fmt: skip


def test_a_document_that_breaks_the_shape_is_caught() -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"b": {"seconds": {"value": None}}}, SCHEMA)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"b": {"m" * 65: {"value": 1}}}, SCHEMA)
