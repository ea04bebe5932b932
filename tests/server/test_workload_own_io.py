"""The workload's own I/O (issue 37, point 4): evictions among the mechanism columns, and on
PostgreSQL 18+ the work columns from the workload sessions' own per-backend statistics.

What is asserted is what the server must have done (a temp table ten times its local buffers
evicts them), never how fast.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from explorer.analysis.mechanism import detail_lines, fields
from explorer.analysis.report import summarize, to_markdown
from explorer.lab.measure.sampler import Sample, _Trial, phase_mechanism
from explorer.lab.measure.stats import Reading, counters_query
from explorer.models import Knobs, PhaseMechanism, RunRecord, TableKind, Variant, WriterIo
from explorer.server.capabilities import probe
from explorer.server.connect import Target
from tests.support.runs import RunProfile, small_profile


def mechanisms(record: RunRecord, variant: str) -> dict[str, PhaseMechanism]:
    trial = next(t for t in record.trials if t.variant == variant)
    assert trial.status == "ok", trial.reason
    out = {p.name: p.mechanism for p in trial.phases}
    assert all(m is not None for m in out.values()), "every phase has its mechanism"
    return {k: m for k, m in out.items() if m is not None}


SMALL_TEMP = Variant(name="temp", knobs=Knobs(table_kind=TableKind.TEMPORARY, temp_buffers="800kB"))


async def test_evictions_are_counted_by_writer_and_shown(
    pg18: Target, run_profile: RunProfile
) -> None:
    # ~20 MB of rows through 100 local buffers: the workload's own backend must evict
    profile = small_profile("bulk-write", [SMALL_TEMP], rows=200_000)
    record, _ = await run_profile(pg18, profile, sampler=True)
    copy = mechanisms(record, "temp")["copy"]
    assert copy.writers is not None
    assert (copy.writers["workload"].evicted or 0) > 1000
    assert copy.writer_sum("evicted") is not None
    rows = {(r.variant, r.phase): r for r in summarize(record)}
    row = rows[("temp", "copy")].mechanism
    assert row is not None and (row.values["evicted"] or 0) > 1000
    assert (fields(row)["evicted_workload"] or 0) > 1000  # type: ignore[operator]
    assert "evictions" in detail_lines(row)[0]
    md = to_markdown(record)
    assert "| evictions |" in md


async def test_evictions_are_unknown_not_zero_on_15(pg15: Target, run_profile: RunProfile) -> None:
    profile = small_profile("bulk-write", [SMALL_TEMP], rows=20_000)
    record, _ = await run_profile(pg15, profile, sampler=True)
    rows = {(r.variant, r.phase): r for r in summarize(record)}
    row = rows[("temp", "copy")].mechanism
    assert row is not None and row.values["evicted"] is None
    assert fields(row)["evicted"] == "?"
    assert "evictions ?" in detail_lines(row)[0]


class Noise:
    """An unrelated session writing heavily while a run goes on (connected before it starts,
    so no session comes or goes during the run's phases)."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.stop = asyncio.Event()
        self.statements = 0

    async def __aenter__(self) -> Noise:
        self.conn = await self.target.connect("test-noise")
        await self.conn.execute(
            "DROP TABLE IF EXISTS io_noise; CREATE TABLE io_noise (id int, pad text)"
        )
        self.task = asyncio.create_task(self._write())
        return self

    async def _write(self) -> None:
        while not self.stop.is_set():
            # publishes its pg_stat_io at once when it goes idle, as a busy client would
            await self.conn.execute(
                "INSERT INTO io_noise SELECT g, repeat('x', 400) FROM generate_series(1, 2000) g;"
                "SELECT pg_stat_force_next_flush()"
            )
            self.statements += 1

    async def __aexit__(self, *exc: object) -> None:
        self.stop.set()
        await self.task
        await self.conn.execute("DROP TABLE io_noise")
        await self.conn.close()


async def noisy_run(target: Target, run_profile: RunProfile, rows: int) -> RunRecord:
    profile = small_profile("bulk-write", [Variant(name="logged")], rows=rows)
    async with Noise(target) as noise:
        record, _ = await run_profile(target, profile, sampler=True)
    assert noise.statements > 3, "the noise wrote during the run"
    return record


async def test_on_18_the_work_columns_are_the_workload_sessions_own(
    pg18: Target, run_profile: RunProfile
) -> None:
    rows = 50_000
    quiet, _ = await run_profile(
        pg18, small_profile("bulk-write", [Variant(name="logged")], rows=rows), sampler=True
    )
    noisy = await noisy_run(pg18, run_profile, rows)
    for record in (quiet, noisy):
        for name, m in mechanisms(record, "logged").items():
            assert m.work_source == "sessions", (name, m.work_source)
            assert m.work_wal_bytes is not None and m.wal_bytes is not None
    alone = mechanisms(quiet, "logged")["copy"]
    crowded = mechanisms(noisy, "logged")["copy"]
    assert alone.work_wal_bytes is not None and crowded.work_wal_bytes is not None
    assert crowded.wal_bytes is not None
    # the workload's own WAL is the same with or without the neighbour (its rows, ~100 B+
    # each); the server's WAL in the same window carries the neighbour's too
    assert 80 * rows < alone.work_wal_bytes < 400 * rows
    assert abs(crowded.work_wal_bytes - alone.work_wal_bytes) < 0.2 * alone.work_wal_bytes
    whole = {(r.variant, r.phase): r.mechanism for r in summarize(noisy)}[("logged", "total")]
    assert whole is not None
    work, server = whole.values["work_wal_bytes"], whole.values["wal_bytes"]
    assert work is not None and server is not None and server > work + 1_000_000
    # the neighbour's relation I/O is under "other", not the workload's
    assert crowded.writers is not None and alone.writers is not None
    assert crowded.writers["workload"].extended == alone.writers["workload"].extended
    extended_other = sum(
        (m.writers or {}).get("other", WriterIo()).extended
        for m in mechanisms(noisy, "logged").values()
    )
    assert extended_other > 100
    md = to_markdown(noisy)
    assert "Work columns from: the workload sessions' own statistics" in md
    assert "(work " in md_cell_of(md, "logged", "total", "WAL")


@pytest.mark.parametrize("server", ["pg15", "pg17"])
async def test_before_18_the_work_columns_are_per_type_sums_and_say_so(
    server: str, request: pytest.FixtureRequest, run_profile: RunProfile
) -> None:
    target: Target = request.getfixturevalue(server)
    rows = 50_000
    noisy = await noisy_run(target, run_profile, rows)
    got = mechanisms(noisy, "logged")
    assert {m.work_source for m in got.values()} == {"types"}
    # no per-session statistics: the workload's own WAL is unknown, not 0
    assert all(m.work_wal_bytes is None and m.work_wal_fpi is None for m in got.values())
    md = to_markdown(noisy)
    assert "Work columns from: pg_stat_io summed per backend type" in md
    assert "(work " not in md_cell_of(md, "logged", "total", "WAL")
    whole = {(r.variant, r.phase): r.mechanism for r in summarize(noisy)}[("logged", "total")]
    assert whole is not None and whole.values["work_wal_bytes"] is None
    # the neighbour's WAL is in the only WAL figure there is
    assert (whole.values["wal_bytes"] or 0) > 400 * rows
    if server == "pg17":
        # and its relation I/O is counted as the workload's: nothing is told apart as other
        assert all(m.writers is not None for m in got.values())
        assert sum((m.writers or {})["other"].extended for m in got.values()) == 0
        assert sum((m.writers or {})["workload"].extended for m in got.values()) > 1000


async def test_a_session_that_ends_inside_a_phase_falls_back_to_per_type_sums(
    pg18: Target, run_profile: RunProfile
) -> None:
    # pg_restore's session starts and ends inside the load: its own counts vanish with it
    profile = small_profile("restore", [Variant(name="none")], rows=20_000)
    record, _ = await run_profile(pg18, profile, sampler=True)
    load = mechanisms(record, "none")["load"]
    assert load.work_source == "types: a session came or went"
    assert load.work_wal_bytes is None
    assert load.writers is not None and load.writers["workload"].extended > 100
    assert "where a workload session ended or another connected" in to_markdown(record)


def md_cell_of(md: str, variant: str, phase: str, column: str) -> str:
    header = next(ln for ln in md.splitlines() if ln.startswith("| variant |"))
    line = next(ln for ln in md.splitlines() if ln.startswith(f"| {variant} | {phase} |"))
    names = [c.strip() for c in header.strip("|").split("|")]
    cells = [c.strip() for c in line.strip("|").split("|")]
    return dict(zip(names, cells, strict=True))[column]


async def test_19s_fpi_bytes_reach_the_report_and_18_shows_them_unknown(
    pg18: Target, run_profile: RunProfile
) -> None:
    """pg_stat_wal of PostgreSQL 19's shape (wal_fpi_bytes), shadowed by a session-local view
    and read through the real counters query, summed by the sampler's phase window and put on
    a stored run's rows; a real run on 18 has them unknown."""
    conn = await pg18.connect("test")
    try:
        caps = await probe(conn, owned=True)
        nineteen = caps.model_copy(update={"version_num": 190000, "version": "19beta1"})
        sql = counters_query(nineteen).sql
        readings = []
        for fpi, fpi_bytes in ((3, 24_576), (13, 106_496)):
            await conn.execute(
                "CREATE OR REPLACE TEMP VIEW pg_stat_wal AS SELECT 10::bigint AS wal_records, "
                f"{fpi}::bigint AS wal_fpi, 900::numeric AS wal_bytes, "
                f"0::bigint AS wal_buffers_full, {fpi_bytes}::numeric AS wal_fpi_bytes"
            )
            row = await conn.fetchrow(sql, "pgwx-work", [])
            assert row is not None
            readings.append(
                Reading({k: json.loads(v) if isinstance(v, str) else v for k, v in row.items()})
            )
    finally:
        await conn.close()
    fields_ = readings[1].since(readings[0])
    window = _Trial(started=0.0)
    window.add(Sample(t=1.0, interval=1.0, **fields_))
    m = phase_mechanism(window, has_io=True, complete=True, unsupported=[])
    assert (m.wal_fpi, m.wal_fpi_bytes) == (10, 81_920)

    real, _ = await run_profile(
        pg18, small_profile("bulk-write", [Variant(name="logged")], rows=5_000), sampler=True
    )
    assert all(p.wal_fpi_bytes is None for p in mechanisms(real, "logged").values())
    fpi_18 = md_cell_of(to_markdown(real), "logged", "copy", "FPI")
    assert "B" not in fpi_18  # a count, no bytes
    row18 = {(r.variant, r.phase): r.mechanism for r in summarize(real)}[("logged", "copy")]
    assert row18 is not None and fields(row18)["wal_fpi_bytes"] == "?"

    # the same run as if its copy had been measured on 19: the bytes are shown beside the count
    trial = next(t for t in real.trials if t.variant == "logged")
    copy = next(p for p in trial.phases if p.name == "copy")
    assert copy.mechanism is not None
    copy.mechanism.wal_fpi, copy.mechanism.wal_fpi_bytes = m.wal_fpi, m.wal_fpi_bytes
    assert md_cell_of(to_markdown(real), "logged", "copy", "FPI").startswith("10 · 80")
    row19 = {(r.variant, r.phase): r.mechanism for r in summarize(real)}[("logged", "copy")]
    assert row19 is not None and fields(row19)["wal_fpi_bytes"] == 81_920
