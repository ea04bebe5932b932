"""The bulk-write workload on real servers: COPY then UPDATE, per table kind and WAL level."""

from __future__ import annotations

from pathlib import Path

from explorer.lab.profiles.catalog import load_profile
from explorer.lab.workloads.bulk_write import BulkWriteParams, BulkWriteWorkload
from explorer.models import Knobs, Profile, TableKind, TrialResult, Variant
from explorer.server.capabilities import probe
from explorer.server.connect import Target
from tests.support.runs import RunProfile, small_profile

ROWS = 20_000


def bulk_profile(variants: list[Variant], rows: int = ROWS) -> Profile:
    return small_profile("bulk-write", variants, rows=rows, name="t-bulk")


def by_phase(trial: TrialResult) -> dict[str, object]:
    assert trial.status == "ok", trial.reason
    assert [p.name for p in trial.phases] == ["copy", "update"]
    return {p.name: p for p in trial.phases}


async def test_copy_and_update_on_each_table_kind(any_pg: Target, run_profile: RunProfile) -> None:
    variants = [Variant(name=k.value, knobs=Knobs(table_kind=k)) for k in TableKind]
    record, _ = await run_profile(any_pg, bulk_profile(variants))
    assert record.status == "finished"
    wal = {}
    for trial in record.trials:
        phases = by_phase(trial)
        for p in phases.values():
            assert p.rows == ROWS and p.seconds > 0  # type: ignore[attr-defined]
        wal[trial.variant] = phases["copy"].detail["wal_bytes"]  # type: ignore[attr-defined]
    # a logged COPY of 20,000 rows writes the rows (and the index) to WAL; the others do not
    assert wal["logged"] > 1_000_000
    assert wal["unlogged"] < wal["logged"] / 20
    assert wal["temporary"] < wal["logged"] / 20


async def test_minimal_skips_wal_only_when_loaded_in_the_creating_txn(
    any_pg: Target, run_profile: RunProfile
) -> None:
    variants = [
        Variant(name="minimal", knobs=Knobs(wal_level="minimal")),
        Variant(name="minimal-same-txn", knobs=Knobs(wal_level="minimal", load_in_create_txn=True)),
    ]
    # Large enough that heap and index both pass wal_skip_threshold (2MB): a smaller file
    # created in the transaction is WAL-logged whole at COMMIT instead of fsynced.
    rows = 150_000
    record, _ = await run_profile(any_pg, bulk_profile(variants, rows))
    plain, same = (by_phase(t) for t in record.trials)
    for trial in record.trials:
        assert trial.settings["wal_level"] == "minimal"
    assert same["copy"].detail["txn"] == "TRUNCATE + COPY"  # type: ignore[attr-defined]
    plain_wal = plain["copy"].detail["wal_bytes"]  # type: ignore[attr-defined]
    same_wal = same["copy"].detail["wal_bytes"]  # type: ignore[attr-defined]
    assert plain_wal > 10_000_000
    assert same_wal < plain_wal / 50
    # the UPDATE runs in its own transaction afterwards: logged again in both
    assert same["update"].detail["wal_bytes"] > 10_000_000  # type: ignore[attr-defined]


async def test_prepare_writes_pgbench_shaped_copy_input(pg18: Target, tmp_path: Path) -> None:
    workload = BulkWriteWorkload(BulkWriteParams(rows=250_000))
    conn = await pg18.connect("test")
    try:
        caps = await probe(conn, owned=True)
    finally:
        await conn.close()
    await workload.prepare(pg18, caps, tmp_path)
    assert workload.source is not None
    lines = workload.source.read_text().splitlines()
    assert len(lines) == 250_000
    assert lines[0].split("\t") == ["1", "1", "0", ""]
    assert lines[-1].split("\t") == ["250000", "3", "0", ""]


def test_durability_profile_names_every_variant_and_risk() -> None:
    profile = load_profile("durability")
    assert [v.name for v in profile.variants] == [
        "defaults",
        "sync-commit-off",
        "fsync-off",
        "fpw-off",
        "fsync-fpw-off",
        "unlogged",
        "minimal",
        "minimal-same-txn",
    ]
    same = profile.variants[-1].knobs
    assert same.wal_level == "minimal" and same.load_in_create_txn
    text = profile.description.lower()
    for risk in ("lose the last commits", "corrupt", "emptied", "replication"):
        assert risk in text
