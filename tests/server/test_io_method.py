"""PostgreSQL 18's io_method as a restart-only knob on a server pgwx owns (issue 22).

sync and worker run on the bundled 18 (each applied by a restart, and put back after);
io_uring, which the bundled build lacks, is skipped with the reason; on PostgreSQL 15 the
setting does not exist, and on a server pgwx does not own it needs a restart pgwx won't do.
"""

from __future__ import annotations

import pytest

from explorer.lab.profiles.availability import unavailable_reason
from explorer.models import Capabilities, Knobs, Variant
from explorer.server import installs
from explorer.server.capabilities import probe
from explorer.server.connect import Target
from tests.support.runs import RunProfile, small_profile


async def test_io_method_runs_on_the_owned_18_and_io_uring_says_why_not(
    pg18: Target, run_profile: RunProfile
) -> None:
    variants = [
        Variant(name="sync", knobs=Knobs(io_method="sync")),
        Variant(name="worker", knobs=Knobs(io_method="worker")),
        Variant(name="io_uring", knobs=Knobs(io_method="io_uring")),
    ]
    record, _ = await run_profile(pg18, small_profile("bulk-write", variants, rows=2_000))
    by = {t.variant: t for t in record.trials}
    caps = record.server.capabilities
    assert caps.io_methods[:2] == ["sync", "worker"]
    for name in ("sync", "worker"):
        assert by[name].status == "ok", by[name].reason
        assert by[name].settings["io_method"] == name  # read back from the server
    if "io_uring" in caps.io_methods:
        assert by["io_uring"].status == "ok", by["io_uring"].reason
    else:
        assert by["io_uring"].status == "skipped"
        assert "io_method=io_uring is not built into this server" in (by["io_uring"].reason or "")
        assert installs.bundled().liburing is False  # pg_config agrees with the server


async def caps_of(target: Target, *, owned: bool) -> Capabilities:
    conn = await target.connect("test")
    try:
        return await probe(conn, owned=owned)
    finally:
        await conn.close()


@pytest.mark.pg15
async def test_io_method_does_not_exist_before_18(pg15: Target) -> None:
    caps = await caps_of(pg15, owned=True)
    assert caps.io_methods == []
    why = unavailable_reason(Knobs(io_method="worker"), caps, allow_risky=False)
    assert why == f"io_method does not exist on PostgreSQL {caps.version}"


async def test_io_method_needs_a_server_pgwx_owns(pg18: Target) -> None:
    caps = await caps_of(pg18, owned=False)
    current = caps.gucs["io_method"].setting
    other = "sync" if current != "sync" else "worker"
    why = unavailable_reason(Knobs(io_method=other), caps, allow_risky=False)
    assert why is not None and why.startswith("io_method needs a server restart")
