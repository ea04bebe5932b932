"""The mechanism behind each phase, and the run's environment, on real servers.

Each run has the sampler on (every 0.1 s). What is asserted is what the server must have done
(an UNLOGGED COPY writes next to no WAL, a pre-grown file is not extended, pg_restore's own
backend extends the child), not how fast it did it.
"""

from __future__ import annotations

import pytest

from explorer.analysis.report import summarize, to_csv, to_json, to_markdown
from explorer.lab.profiles.catalog import load_profile
from explorer.models import (
    FkTiming,
    Knobs,
    PhaseMechanism,
    PhaseResult,
    RunRecord,
    TableKind,
    Variant,
)
from explorer.server.connect import Target
from tests.support.runs import RunProfile, small_profile


def phases(record: RunRecord, variant: str) -> dict[str, PhaseResult]:
    trial = next(t for t in record.trials if t.variant == variant)
    assert trial.status == "ok", trial.reason
    return {p.name: p for p in trial.phases}


def mech(phase: PhaseResult) -> PhaseMechanism:
    assert phase.mechanism is not None, f"{phase.name} has no mechanism"
    return phase.mechanism


def assert_waits_are_shares(m: PhaseMechanism) -> None:
    assert m.waits is not None, "the sampler polled the waits"
    assert m.wait_samples == sum(m.waits.values())
    if m.wait_samples:
        assert sum(s for _, s in m.wait_shares()) == pytest.approx(1.0)


BULK = [
    Variant(name="logged"),
    Variant(name="unlogged", knobs=Knobs(table_kind=TableKind.UNLOGGED)),
]


async def test_unlogged_copy_writes_no_wal_per_row(pg18: Target, run_profile: RunProfile) -> None:
    profile = small_profile("bulk-write", BULK, rows=200_000)
    record, _ = await run_profile(pg18, profile, sampler=True)
    logged, unlogged = phases(record, "logged"), phases(record, "unlogged")
    for phase in ("copy", "update"):
        lm, um = mech(logged[phase]), mech(unlogged[phase])
        # a heap tuple of ~100 bytes is at least as much WAL when logged, ~nothing when not
        assert (lm.wal_per_row(logged[phase].rows) or 0) > 80
        assert (um.wal_per_row(unlogged[phase].rows) or 0) < 1
        for m in (lm, um):
            assert m.writers is not None and set(m.writers) >= {"workload", "checkpointer"}
            assert m.checkpoints is not None and m.wal_fpi is not None
            assert m.samples >= 1 and not m.unknown
            assert_waits_are_shares(m)
    # the COPY extends the new file page by page, and the workload's backend does it
    copy = mech(logged["copy"])
    assert copy.writers is not None and copy.writers["workload"].extended > 1000
    # the table's rows carry the same numbers, not `?`
    rows = {(r.variant, r.phase): r for r in summarize(record)}
    total = rows[("logged", "total")].mechanism
    assert total is not None and total.values["extended"] is not None
    assert total.values["wal_bytes"] == sum(mech(p).wal_bytes or 0 for p in logged.values())


async def test_pregrown_file_has_no_extends_even_from_pgbench(
    pg18: Target, run_profile: RunProfile
) -> None:
    profile = load_profile("file-extension").model_copy(
        update={"params": {"rows": 20_000, "clients": [2], "transactions": 1000}}
    )
    record, _ = await run_profile(pg18, profile, repeats=1, sampler=True)
    grown, growing = phases(record, "pre-grown"), phases(record, "extending")
    g, e = mech(grown["copy"]), mech(growing["copy"])
    assert g.writers is not None and e.writers is not None
    assert g.writers["workload"].extended == 0
    assert e.writers["workload"].extended >= grown["copy"].detail["pages_after"] - 1
    g, e = mech(grown["pgbench-2c"]), mech(growing["pgbench-2c"])
    assert g.writers is not None and e.writers is not None
    # pgbench's own sessions (pgwx-work-pgbench) did the extending: counted as workload.
    # Two clients may leave a pre-grown page a tuple short: a page or two, never the file.
    assert g.writers["workload"].extended <= 2
    assert e.writers["workload"].extended >= 10
    for m in (g, e):
        assert_waits_are_shares(m)


