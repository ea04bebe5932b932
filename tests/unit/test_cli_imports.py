"""The stored-results commands and `--version` start light: no driver, no UI (issue 36).

`pgwx report`, `runs`, `compare`, `history` and `--version` read the results store and print;
each runs here in a fresh process, the way a user starts it, and the modules loaded by the end
are checked. `explorer.analysis` is pure and loads neither either.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from explorer.paths import recordings_dir
from tests.support.cli import private_env
from tests.support.paths import ROOT

HEAVY = ("asyncpg", "textual")
"""The driver and the UI: what a stored-results command never needs."""

PROBE = """
import sys
from explorer.cli import main
try:
    status = main(sys.argv[2:])
except SystemExit as exc:
    status = exc.code or 0
heavy = sorted({m.split(".")[0] for m in sys.modules} & set(sys.argv[1].split(",")))
print("LOADED:" + ",".join(heavy), file=sys.__stderr__)
sys.exit(status)
"""
"""`pgwx ARGS` through the real entry point, then which of the heavy packages it loaded."""

Pgwx = Callable[..., tuple[subprocess.CompletedProcess[str], list[str]]]


@pytest.fixture
def pgwx(tmp_path: Path) -> Pgwx:
    """Run pgwx ARGS in a child with a private store and state; returns it and what it loaded."""

    def run(*args: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
        proc = subprocess.run(
            [sys.executable, "-c", PROBE, ",".join(HEAVY), *args],
            capture_output=True,
            text=True,
            env=private_env(tmp_path),
            cwd=tmp_path,
            timeout=120,
        )
        marks = [line for line in proc.stderr.splitlines() if line.startswith("LOADED:")]
        assert marks, f"the probe did not finish: {proc.stderr}"
        loaded = marks[-1].removeprefix("LOADED:")
        return proc, [name for name in loaded.split(",") if name]

    return run


LIGHT_COMMANDS = [
    ("--version",),
    ("runs",),
    ("report",),
    ("compare", "latest", "latest"),
    ("history", "quick-demo"),
]


@pytest.mark.parametrize("args", LIGHT_COMMANDS, ids=lambda a: " ".join(a))
def test_on_an_empty_store_no_driver_no_ui(pgwx: Pgwx, args: tuple[str, ...]) -> None:
    proc, loaded = pgwx(*args)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert loaded == [], f"pgwx {' '.join(args)} loaded {loaded}"


@pytest.mark.parametrize("args", LIGHT_COMMANDS[1:], ids=lambda a: " ".join(a))
def test_on_a_stored_run_no_driver_no_ui(pgwx: Pgwx, args: tuple[str, ...]) -> None:
    imported, _ = pgwx("import", str(recordings_dir() / "quick-demo.pgwx"))
    assert imported.returncode == 0, imported.stderr
    proc, loaded = pgwx(*args)
    assert proc.returncode in (0, 4), proc.stderr  # 4: finished with comparisons undecided
    assert proc.stdout.strip(), "the command printed nothing"
    assert loaded == [], f"pgwx {' '.join(args)} loaded {loaded}"


def test_the_probe_sees_the_engine_load_the_driver(pgwx: Pgwx) -> None:
    """The check can fail: a command that needs the server does load the driver."""
    _, loaded = pgwx("restore", "--dsn", "postgresql:///nowhere?host=/nonexistent")
    assert "asyncpg" in loaded


def test_analysis_loads_neither() -> None:
    code = (
        "import sys, explorer.analysis, explorer.analysis.report, explorer.analysis.servers\n"
        "import explorer.analysis.history, explorer.analysis.crossrun\n"
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
