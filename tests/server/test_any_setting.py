"""Any server setting as a variant knob, on real servers (issue 37, point 1).

A variant's `settings = { … }` is checked against the server's own pg_settings before anything
runs, applied where its context lets it (the workload's sessions, a reload, a restart of a
server pgwx owns), recorded with every trial and shown in the report, and put back: the
`run_profile` fixture compares every pg_settings row and postgresql.auto.conf before and after.
"""

from __future__ import annotations

import pytest

from explorer.analysis.judge import judge
from explorer.analysis.report import summarize, to_markdown
from explorer.lab.profiles.anysetting import SettingRefused
from explorer.lab.run.runner import Runner, RunOptions
from explorer.lab.store.results import ResultStore
from explorer.models import Variant
from explorer.server.connect import Target
from tests.support.runs import RunProfile, small_profile, update_mech


async def compression_offered(target: Target) -> str:
    """lz4 where this server's build has it (Debian's 15, celerp's 17), else pglz."""
    conn = await target.connect("test")
    try:
        vals = await conn.fetchval(
            "SELECT enumvals FROM pg_settings WHERE name = 'wal_compression'"
        )
    finally:
        await conn.close()
    return "lz4" if "lz4" in vals else "pglz"


async def test_wal_compression_shrinks_the_full_page_images_after_a_checkpoint(
    any_pg: Target, run_profile: RunProfile
) -> None:
    method = await compression_offered(any_pg)
    profile = small_profile(
        "bulk-write",
        [
            Variant(name="off", settings={"wal_compression": "off"}),
            Variant(name=method, settings={"wal_compression": method}),
        ],
        rows=100_000,
        repeats=3,
    )
    record, _ = await run_profile(any_pg, profile, sampler=True)
    for trial in record.trials:
        # read back from the workload's own session, recorded with every trial
        assert trial.settings["wal_compression"] == trial.variant
    off, on = update_mech(record, "off"), update_mech(record, method)
    # the UPDATE after a CHECKPOINT logs one full-page image per page touched first: as
    # many with compression as without, but each image compressed
    for a, b in zip(off, on, strict=True):
        assert a.wal_fpi and b.wal_fpi and a.wal_fpi > 1000
        assert b.wal_fpi == pytest.approx(a.wal_fpi, rel=0.2)
        assert a.wal_bytes and b.wal_bytes and b.wal_bytes < 0.85 * a.wal_bytes
    judged = judge(record)
    rows = {(r.variant, r.phase): r for r in summarize(record, judged)}
    assert rows[(method, "update")].verdict is not None  # a verdict, whichever way it goes
    report = to_markdown(record)
    assert f"wal_compression={method}" in report and "wal_compression=off" in report


async def test_each_context_goes_where_it_may_and_comes_back(
    pg18: Target, run_profile: RunProfile
) -> None:
    """user (work_mem) and superuser (commit_delay) per session, sighup (max_wal_size,
    checkpoint_timeout) by reload, postmaster (wal_buffers) by a restart of the server pgwx
    owns; the fixture checks every setting and postgresql.auto.conf are as they were."""
    settings = {
        "work_mem": "8MB",
        "commit_delay": "10",
        "max_wal_size": "4GB",
        "checkpoint_timeout": "1200",
        "wal_buffers": "8MB",
    }
    profile = small_profile(
        "bulk-write", [Variant(name="plain"), Variant(name="tuned", settings=settings)], rows=2000
    )
    record, events = await run_profile(pg18, profile)
    tuned = next(t for t in record.trials if t.variant == "tuned")
    plain = next(t for t in record.trials if t.variant == "plain")
    assert tuned.status == plain.status == "ok"
    assert tuned.settings["work_mem"] == "8MB" and tuned.settings["commit_delay"] == "10"
    assert tuned.settings["max_wal_size"] == "4GB"
    assert tuned.settings["checkpoint_timeout"] == "20min"
    assert tuned.settings["wal_buffers"] == "8MB"
    assert plain.settings["work_mem"] == "4MB" and plain.settings["max_wal_size"] == "1GB"
    notices = " ".join(getattr(e, "message", "") for e in events)
    assert "restarting the server pgwx owns for" in notices and "wal_buffers" in notices
    # per-session settings never reach the server's configuration
    applied = next(m for m in notices.split("applied ")[1:2])
    assert "work_mem" not in applied and "max_wal_size" in applied


async def refused(target: Target, store: ResultStore, variant: Variant) -> str:
    profile = small_profile("bulk-write", [Variant(name="a"), variant], rows=1000)
    with pytest.raises(SettingRefused) as caught:
        await Runner(target, profile, store, RunOptions(settle_seconds=0, warmup=0)).run()
    assert store.list_runs() == []  # nothing ran, nothing stored
    return str(caught.value)


async def test_bad_settings_are_refused_in_one_sentence_before_anything_runs(
    pg18: Target, store: ResultStore
) -> None:
    typo = await refused(pg18, store, Variant(name="b", settings={"wal_compresion": "lz4"}))
    assert typo.startswith("variant b: PostgreSQL 18")
    assert "has no setting named wal_compresion; did you mean wal_compression" in typo
    big = await refused(pg18, store, Variant(name="b", settings={"max_wal_size": "9000TB"}))
    assert "max_wal_size = 9000TB is out of range" in big and "2MB to 2147483647MB" in big
    unit = await refused(pg18, store, Variant(name="b", settings={"max_wal_size": "4 parsecs"}))
    assert "is not a number" in unit or "is not a unit" in unit
    enum = await refused(pg18, store, Variant(name="b", settings={"wal_compression": "gzip"}))
    assert "wal_compression = 'gzip' is not one of" in enum and "pglz" in enum
    fixed = await refused(pg18, store, Variant(name="b", settings={"block_size": "16384"}))
    assert "cannot be changed on a running cluster" in fixed
    for text in (typo, big, unit, enum, fixed):
        assert "\n" not in text and "Traceback" not in text


async def test_a_restart_setting_on_a_server_pgwx_does_not_own_is_skipped_with_the_reason(
    pg18: Target, run_profile: RunProfile
) -> None:
    external = Target(dsn=None, overrides=pg18.connect_kwargs())  # same server, not owned
    profile = small_profile(
        "bulk-write",
        [Variant(name="a"), Variant(name="b", settings={"wal_buffers": "8MB"})],
        rows=1000,
    )
    record, _ = await run_profile(external, profile)
    skipped = next(t for t in record.trials if t.variant == "b")
    assert skipped.status == "skipped"
    assert skipped.reason is not None and "wal_buffers needs a server restart" in skipped.reason
