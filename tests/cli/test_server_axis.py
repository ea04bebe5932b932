"""`pgwx run --pg 15 --pg 18`: one run on an owned PostgreSQL 15 and the bundled 18, in turns.

Real child processes (`python -m explorer.cli`) on private clusters (PGWX_CLUSTER_HOME), store
and journal. One small run is made once for the module; the tests read what it printed and
stored: the trials alternate servers, each variant's phase on 18 is judged against 15, and
`pgwx report` and `pgwx replay` show both servers. A second server that cannot be had is one
sentence, and nothing runs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from explorer.lab.store.results import ResultStore
from explorer.models import RunRecord
from explorer.server.embedded import SUPERUSER
from tests.support.cli import FINISHED
from tests.support.faults import child_env
from tests.support.server import PG15_BIN

pytestmark = pytest.mark.pg15

ROUNDS = 5
"""Measured rounds per variant and server: the fewest that can give a verdict."""


def pgwx(base: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "explorer.cli", *args],
        env=child_env(base, PGWX_CLUSTER_HOME=str(base / "clusters")),
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=str(base),
    )


@dataclass
class TwoServerRun:
    base: Path
    done: subprocess.CompletedProcess[str]
    report: dict[str, Any]
    runs: list[RunRecord]


@pytest.fixture(scope="module")
def two_servers() -> Iterator[TwoServerRun]:
    """`pgwx run quick-demo --pg 15 --pg 18`, small, two variants, five rounds."""
    if not (PG15_BIN / "initdb").exists():
        if os.environ.get("CI"):
            pytest.fail("Debian's postgresql-15 is not installed; .ci/run must apt-get it.")
        pytest.skip("Debian's postgresql-15 is not installed (apt-get install -y postgresql-15)")
    base = Path(tempfile.mkdtemp(prefix="pgwx-ax-", dir="/tmp"))
    base.chmod(0o755)  # the servers' user must get through to their clusters
    try:
        done = pgwx(
            base,
            "run",
            "quick-demo",
            "--pg",
            "15",
            "--pg",
            "18",
            *("--variant", "logged", "--variant", "unlogged"),
            *("--scale", "0.02", "--repeats", str(ROUNDS), "--warmup", "0", "--settle", "0"),
            *("--no-sample", "--format", "json"),
        )
        assert done.returncode in FINISHED, done.stderr
        report = json.loads(done.stdout)
        store = ResultStore(base / "results.sqlite")
        try:
            runs = store.group(store.load(report["run"]))
        finally:
            store.close()
        yield TwoServerRun(base, done, report, runs)
    finally:
        for major in ("15", "18"):
            pgwx(base, "server", "stop", "--pg", major)
        shutil.rmtree(base, ignore_errors=True)


def test_the_stored_trials_alternate_servers(two_servers: TwoServerRun) -> None:
    on15, on18 = two_servers.runs
    assert on15.server.capabilities.major == 15 and on18.server.capabilities.major == 18
    assert on15.axis is not None and on18.axis is not None
    assert on15.axis.group == on18.axis.group == on15.id
    assert on15.axis.runs == on18.axis.runs == [on15.id, on18.id]
    trials = sorted(
        [(t.started_at, "15") for t in on15.trials] + [(t.started_at, "18") for t in on18.trials]
    )
    order = [server for _, server in trials]
    assert len(order) == 2 * 2 * ROUNDS
    assert order == ["15", "18"] * (2 * ROUNDS), order
    # within each server the variants alternate too (A B, B A …), as in any run
    assert all(t.status == "ok" for r in two_servers.runs for t in r.trials)


def test_each_variant_and_phase_gets_a_verdict_on_18_against_15(
    two_servers: TwoServerRun,
) -> None:
    section = two_servers.report["servers"]
    assert section["reference"] == "15"
    assert [r["label"] for r in section["runs"]] == ["15", "18"]
    versions = [r["server_version"] for r in section["runs"]]
    assert versions[0].startswith("15.") and versions[1].startswith("18.")
    assert str(PG15_BIN) in section["runs"][0]["server_programs"]
    cells = {(c["variant"], c["phase"]) for c in section["comparisons"]}
    phases = {row["phase"] for row in two_servers.report["rows"] if row["phase"] != "—"}
    assert cells == {(v, p) for v in ("logged", "unlogged") for p in phases}
    for c in section["comparisons"]:
        assert c["sentence"].startswith(f"{c['variant']} {c['phase']} on 18 vs 15: ")
        assert c["verdict"]["word"] in ("faster", "slower", "same", "undecided")
        assert len(c["seconds"]) == len(c["reference_seconds"]) == ROUNDS
    assert section["correction"]["comparisons"] == len(cells)
    # the progress said which server each line is about
    said = two_servers.done.stderr
    assert "servers take turns trial by trial: 15 = PostgreSQL 15." in said
    assert "[15] [1/" in said and "[18] [1/" in said


def test_report_of_either_run_shows_both_servers_and_their_versions(
    two_servers: TwoServerRun,
) -> None:
    on15, on18 = two_servers.runs
    shown = pgwx(two_servers.base, "report", on18.id)
    assert shown.returncode == 0, shown.stderr
    md = shown.stdout
    assert md.index("# On 15") < md.index("# On 18") < md.index("## Each variant on each server")
    assert "made with `postgres (PostgreSQL) 15." in md  # the environment names each build
    assert "| unlogged | insert | 15 |" in md and "| unlogged | insert | 18 |" in md
    assert f"- 18: run {on18.id}" in md and f"- 15: run {on15.id}" in md
    again = pgwx(two_servers.base, "report", on15.id, "--format", "json")
    assert json.loads(again.stdout)["servers"] == two_servers.report["servers"]


def test_replay_of_a_two_server_run_shows_the_servers(two_servers: TwoServerRun) -> None:
    _, on18 = two_servers.runs
    played = pgwx(two_servers.base, "replay", on18.id, "--headless")
    assert played.returncode == 0, played.stderr
    assert "## Each variant on each server, against 15" in played.stdout
    assert "# On 18" in played.stdout


def test_a_second_server_that_cannot_start_is_one_sentence_and_nothing_runs(
    two_servers: TwoServerRun,
) -> None:
    base = two_servers.base
    before = len(ResultStore(base / "results.sqlite").list_runs())
    done = pgwx(base, "run", "quick-demo", "--pg", "15", "--pg", "99", "--scale", "0.02")
    assert done.returncode == 2
    lines = [line for line in done.stderr.splitlines() if line.startswith("pgwx:")]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("pgwx: --pg 99 cannot be used, so nothing ran on any server: ")
    assert "No PostgreSQL 99 found" in lines[0] and "Traceback" not in done.stderr
    assert len(ResultStore(base / "results.sqlite").list_runs()) == before
    # the 15 it had started for the run is stopped again, not left behind
    status = pgwx(base, "server", "status", "--pg", "15")
    assert "stopped" in status.stdout, status.stdout


def test_runs_lists_each_servers_run_as_part_of_the_group(two_servers: TwoServerRun) -> None:
    listed = pgwx(two_servers.base, "runs")
    assert listed.returncode == 0, listed.stderr
    on15, on18 = two_servers.runs
    line15 = next(line for line in listed.stdout.splitlines() if line.startswith(on15.id))
    line18 = next(line for line in listed.stdout.splitlines() if line.startswith(on18.id))
    assert line15.endswith("· 15 of 15, 18") and line18.endswith("· 18 of 15, 18")


def test_with_auto_repeats_the_servers_run_the_same_rounds_in_turns(
    two_servers: TwoServerRun,
) -> None:
    base = two_servers.base
    done = pgwx(
        base,
        "run",
        "quick-demo",
        *("--pg", "15", "--pg", "18", "--variant", "logged", "--variant", "temporary"),
        *("--scale", "0.02", "--warmup", "0", "--settle", "0", "--no-sample"),
        *("--format", "json"),
    )
    assert done.returncode in FINISHED, done.stderr
    report = json.loads(done.stdout)
    store = ResultStore(base / "results.sqlite")
    try:
        on15, on18 = store.group(store.load(report["run"]))
    finally:
        store.close()
    counts = [
        {v: sum(t.variant == v for t in r.trials) for v in ("logged", "temporary")}
        for r in (on15, on18)
    ]
    assert counts[0] == counts[1], counts  # the same rounds of the same variants
    assert counts[0]["logged"] >= 5  # auto: at least min_repeats
    trials = sorted(
        [(t.started_at, "15") for t in on15.trials] + [(t.started_at, "18") for t in on18.trials]
    )
    order = [server for _, server in trials]
    assert order == ["15", "18"] * (len(order) // 2), order
    assert report["servers"]["comparisons"], report["servers"]


def test_several_dsns_are_servers_of_one_run_and_one_named_twice_is_refused(
    two_servers: TwoServerRun,
) -> None:
    base = two_servers.base
    dsns = []
    for major in ("15", "18"):
        started = pgwx(base, "server", "start", "--pg", major)
        assert started.returncode == 0, started.stderr
        sock = base / "clusters" / f"pg{major}" / "sock"
        dsns.append(f"host={sock} user={SUPERUSER} dbname=postgres")
    quick = (
        "--scale",
        "0.02",
        "--repeats",
        "1",
        "--allow-undecidable",
        "--allow-undecidable",
        "--warmup",
        "0",
        "--settle",
        "0",
        "--no-sample",
    )
    done = pgwx(base, "run", "quick-demo", "--dsn", dsns[0], "--dsn", dsns[1], *quick)
    assert done.returncode in FINISHED, done.stderr
    assert "## Each variant on each server, against 15" in done.stdout
    assert "- 18: run " in done.stdout and dsns[1] in done.stdout
    same = dsns[0].replace("dbname=postgres", "dbname=template1")
    twice = pgwx(base, "run", "quick-demo", "--dsn", dsns[0], "--dsn", same, *quick)
    assert twice.returncode == 2
    assert twice.stderr.strip().endswith(
        "is the same server as " + dsns[0] + "; name each server once."
    )


def test_each_servers_card_prints_its_tables_figures(two_servers: TwoServerRun) -> None:
    """Issue 33: the card's WAL is the table's total row on every server of the run, and the
    legend says the run's tables share one 5 %."""
    from explorer.analysis.card import card_lines
    from explorer.analysis.judge import TOTAL, judge
    from explorer.analysis.mechanism import fields
    from explorer.analysis.report import summarize, verdict_legend
    from explorer.analysis.units import human_bytes

    for run in two_servers.runs:
        total = {r.variant: r for r in summarize(run) if r.phase == TOTAL}
        lines = card_lines(run)
        assert lines
        for line in lines:
            if line.variant not in total:  # a variant this run did not pick (--variant)
                assert line.total is None and not line.mechanism
                continue
            wal = fields(total[line.variant].mechanism)["wal_bytes"]
            if line.baseline:
                assert line.mechanism == f"WAL {human_bytes(wal)}", run.axis
            elif line.mechanism.startswith("WAL"):
                assert line.mechanism.endswith(f"→ {human_bytes(wal)}"), line.mechanism
        judged = judge(run)
        assert judged.tables == 3
        assert "This run prints 3 such tables" in verdict_legend(judged)
