"""Issue 34, point 6: small faults, each now one sentence (or no fault at all)."""

from __future__ import annotations

import io
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from explorer import cli
from explorer.lab.store.results import ResultStore
from tests.support.cli import SECRET, assert_one_sentence
from tests.support.stored import record, trial


def test_an_empty_dsn_is_refused_not_taken_for_the_bundled_server(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli.main(["restore", "--dsn", ""]) == 2
    err = capsys.readouterr().err
    assert err == (
        "pgwx: --dsn is empty; give a connection string, or leave --dsn out to use the server "
        "pgwx starts itself.\n"
    )


@pytest.mark.parametrize("speed", ["1e-300", "nan", "inf", "-1", "1e300"])
def test_a_replay_speed_no_clock_can_keep_is_refused(
    speed: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["replay", "latest", "--headless", "--speed", speed]) == 2
    assert "--speed must be 0 (as fast as possible) or between 0.01 and" in capsys.readouterr().err


def test_a_profile_of_twenty_thousand_variants_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "many.toml"
    variants = "".join(f'[[variants]]\nname = "v{i}"\n' for i in range(20_000))
    path.write_text(f'title = "many"\nworkload = "table-kind"\n{variants}')
    assert cli.main(["check", str(path)]) == 1
    out = capsys.readouterr().out
    assert "field variants" in out and "at most 100" in out


def test_an_ascii_only_stdout_after_a_saved_run_is_no_internal_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    location = str(tmp_path / "r.sqlite")
    store = ResultStore(location)
    run_id = "20261101-100000-aaaaaa"
    store.begin_run(record(run_id))
    for rep in (1, 2, 3):
        store.add_trial(run_id, trial(run_id, "logged", rep, secs=1.0 + rep / 10))
        store.add_trial(run_id, trial(run_id, "unlogged", rep, secs=0.5 + rep / 10))
    store.end_run(run_id, "finished")
    store.close()
    raw = io.BytesIO()
    ascii_out = io.TextIOWrapper(raw, encoding="ascii")
    monkeypatch.setattr(sys, "stdout", ascii_out)
    monkeypatch.setenv("PGWX_RESULTS", location)
    code = cli.main(["--results", location, "report", run_id])
    ascii_out.flush()
    text = raw.getvalue().decode("ascii")
    assert code == 0, text
    assert run_id in text and "\\xb7" in text  # the report's ·, written as an escape


def test_restore_on_two_servers_names_the_command_for_each(
    cli: Callable[..., subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    proc = cli("--pg", "15", "--pg", "18", "restore")
    assert_one_sentence(proc, tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == (
        "pgwx: `pgwx restore` puts back one server at a time; run `pgwx --pg 15 restore`, "
        "then `pgwx --pg 18 restore`.\n"
    )


def test_restore_on_two_dsns_names_each_masked(
    cli: Callable[..., subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    proc = cli(
        "restore",
        "--dsn",
        f"postgresql://bob:{SECRET}@db1/app",
        "--dsn",
        f"host=db2 password={SECRET}",
    )
    assert_one_sentence(proc, tmp_path, "`pgwx --dsn 'postgresql://bob:***@db1/app' restore`")
    assert "`pgwx --dsn 'host=db2 password=***' restore`" in proc.stderr


def test_run_with_an_empty_dsn_starts_no_server(
    cli: Callable[..., subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    proc = cli("run", "quick-demo", "--dsn", "", "--data-dir", str(tmp_path / "pg"))
    assert_one_sentence(proc, tmp_path, "--dsn is empty")
    assert proc.returncode == 2
    assert not (tmp_path / "pg").exists()  # the bundled server was neither made nor started


def test_run_of_twenty_thousand_variants_is_refused_before_any_server(
    cli: Callable[..., subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    path = tmp_path / "many.toml"
    variants = "".join(f'[[variants]]\nname = "v{i}"\n' for i in range(20_000))
    path.write_text(f'title = "many"\nworkload = "table-kind"\n{variants}')
    proc = cli("run", str(path), "--data-dir", str(tmp_path / "pg"))
    assert_one_sentence(proc, tmp_path, "field variants", "at most 100", "not 20000")
    assert proc.returncode == 2
    assert not (tmp_path / "pg").exists()
