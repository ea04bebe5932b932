"""Mechanism summaries, unknown totals and the environment, without a server.

Runs come from the recorded stream (tests/fixtures/durability.json); expected numbers are
computed here from the raw JSON, not through the code under test.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from explorer.analysis import conditions
from explorer.analysis.mechanism import fold_late, summarize_total
from explorer.analysis.report import summarize, to_csv, to_json, to_markdown
from explorer.lab.measure import environment as machine
from explorer.models import (
    CpuLoad,
    Environment,
    PhaseMechanism,
    PhaseResult,
    RunRecord,
    WriterIo,
)
from explorer.server.connect import Target
from tests.support.recorded import record


def md_row(md: str, variant: str, phase: str) -> list[str]:
    line = next(ln for ln in md.splitlines() if ln.startswith(f"| {variant} | {phase} |"))
    return [c.strip() for c in line.strip("|").split("|")]


def md_header(md: str) -> list[str]:
    line = next(ln for ln in md.splitlines() if ln.startswith("| variant |"))
    return [c.strip() for c in line.strip("|").split("|")]


def with_unknown_update_io(rec: RunRecord, variant: str) -> RunRecord:
    """The run as if one trial's UPDATE had been measured without pg_stat_io."""
    trial = next(t for t in rec.trials if t.variant == variant)
    update = next(p for p in trial.phases if p.name == "update")
    assert update.mechanism is not None
    update.mechanism.writers = None
    return rec


def test_a_total_with_an_unknown_part_is_unknown_in_md_csv_json() -> None:
    rec = with_unknown_update_io(record(), "unlogged")
    md = md_header(to_markdown(rec)), to_markdown(rec)
    header, text = md
    total = dict(zip(header, md_row(text, "unlogged", "total"), strict=True))
    copy = dict(zip(header, md_row(text, "unlogged", "copy"), strict=True))
    assert total["ext pages"] == "?" and total["written"] == "?" and total["fsyncs"] == "?"
    # the COPY was measured, and the WAL of the total still is
    assert copy["ext pages"] != "?" and total["WAL"] != "?"
    other = dict(zip(header, md_row(text, "defaults", "total"), strict=True))
    assert other["ext pages"] != "?"

    rows = list(csv.DictReader(io.StringIO(to_csv(rec))))
    by = {(r["variant"], r["phase"]): r for r in rows}
    assert by[("unlogged", "total")]["extended"] == "?"
    assert by[("unlogged", "total")]["extended_workload"] == "?"
    assert by[("unlogged", "copy")]["extended"] not in ("?", "")

    data = json.loads(to_json(rec))
    jby = {(r["variant"], r["phase"]): r for r in data["rows"]}
    assert jby[("unlogged", "total")]["extended"] is None
    assert isinstance(jby[("unlogged", "copy")]["extended"], int | float)
    assert isinstance(jby[("unlogged", "total")]["wal_bytes"], int | float)


def test_totals_add_the_phases_when_all_are_known() -> None:
    rec = record()
    raw_trials = [t for t in rec.trials if t.variant == "defaults"]
    expected = sorted(
        sum(
            w.extended
            for p in t.phases
            for w in (p.mechanism.writers or {}).values()  # type: ignore[union-attr]
        )
        for t in raw_trials
    )
    rows = {(r.variant, r.phase): r for r in summarize(rec)}
    total = rows[("defaults", "total")].mechanism
    assert total is not None
    assert total.values["extended"] == pytest.approx(sum(expected) / len(expected))


def mech(extended: int, fpi: int, ckpt_written: int = 0) -> PhaseMechanism:
    return PhaseMechanism(
        wal_bytes=100,
        wal_fpi=fpi,
        wal_records=10,
        writers={
            "workload": WriterIo(extended=extended),
            "checkpointer": WriterIo(written=ckpt_written),
            "bgwriter": WriterIo(),
            "other": WriterIo(),
        },
        checkpoints=0,
        waits={"CPU": 3, "IO:DataFileExtend": 1},
        wait_samples=4,
    )


def test_fold_puts_late_counters_on_one_row_and_counts_them_once() -> None:
    load, commit = mech(extended=0, fpi=1), mech(extended=900, fpi=5, ckpt_written=7)
    fold_late(load, commit, "load")
    assert load.writers is not None and load.writers["workload"].extended == 900
    assert load.wal_fpi == 6 and commit.wal_fpi is None and commit.late_in == "load"
    # the timely writers stay where they happened
    assert commit.writers is not None and commit.writers["checkpointer"].written == 7
    phases = [
        PhaseResult(name="load", seconds=1, rows=10, mechanism=load),
        PhaseResult(name="commit", seconds=1, mechanism=commit),
    ]
    total = summarize_total([phases])
    assert total.values["extended"] == 900 and total.values["wal_fpi"] == 6
    assert total.values["written"] == 7 and total.values["wal_bytes"] == 200
    assert total.wait_samples == 8 and total.waits == {"CPU": 6, "IO:DataFileExtend": 2}
    # a phase stored without a mechanism makes the trial's totals unknown (WAL aside)
    phases.append(PhaseResult(name="after", seconds=1, detail={"wal_bytes": 5}))
    total = summarize_total([phases])
    assert total.values["extended"] is None and total.values["wal_bytes"] == 205


