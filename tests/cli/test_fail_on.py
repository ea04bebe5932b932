"""The CI gate: `pgwx run|compare … --fail-on slower` exits 5 only on a decided `slower`.

The run case is built so that a variant is reliably slower: the same INSERT of rows into a
table whose three foreign keys are checked row by row (an immediate FK fires a trigger and an
index lookup per row) against the same table without them — several times the time on any
machine, far beyond a shared machine's spikes. A twin of
the baseline (same knobs) is never decided slower, so narrowing the gate to it exits 0 or 4.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from explorer import cli
from explorer.analysis.gate import EXIT_REGRESSED
from explorer.lab.store.results import ResultStore
from explorer.models import PhaseResult, RunRecord, TrialResult
from explorer.server.connect import Target
from tests.support.stored import record

FK_PROFILE = """
title = "gate case: a row-by-row foreign key against none"
workload = "sql"
repeats = 8
warmup = 0
settle_seconds = 0
baseline = "plain"
[params]
sizes = { rows = 60000 }
setup = "INSERT INTO {parent} SELECT generate_series(1, 100)"
[[params.tables]]
name = "parent"
columns = "id int PRIMARY KEY"
table_kind = false
[[params.tables]]
name = "child"
columns = "id int, a int, b int, c int"
foreign_keys = [
  { columns = "a", references = "parent (id)" },
  { columns = "b", references = "parent (id)" },
  { columns = "c", references = "parent (id)" },
]
[[params.phases]]
name = "load"
sql = '''INSERT INTO {child}
  SELECT i, 1 + i % 100, 1 + i % 99, 1 + i % 98 FROM generate_series(1, {rows}) AS i'''
[[variants]]
name = "plain"
knobs = { fk = "none" }
[[variants]]
name = "checked"
knobs = { fk = "immediate" }
[[variants]]
name = "twin"
knobs = { fk = "none" }
"""


def _pgwx(
    pg18: Target,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    *args: str,
) -> tuple[int, str, str]:
    monkeypatch.setenv("PGWX_RESULTS", str(tmp_path / "r.sqlite"))
    monkeypatch.setenv("PGWX_STATE_DIR", str(tmp_path / "state"))
    for var in cli.LIBPQ_ENV:
        monkeypatch.delenv(var, raising=False)
    assert pg18.bundled is not None
    profile = tmp_path / "gate-case.toml"
    profile.write_text(FK_PROFILE, encoding="utf-8")
    data_dir = str(pg18.bundled.data_dir)
    code = cli.main(["run", str(profile), "--data-dir", data_dir, "--no-sample", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_significantly_slower_variant_fails_the_job_with_5(
    pg18: Target,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = _pgwx(pg18, tmp_path, monkeypatch, capsys, "--fail-on", "slower")
    assert code == EXIT_REGRESSED == 5, err
    assert "slower" in out  # the table itself is printed as usual
    said = [line for line in err.splitlines() if "regression:" in line]
    assert len(said) == 1 and "checked load" in said[0] and "twin" not in said[0], err

    # The same stored run, narrowed to the baseline's twin: never slower, so 0 or 4.
    code, _, err = _pgwx(
        pg18, tmp_path, monkeypatch, capsys,
        "--fail-on", "slower", "--fail-variant", "twin", "--fail-phase", "load",
    )  # fmt: skip
    assert code in (0, 4), err
    assert "regression:" not in err


def test_without_the_option_a_slower_variant_is_just_decided(
    pg18: Target,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = _pgwx(
        pg18, tmp_path, monkeypatch, capsys, "--variant", "plain", "--variant", "checked"
    )
    assert code == 0, err
    assert "slower" in out and "regression:" not in err


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--fail-on", "faster"], ["--fail-on takes slower"]),
        (["--fail-variant", "checked"], ["add --fail-on slower"]),
        (["--fail-on", "slower", "--fail-variant", "plain"], ["is the baseline"]),
        (["--fail-on", "slower", "--fail-variant", "chekced"], ["not a variant of this run"]),
    ],
)
def test_a_gate_that_would_watch_nothing_is_refused_before_the_run(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    words: list[str],
) -> None:
    monkeypatch.setenv("PGWX_RESULTS", str(tmp_path / "r.sqlite"))
    monkeypatch.setenv("PGWX_STATE_DIR", str(tmp_path / "state"))
    profile = tmp_path / "gate-case.toml"
    profile.write_text(FK_PROFILE, encoding="utf-8")
    code = cli.main(["run", str(profile), "--dsn", "postgresql://nobody@/nowhere", *args])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert all(w in err for w in words), err
    assert (
        not (tmp_path / "r.sqlite").exists() or ResultStore(tmp_path / "r.sqlite").list_runs() == []
    )


def _stored(store: ResultStore, run_id: str, minutes_ago: float, secs: dict[str, float]) -> None:
    """A finished quick-demo run whose variants' `load` took these seconds, ten trials each
    with a small spread (the ranks of a slower variant are all above the baseline's)."""
    run: RunRecord = record(run_id, minutes_ago)
    run.status = "finished"
    store.begin_run(run)
    for repeat in range(1, 11):
        for variant, base in secs.items():
            store.add_trial(
                run_id,
                TrialResult(
                    run_id=run_id,
                    variant=variant,
                    repeat=repeat,
                    status="ok",
                    started_at=dt.datetime.now(dt.UTC),
                    phases=[PhaseResult(name="load", seconds=base * (1 + repeat / 1000), rows=1)],
                ),
            )
    store.end_run(run_id, "finished")


def test_compare_fails_on_a_slower_variant_of_run_b_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "r.sqlite"
    monkeypatch.setenv("PGWX_RESULTS", str(path))
    store = ResultStore(path)
    try:
        _stored(store, "20260101-000000-aaaaaa", 60, {"logged": 1.0, "unlogged": 0.5})
        _stored(store, "20260102-000000-bbbbbb", 30, {"logged": 1.0, "unlogged": 0.8})
    finally:
        store.close()
    a, b = "20260101-000000-aaaaaa", "20260102-000000-bbbbbb"
    assert cli.main(["compare", a, b, "--fail-on", "slower"]) == EXIT_REGRESSED
    err = capsys.readouterr().err
    assert "unlogged load" in err and "slower" in err
    # B against A the other way round is faster: the gate stays shut; the logged rows are
    # the same within the threshold, so every watched row is settled (0).
    assert cli.main(["compare", b, a, "--fail-on", "slower"]) == 0
    assert "regression:" not in capsys.readouterr().err
    # Narrowed to the variant that did not change: 0, even where another one regressed.
    assert cli.main(["compare", a, b, "--fail-on", "slower", "--fail-variant", "logged"]) == 0
    # A misspelt phase would watch nothing: refused in one sentence.
    assert cli.main(["compare", a, b, "--fail-on", "slower", "--fail-phase", "lod"]) == 2
    assert "names no compared phase" in capsys.readouterr().err
