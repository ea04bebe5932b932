"""The promise every bad input to the `pgwx` command must keep, and the password it must
never show (the `cli` fixture in tests/conftest.py runs the command)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from explorer.lab.store.results import ResultStore
from explorer.server.connect import LIBPQ_ENV
from tests.support.paths import ROOT

SECRET = "hunter2-s3cret"
"""A password that must never show up in any output."""


def assert_one_sentence(
    proc: subprocess.CompletedProcess[str], tmp_path: Path, *words: str
) -> None:
    """The promise every bad input must keep."""
    err = proc.stderr.strip()
    assert proc.returncode != 0, proc
    assert "Traceback" not in err and "Traceback" not in proc.stdout
    assert SECRET not in err and SECRET not in proc.stdout
    assert len(err.splitlines()) == 1, err
    assert err.startswith("pgwx: "), err
    for word in words:
        assert word in err, err
    assert not list((tmp_path / "tmp").glob("pgwx-run-*")), "scratch directory left behind"
    # Nothing stored: no run, and no undo journal.
    results = tmp_path / "results.sqlite"
    if results.exists():
        store = ResultStore(results)
        try:
            assert store.list_runs() == []
        finally:
            store.close()
    journals = list((tmp_path / "state").glob("undo-*")) if (tmp_path / "state").exists() else []
    assert not journals


FINISHED = (0, 4)
"""`pgwx run`'s exit status for a run that finished: every comparison decided (0), or some
still undecided (4) — as a test's small run usually is."""


def private_env(tmp_path: Path) -> dict[str, str]:
    """The environment of a `pgwx` child: this checkout, no libpq variables, and a private
    store, state and data directory under `tmp_path` (never the user's)."""
    env = {k: v for k, v in os.environ.items() if k not in LIBPQ_ENV}
    env.update(
        PYTHONPATH=str(ROOT),
        PGWX_RESULTS=str(tmp_path / "results.sqlite"),
        PGWX_STATE_DIR=str(tmp_path / "state"),
        XDG_DATA_HOME=str(tmp_path / "data"),
        XDG_STATE_HOME=str(tmp_path / "xstate"),
    )
    return env


def private_store(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """For `pgwx` run in this process: a private store and state directory, no libpq
    variables (a test's `cli.main` never reaches the user's files or server)."""
    monkeypatch.setenv("PGWX_RESULTS", str(tmp_path / "r.sqlite"))
    monkeypatch.setenv("PGWX_STATE_DIR", str(tmp_path / "state"))
    for var in LIBPQ_ENV:
        monkeypatch.delenv(var, raising=False)
