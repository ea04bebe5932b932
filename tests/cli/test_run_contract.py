"""The headless contract a CI runner relies on: `pgwx run --format json` and its exit status.

The document validates against the versioned schema shipped in the package
(`explorer/schemas/run-v1.schema.json`), and the exit status says how the run ended: 0 every
comparison decided, 4 finished with comparisons undecided, 2 refused before anything ran.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from explorer import cli
from explorer.server.connect import Target

SCHEMA = json.loads(
    (Path(cli.__file__).parents[1] / "schemas" / "run-v1.schema.json").read_text(encoding="utf-8")
)
SMALL = ["--scale", "0.002", "--warmup", "0", "--settle", "0", "--no-sample"]


def _run(
    pg18: Target,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    *args: str,
) -> tuple[int, dict[str, object] | None, str]:
    monkeypatch.setenv("PGWX_RESULTS", str(tmp_path / "r.sqlite"))
    monkeypatch.setenv("PGWX_STATE_DIR", str(tmp_path / "state"))
    for var in cli.LIBPQ_ENV:
        monkeypatch.delenv(var, raising=False)
    assert pg18.bundled is not None
    data_dir = str(pg18.bundled.data_dir)
    code = cli.main(["run", "quick-demo", "--data-dir", data_dir, *SMALL, *args])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else None), err


def test_the_schema_is_itself_valid() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


def test_a_run_with_nothing_left_undecided_exits_0_and_says_decided(
    pg18: Target,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, doc, err = _run(
        pg18, tmp_path, monkeypatch, capsys, "--variant", "logged", "--repeats", "1",
        "--allow-undecidable", "--format", "json",
    )  # fmt: skip
    assert code == 0, err
    assert doc is not None
    jsonschema.validate(doc, SCHEMA)
    assert (doc["format"], doc["version"], doc["outcome"]) == ("pgwx-run", 1, "decided")
    assert doc["rules"] >= 1
    assert doc["undecided"] == []


def test_a_run_with_comparisons_undecided_exits_4_and_says_so(
    pg18: Target,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, doc, err = _run(
        pg18, tmp_path, monkeypatch, capsys, "--variant", "logged", "--variant", "unlogged",
        "--repeats", "1", "--allow-undecidable", "--format", "json",
    )  # fmt: skip
    assert code == 4, err
    assert doc is not None
    jsonschema.validate(doc, SCHEMA)
    assert doc["outcome"] == "undecided" and doc["undecided"]
    words = {row["verdict"]["word"] for row in doc["rows"] if row["verdict"]}  # type: ignore[index]
    assert words == {"baseline", "undecided"}


def test_a_refused_run_exits_2_and_prints_no_document(
    pg18: Target,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, doc, err = _run(
        pg18, tmp_path, monkeypatch, capsys, "--variant", "bogus", "--format", "json"
    )
    assert code == 2 and doc is None
    assert "has no variant bogus" in err and len(err.strip().splitlines()) == 1


def test_a_run_prints_bencher_metric_format_on_request(
    pg18: Target,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    bmf = json.loads(
        (Path(__file__).parents[1] / "fixtures" / "bmf.schema.json").read_text(encoding="utf-8")
    )
    code, doc, err = _run(
        pg18, tmp_path, monkeypatch, capsys, "--variant", "logged", "--variant", "unlogged",
        "--repeats", "1", "--allow-undecidable", "--format", "bmf",
    )  # fmt: skip
    assert code in (0, 4), err
    assert doc is not None
    jsonschema.validate(doc, bmf)
    assert {name.split("/")[1] for name in doc} == {"logged", "unlogged"}
    assert all(name.startswith("quick-demo/") and "seconds" in m for name, m in doc.items())