def env(**cpu: float) -> Environment:
    return Environment(
        pgwx_version="1",
        server_version="18.1",
        cpu_count=2,
        same_machine=True,
        cpu=CpuLoad.model_validate(
            {"seconds": 10, "busy": 0.5, "steal": 0.0, "iowait": 0.0, **cpu}
        ),
    )


def test_warnings_only_when_steal_or_load_matter() -> None:
    assert conditions.warnings(env(steal_max=0.02, loadavg_max=2.0)) == []
    (steal,) = conditions.warnings(env(steal_max=0.15, loadavg_max=1.0))
    assert "steal" in steal
    (load,) = conditions.warnings(env(steal_max=0.0, loadavg_max=3.5))
    assert "load average reached 3.5 on 2 CPU" in load
    quiet = Environment(pgwx_version="1", server_version="18.1", same_machine=False)
    assert conditions.warnings(quiet) == []
    assert "not measured" in " ".join(conditions.describe(quiet))


def test_machine_load_from_proc_deltas(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    proc = tmp_path / "proc"
    proc.mkdir()
    monkeypatch.setattr(machine, "PROC", proc)

    def write(user: int, idle: int, steal: int, load: float) -> None:
        (proc / "stat").write_text(f"cpu  {user} 0 0 {idle} 0 0 0 {steal} 0 0\ncpu0 1 2 3\n")
        (proc / "loadavg").write_text(f"{load} 0.5 0.5 1/100 42\n")

    write(100, 100, 0, 0.5)
    load = machine.MachineLoad()
    write(160, 120, 20, 4.0)  # 100 ticks: 60 busy, 20 idle, 20 stolen
    load.tick()
    write(200, 200, 20, 1.0)  # 120 more ticks: 40 busy, 80 idle, none stolen
    cpu = load.finish()
    assert cpu is not None
    assert cpu.steal == pytest.approx(20 / 220) and cpu.busy == pytest.approx(100 / 220)
    assert cpu.steal_max == pytest.approx(0.2)
    assert cpu.loadavg_start == 0.5 and cpu.loadavg_max == 4.0 and cpu.loadavg_end == 1.0


@pytest.mark.parametrize(
    ("dsn", "here"),
    [
        ("host=/var/run/postgresql dbname=x", True),
        ("postgresql://u@localhost/db", True),
        ("host=127.0.0.1", True),
        ("host=db.example.com", False),
        ("host=localhost,db.example.com", False),
    ],
)
def test_same_machine(dsn: str, here: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PGHOST", raising=False)
    assert machine.same_machine(Target(dsn=dsn)) is here


def test_report_has_the_environment_block_and_its_warning() -> None:
    rec = record()
    rec.environment = env(steal=0.2, steal_max=0.3, loadavg_max=1.0)
    rec.environment.warnings = conditions.warnings(rec.environment)
    rec.environment.settings = {"shared_buffers": "128MB"}
    rec.environment.io_method = "worker"
    rec.environment.data_checksums = True
    md = to_markdown(rec)
    assert "**Warning:** CPU steal 20%" in md
    assert "PostgreSQL 18.1, data checksums on, io_method worker · 2 CPU(s)" in md
    assert "shared_buffers=128MB" in md
    assert json.loads(to_json(rec))["environment"]["cpu"]["steal"] == 0.2
    # stored and loaded again: the same
    again = RunRecord.model_validate_json(rec.model_dump_json())
    assert again.environment == rec.environment


async def test_selecting_a_results_row_shows_its_mechanism(tmp_path: Path) -> None:
    from explorer.tui.widgets.results_table import MechanismLine, ResultsTable
    from tests.support.app import replay_app, settle

    app = replay_app(tmp_path)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        table = app.screen.query_one(ResultsTable)
        line = app.screen.query_one(MechanismLine)
        table.focus()
        table.move_cursor(row=0)
        await pilot.pause()
        table.move_cursor(row=4)  # sync-commit-off · update
        await pilot.pause(0.2)
        text = str(line.render())
        row = table.row_at(4)
        assert row is not None and row.mechanism is not None
        assert text.startswith(f"{row.variant} · {row.phase}: WAL ")
        assert f"(n={row.mechanism.wait_samples})" in text
        assert "checkpoints " in text and "extended " in text
        await pilot.press("down")
        await pilot.pause(0.2)
        nxt = table.row_at(5)
        assert nxt is not None and str(line.render()).startswith(f"{nxt.variant} · {nxt.phase}:")


def test_progress_line_of_a_phase_carries_its_mechanism() -> None:
    from explorer.lab.view.stream import narrate
    from explorer.models import PhaseEnded

    m = mech(extended=5760, fpi=1)
    m.wal_bytes = 52_119_776
    line = narrate(
        PhaseEnded(
            variant="v", repeat=1, result=PhaseResult(name="copy", seconds=0.5, rows=3, mechanism=m)
        )
    )
    assert line is not None and line.endswith(" · WAL 49.7 MiB · ext 5,760 · CPU 75% (n=4)")
    m.writers = None
    line = narrate(
        PhaseEnded(variant="v", repeat=1, result=PhaseResult(name="c", seconds=1, mechanism=m))
    )
    assert line is not None and " · ext ? · " in line
