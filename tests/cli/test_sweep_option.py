"""`pgwx run --sweep NAME=V1,V2,…` (issue 37, point 2): bad input is one sentence before any
server is reached; a good one runs one variant per value and prints the curve."""

from __future__ import annotations

import subprocess
from collections.abc import Callable

import pytest

Cli = Callable[..., subprocess.CompletedProcess[str]]


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("max_wal_size", "is not NAME=VALUE,VALUE…; write e.g. --sweep max_wal_size=256MB,1GB"),
        ("max_wal_size=1GB", "a sweep needs at least two values"),
        ("archive_command=a,b", "pgwx never sets archive_command from a profile"),
        ("max_wal_size=1GB,1GB", "a sweep names each value once"),
    ],
)
def test_a_bad_sweep_is_one_sentence_before_any_server(cli: Cli, spec: str, words: str) -> None:
    done = cli("run", "quick-demo", "--sweep", spec)
    assert done.returncode == 2, done.stderr
    assert words in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert "starting" not in done.stderr  # no server was started for it


def test_a_sweep_runs_one_variant_per_value_and_prints_the_curve(cli: Cli) -> None:
    done = cli(
        "run",
        "durability",
        "--sweep",
        "max_wal_size=64MB,1GB",
        *("--scale", "0.05", "--repeats", "2", "--warmup", "0", "--settle", "0"),
        "--allow-undecidable",
    )
    assert done.returncode in (0, 4), done.stderr
    assert "| max_wal_size=64MB |" in done.stdout and "| max_wal_size=1GB |" in done.stdout
    assert "Sweep of max_wal_size (total: time ratio to 64MB" in done.stdout
    assert "max_wal_size=1GB" in done.stdout.split("Settings in force that differ")[1]
