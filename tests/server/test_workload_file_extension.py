"""The file-extension workload on real servers: the pre-grown file really does not grow."""

from __future__ import annotations

from explorer.lab.profiles.catalog import load_profile
from explorer.lab.workloads.file_extension import parse_pgbench, pgbench_conninfo
from explorer.models import PhaseResult, RunRecord
from explorer.server.connect import Target
from tests.support.runs import RunProfile

SCALE = 0.05
"""400,000 → 20,000 COPY rows; 10,000 → 500 pgbench transactions per client."""


def phases(record: RunRecord, variant: str) -> dict[str, PhaseResult]:
    trial = next(t for t in record.trials if t.variant == variant)
    assert trial.status == "ok", trial.reason
    return {p.name: p for p in trial.phases}


def test_pgbench_conninfo_adds_application_name() -> None:
    app = "pgwx-work-pgbench"
    assert pgbench_conninfo(None, app) == "application_name=pgwx-work-pgbench"
    assert (
        pgbench_conninfo("postgresql://u@/db?host=/s", app)
        == "postgresql://u@/db?host=/s&application_name=pgwx-work-pgbench"
    )
    assert pgbench_conninfo("postgresql://u@h/db", app).endswith("/db?application_name=" + app)
    assert pgbench_conninfo("host=/s dbname=db", app) == f"host=/s dbname=db application_name={app}"


def test_parse_pgbench_report() -> None:
    out = (
        "transaction type: ins-only.sql\nnumber of clients: 4\n"
        "number of transactions actually processed: 2000/2000\n"
        "number of failed transactions: 0 (0.000%)\nlatency average = 0.612 ms\n"
        "initial connection time = 3.1 ms\ntps = 6534.987654 (without initial connection time)\n"
    )
    assert parse_pgbench(out) == {"tps": 6535.0, "done": 2000, "latency_ms": 0.612}


async def test_pregrown_file_does_not_grow_and_extending_does(
    any_pg: Target, run_profile: RunProfile
) -> None:
    profile = load_profile("file-extension")
    record, _ = await run_profile(any_pg, profile, scale=SCALE, repeats=1)
    assert record.status == "finished"
    extending, pregrown = phases(record, "extending"), phases(record, "pre-grown")
    assert list(extending) == list(pregrown) == ["copy", "pgbench-1c", "pgbench-4c"]

    copy = extending["copy"]
    assert copy.rows == 20_000
    assert copy.detail["pages_before"] == 0 and copy.detail["pages_after"] > 100
    grown = pregrown["copy"]
    assert grown.rows == 20_000
    # the COPY refills the pages it pre-grew from the same file: not one page is added
    assert grown.detail["pages_before"] == grown.detail["pages_after"] >= copy.detail["pages_after"]
    # and pg_stat_io agrees, read around the phase itself (PG 18 counts extend bytes);
    # PG 15 has no pg_stat_io, so no count rather than a made-up 0
    if record.server.capabilities.major >= 16:
        assert copy.detail["extended_pages"] >= copy.detail["pages_after"] - 1
        assert grown.detail["extended_pages"] == 0
    else:
        assert "extended_pages" not in copy.detail and "extended_pages" not in grown.detail

    for clients in (1, 4):
        ext, pre = extending[f"pgbench-{clients}c"], pregrown[f"pgbench-{clients}c"]
        assert ext.rows == pre.rows == clients * 500
        assert ext.detail["tps"] > 0 and pre.detail["tps"] > 0
        assert ext.detail["pages_before"] == 0 and ext.detail["pages_after"] > 0
        before = pre.detail["pages_before"]
        assert before > 0
        # concurrent inserts may leave a page a tuple short; never more than a page or two
        assert before <= pre.detail["pages_after"] <= before + 2


async def test_pgbench_reaches_a_server_given_by_dsn(pg18: Target, run_profile: RunProfile) -> None:
    kw = pg18.connect_kwargs()
    dsn = f"postgresql://{kw['user']}@/{kw['database']}?host={kw['host']}&port={kw['port']}"
    target = Target(dsn=dsn)  # not owned: pgbench must find the server from the DSN alone
    profile = load_profile("file-extension").model_copy(
        update={"params": {"rows": 1000, "clients": [2], "transactions": 200}}
    )
    record, _ = await run_profile(target, profile, repeats=1, variants=["pre-grown"])
    got = phases(record, "pre-grown")
    assert got["pgbench-2c"].rows == 400 and got["pgbench-2c"].detail["tps"] > 0


async def test_temporary_table_is_refused(pg18: Target, run_profile: RunProfile) -> None:
    from explorer.models import Knobs, TableKind, Variant

    profile = load_profile("file-extension").model_copy(
        update={
            "params": {"rows": 100, "clients": [], "transactions": 1},
            "variants": [
                Variant(name="temp", knobs=Knobs(table_kind=TableKind.TEMPORARY)),
                Variant(name="unlogged", knobs=Knobs(table_kind=TableKind.UNLOGGED)),
            ],
            "baseline": None,
        }
    )
    record, _ = await run_profile(pg18, profile, repeats=1)
    by = {t.variant: t for t in record.trials}
    assert by["temp"].status == "skipped" and "other sessions" in (by["temp"].reason or "")
    assert [p.name for p in by["unlogged"].phases] == ["copy"]
