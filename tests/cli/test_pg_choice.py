"""`pgwx --version`, `pgwx server list`, and choosing a PostgreSQL on the command line.

Real child processes (`python -m explorer.cli`), private store, journal and data directories.
"""

from __future__ import annotations

import platform
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from explorer.server import installs
from explorer.server.embedded import LocalServer
from tests.support.faults import child_env
from tests.support.server import PG15_BIN


def pgwx(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "explorer.cli", *args],
        env=child_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
        cwd=str(tmp_path),
    )


def test_version_names_pgwx_python_and_the_bundled_postgresql(tmp_path: Path) -> None:
    done = pgwx(tmp_path, "--version")
    assert done.returncode == 0, done.stderr
    line = done.stdout.strip()
    project = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    version = re.escape(project["project"]["version"])  # as installed from pyproject.toml
    assert re.fullmatch(
        rf"pgwx {version} \(Python {re.escape(platform.python_version())}, "
        r"bundled PostgreSQL 18\.\d+\)",
        line,
    ), line


def test_server_list_shows_each_build_and_what_it_supports(tmp_path: Path) -> None:
    done = pgwx(tmp_path, "server", "list")
    assert done.returncode == 0, done.stderr
    blocks = done.stdout.split("\n\n")[1:]
    bundled = blocks[0]
    assert bundled.startswith("PostgreSQL 18.")
    assert "bundled, the default: `pgwx --pg 18`" in bundled
    assert re.search(r"lz4 +not built in", bundled)
    assert re.search(r"pg_stat_io +18 shape", bundled)
    assert re.search(r"io_method +sync, worker, io_uring ✗ not built in", bundled)
    assert re.search(r"data dir +\S+/pg18 ", bundled)
    if (PG15_BIN / "postgres").exists():
        (pg15,) = [b for b in blocks if b.startswith("PostgreSQL 15.")]
        assert "`pgwx --pg 15`" in pg15 and str(PG15_BIN) in pg15
        assert re.search(r"lz4 +built in", pg15)
        assert re.search(r"pg_stat_io +missing \(added in 16\)", pg15)
        assert re.search(r"lacks +pg_stat_io", pg15)
        assert re.search(r"data dir +\S+/pg15 ", pg15)
    # what it found is what discovery finds, one block each
    assert len(blocks) == len(installs.discover())


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--pg", "99", "server", "status"], "No PostgreSQL 99 found"),
        (["--pg-bin", "/nonexistent/bin", "server", "status"], "no runnable postgres"),
        (["--pg", "15", "--pg-bin", "/usr/bin", "server", "status"], "not both"),
        (["--pg", "15", "--dsn", "postgresql:///x", "run", "quick-demo"], "give one of them"),
        (["run", "quick-demo", "--pg", "99"], "No PostgreSQL 99 found"),
    ],
)
def test_a_bad_choice_is_one_sentence(tmp_path: Path, args: list[str], words: str) -> None:
    done = pgwx(tmp_path, *args)
    assert done.returncode == 2
    assert words in done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


@pytest.mark.pg15
def test_check_on_the_bundled_server_says_where_lz4_is(
    pg18_server: LocalServer, tmp_path: Path
) -> None:
    if not (PG15_BIN / "postgres").exists():
        pytest.skip("Debian's postgresql-15 is not installed")
    # the tests' bundled 18, already running: this pgwx attaches to it and leaves it running
    done = pgwx(tmp_path, "check", "json-documents", "--data-dir", str(pg18_server.data_dir))
    assert done.returncode == 0, done.stderr
    (skipped,) = [line for line in done.stdout.splitlines() if "will be skipped here" in line]
    assert "variant lz4" in skipped and "lz4 is not built into this server" in skipped
    # Debian's 15, or the pip 17 of the lz4 extra where it is installed (newest first)
    lz4 = installs.lz4_elsewhere()
    assert lz4 is not None
    where = rf"{re.escape(lz4.name())} has it: `pgwx {lz4.option()}`"
    assert re.search(where, skipped), skipped
