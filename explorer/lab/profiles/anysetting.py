"""A variant's other settings (`settings = { … }`): checked before a run, then routed.

Each setting goes where its pg_settings context lets it, and nowhere wider:

- `user` (and `backend`): as a startup option of the workload's own sessions only;
- `superuser` (and `superuser-backend`): the same when the workload's sessions are a
  superuser's, else ALTER SYSTEM + reload, journaled and put back like the knobs;
- `sighup`: ALTER SYSTEM + reload, journaled and put back;
- `postmaster`: ALTER SYSTEM + a restart, only on a server pgwx owns (else the variant is
  skipped with the reason, as wal_level is).
"""

from __future__ import annotations

from typing import Literal

import asyncpg

from explorer.errors import PgwxError
from explorer.models import Capabilities, GucInfo, Knobs, Toast, Variant
from explorer.server.gucs import (
    all_names,
    canonical,
    check_value,
    context_problem,
    nearest,
    read_gucs,
)

Route = Literal["session", "reload", "restart"]


class SettingRefused(PgwxError, ValueError):
    """A variant names a setting this server does not have, or a value it cannot take;
    str() is one sentence (with the nearest names, or the range and its unit)."""


def route(guc: GucInfo, caps: Capabilities, *, fenced: bool) -> Route:
    """How a setting of this context reaches the workload (see the module's note)."""
    if guc.context in ("user", "backend"):
        return "session"
    if guc.context in ("superuser", "superuser-backend"):
        return "session" if caps.superuser and not fenced else "reload"
    if guc.context == "postmaster":
        return "restart"
    return "reload"


def split(
    knobs: Knobs, caps: Capabilities, *, fenced: bool
) -> tuple[dict[str, str], dict[str, str]]:
    """(server settings to ALTER SYSTEM — the knobs' and the other settings' —, settings of
    the workload's own sessions), values with their units spelled out."""
    server = knobs.server_settings()
    session: dict[str, str] = {}
    for name, value in knobs.settings.items():
        guc = caps.gucs.get(name)
        if guc is None:
            continue  # checked before the run: it exists wherever a variant runs
        spelled, _why = check_value(guc, value, caps.version)
        shown = canonical(guc, spelled or value)
        if route(guc, caps, fenced=fenced) == "session":
            session[name] = shown
        else:
            server[name] = shown
    return server, session


async def learn_settings(
    conn: asyncpg.Connection, caps: Capabilities, variants: list[Variant]
) -> None:
    """Read pg_settings for every setting the variants name into `caps.gucs`, and refuse
    bad input before anything runs.

    Raises:
        SettingRefused: an unknown name (with the nearest known ones), a value of the wrong
            type, not among the enum's values, or out of range (with the range and unit), or
            a setting no running server can change. A value the build lacks (lz4, zstd) is
            not refused here: the variant is skipped with the reason (`unavailable`).
    """
    names = sorted({n for v in variants for n in v.knobs.settings})
    if not names:
        return
    caps.gucs.update(await read_gucs(conn, [n for n in names if n not in caps.gucs]))
    for variant in variants:
        for name, value in variant.knobs.settings.items():
            guc = caps.gucs.get(name)
            if guc is None:
                close = nearest(name, await all_names(conn))
                hint = f"; did you mean {' or '.join(close)}?" if close else ""
                raise SettingRefused(
                    f"variant {variant.name}: PostgreSQL {caps.version} has no setting named "
                    f"{name}{hint}"
                )
            problem = context_problem(guc)
            if problem is None:
                _spelled, problem = check_value(guc, value, caps.version)
                if problem is not None and problem.startswith("not built: "):
                    problem = None  # the variant is skipped here, with its reason
            if problem is not None:
                raise SettingRefused(f"variant {variant.name}: {problem}")


def unavailable(knobs: Knobs, caps: Capabilities) -> str | None:
    """Why this server cannot take one of the variant's other settings as they are (a value
    its build lacks), or None. Privileges and restarts are the knobs' rules (availability)."""
    for name, value in knobs.settings.items():
        guc = caps.gucs.get(name)
        if guc is None:
            return f"{name} does not exist on PostgreSQL {caps.version}"
        _spelled, why = check_value(guc, value, caps.version)
        if why is not None:
            return why.removeprefix("not built: ")
    return None


def toast_pin(knobs: Knobs, caps: Capabilities) -> dict[str, str]:
    """default_toast_compression for the workload's sessions, pinned to the TOAST knob (pglz
    unless the knob says lz4; EXTERNAL stores uncompressed, so the default stays pglz).

    PostgreSQL 19's default is lz4: without this, a toastable column an own-SQL profile does
    not list would take lz4 there while the run's knobs say pglz. Empty before 14 (no such
    setting) and when the variant names it among its other settings.
    """
    if caps.major < 14 or "default_toast_compression" in knobs.settings:
        return {}
    if knobs.toast is Toast.LZ4 and not caps.lz4:
        return {}  # skipped here anyway: never a session that cannot start
    return {"default_toast_compression": "lz4" if knobs.toast is Toast.LZ4 else "pglz"}