async def test_restore_extensions_are_counted_and_totals_agree(
    pg18: Target, run_profile: RunProfile
) -> None:
    variants = [
        Variant(name="none"),
        Variant(name="after-load", knobs=Knobs(fk=FkTiming.AFTER_LOAD)),
    ]
    profile = small_profile("restore", variants, rows=60_000)
    record, _ = await run_profile(pg18, profile, sampler=True)
    for variant in ("none", "after-load"):
        got = phases(record, variant)
        load, commit = mech(got["load"]), mech(got["commit"])
        # pg_restore's backend publishes its counters at its end: on the load's row
        assert load.writers is not None and load.writers["workload"].extended > 500
        assert commit.late_in == "load" and commit.writers is not None
        assert "workload" not in commit.writers and commit.wal_fpi is None
    rows = {(r.variant, r.phase): r for r in summarize(record)}
    ext = {}
    for variant in ("none", "after-load"):
        summary = rows[(variant, "total")].mechanism
        assert summary is not None
        ext[variant] = summary.values["extended"]
    # the same pg_restore loads both: the totals no longer differ by the restore's extends
    assert ext["none"] is not None and ext["after-load"] is not None
    assert ext["after-load"] >= ext["none"] * 0.9
    md = to_markdown(record)
    assert "work in load" in md


async def test_pg15_io_is_unknown_not_zero(pg15: Target, run_profile: RunProfile) -> None:
    profile = small_profile("bulk-write", BULK[:1], rows=50_000)
    record, _ = await run_profile(pg15, profile, sampler=True)
    got = phases(record, "logged")
    for phase in got.values():
        m = mech(phase)
        assert m.writers is None
        assert any("pg_stat_io" in u for u in m.unknown)
        # what PG 15 has still works
        assert m.wal_bytes is not None and m.wal_bytes > 0
        assert m.wal_fpi is not None and m.checkpoints is not None
        assert_waits_are_shares(m)
    rows = {(r.variant, r.phase): r for r in summarize(record)}
    total = rows[("logged", "total")].mechanism
    assert total is not None and total.values["extended"] is None
    assert total.values["wal_bytes"] is not None
    assert "Not measured in this run: pg_stat_io: not on PG 15" in to_markdown(record)
    line = next(ln for ln in to_markdown(record).splitlines() if "| total |" in ln)
    assert "| ? |" in line
    csv_total = next(ln for ln in to_csv(record).splitlines() if ",total," in ln)
    assert ",?," in csv_total
    assert '"extended": null' in to_json(record)


@pytest.mark.parametrize("server", ["pg18", "pg15"])
async def test_environment_is_recorded_and_reported(
    server: str, request: pytest.FixtureRequest, run_profile: RunProfile
) -> None:
    target: Target = request.getfixturevalue(server)
    profile = small_profile("bulk-write", BULK[:1], rows=1000)
    record, _ = await run_profile(target, profile)
    env = record.environment
    assert env is not None
    caps = record.server.capabilities
    assert env.server_version == caps.version
    assert isinstance(env.data_checksums, bool)
    assert (env.io_method is not None) is (caps.major >= 18)
    assert env.same_machine and env.cpu is not None
    assert 0 <= env.cpu.steal <= 1 and 0 <= env.cpu.busy <= 1
    assert env.cpu_count and env.settings["shared_buffers"]
    md = to_markdown(record)
    assert f"Environment: pgwx {env.pgwx_version}" in md
    assert f"PostgreSQL {caps.version}, data checksums" in md
    assert "Machine during the run" in md
    assert '"environment": {' in to_json(record)


async def test_sampler_splits_one_process_into_two_phase_windows(pg18: Target) -> None:
    from explorer.lab.measure.probe import PhaseProbe
    from explorer.lab.scope import work_prefix
    from tests.support.sampling import lab, sampling

    async with lab(pg18) as (conn, _), sampling(pg18, interval=0.1) as (sampler, _):
        side = await pg18.connect("probe")
        try:
            probe = PhaseProbe(sampler, side, work_prefix())
            await probe.begin("first")
            await conn.execute("SELECT pg_sleep(0.6)")
            probe.split("second")
            await conn.execute("SELECT count(*) FROM generate_series(1, 3000000)")
            await conn.execute("SELECT pg_stat_force_next_flush()")
            windows = await probe.end({conn.get_server_pid()})
        finally:
            await side.close()
    assert list(windows) == ["first", "second"]
    first, second = windows["first"], windows["second"]
    # the sleep is in the first window only; each window's shares add up to 1
    assert first.waits is not None and first.waits.get("Timeout:PgSleep", 0) >= 3
    assert second.waits is not None and "Timeout:PgSleep" not in second.waits
    for m in (first, second):
        assert m.samples >= 1 and not m.unknown and m.writers is not None
        assert_waits_are_shares(m)
