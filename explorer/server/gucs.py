"""Any server setting as a variant knob: refused names, and values checked against pg_settings.

A variant may name any setting (`settings = { wal_compression = "lz4", max_wal_size = "4GB" }`).
Before anything runs, each is checked against the server's own `pg_settings` row — the name
exists (else the nearest names are offered), the value has the setting's type, is one of its
enum values, and lies within its min/max (units converted as PostgreSQL converts them) — and
each problem is one sentence. Settings that name a program, a library, a file or a directory
on the server, or that pgwx itself relies on (its sessions' application_name, its guards), are
refused outright, without asking any server: a profile is data and never runs anything.
"""

from __future__ import annotations

import difflib
import re

import asyncpg

from explorer.models import (
    MAX_VALUE,
    NAME,
    RISKY_VALUES,
    GucInfo,
    refused_setting,
    setting_value,
)

__all__ = [
    "NAME",
    "RISKY_VALUES",
    "WRITE_PATH",
    "all_names",
    "check_value",
    "context_problem",
    "nearest",
    "read_gucs",
    "refused_setting",
    "setting_value",
]

BUILD_DEPENDENT = {"lz4", "zstd", "io_uring"}
"""Enum values a server offers only when built with them: missing means "not here", not a typo."""

WRITE_PATH = (
    "wal_compression",
    "max_wal_size",
    "checkpoint_timeout",
    "checkpoint_completion_target",
    "wal_buffers",
    "commit_delay",
    "commit_siblings",
    "wal_writer_delay",
    "wal_writer_flush_after",
    "backend_flush_after",
    "default_toast_compression",
)
"""The write-path settings offered by name (the app's "other settings" row)."""

_COLUMNS = "name, setting, unit, context, source, vartype, min_val, max_val, enumvals"


def _info(row: asyncpg.Record) -> GucInfo:
    values = dict(row)
    values["enumvals"] = list(values["enumvals"]) if values["enumvals"] is not None else None
    return GucInfo(**values)


async def read_gucs(conn: asyncpg.Connection, names: list[str]) -> dict[str, GucInfo]:
    """pg_settings' rows for these names (names the server lacks are left out)."""
    rows = await conn.fetch(f"SELECT {_COLUMNS} FROM pg_settings WHERE name = ANY($1)", names)
    return {r["name"]: _info(r) for r in rows}


async def all_names(conn: asyncpg.Connection) -> list[str]:
    """Every setting name of this server, for suggestions on a typo."""
    return [str(r[0]) for r in await conn.fetch("SELECT name FROM pg_settings ORDER BY name")]


def nearest(name: str, known: list[str], n: int = 3) -> list[str]:
    """The known names closest to a mistyped one (most alike first)."""
    return difflib.get_close_matches(name, known, n=n, cutoff=0.6)


_MEMORY = {"B": 1, "kB": 1024, "MB": 1024**2, "GB": 1024**3, "TB": 1024**4}
_TIME = {"us": 0.001, "ms": 1.0, "s": 1000.0, "min": 60_000.0, "h": 3_600_000.0, "d": 86_400_000.0}
_NUMBER = re.compile(r"\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-z]*)\s*")
_BOOL = {"on": "on", "off": "off", "true": "on", "false": "off", "yes": "on", "no": "off"}
_BOOL.update({"1": "on", "0": "off", "t": "on", "f": "off", "y": "on", "n": "off"})


def _base_unit(unit: str) -> tuple[float, dict[str, float]] | None:
    """(size of one unit of pg_settings' `unit`, that family's factors), e.g. '8kB' → 8192."""
    m = re.fullmatch(r"(\d*)\s*([A-Za-z]+)", unit)
    if m is None:
        return None
    count = float(m.group(1) or 1)
    for family in (_MEMORY, _TIME):
        if m.group(2) in family:
            return count * family[m.group(2)], {k: float(v) for k, v in family.items()}
    return None


def _in_base(row: GucInfo, value: str) -> float | str:
    """The value in the setting's own unit, or one sentence saying why it is not a number."""
    m = _NUMBER.fullmatch(value)
    if m is None:
        return f"{row.name} = {value!r} is not a number"
    number, unit = float(m.group(1)), m.group(2)
    if not unit:
        return number
    base = _base_unit(row.unit or "")
    if base is None:
        return f"{row.name} = {value!r}: {row.name} takes a plain number, without a unit"
    size, family = base
    if unit not in family:
        units = ", ".join(family)
        return f"{row.name} = {value!r}: {unit!r} is not a unit of {row.name} (use {units})"
    return number * family[unit] / size


def _with_unit(number: str | None, unit: str | None) -> str:
    if number is None:
        return "?"
    if not unit:
        return number
    return f"{number}{unit}" if not unit[0].isdigit() else f"{number} × {unit}"


def check_value(row: GucInfo, value: str, version: str) -> tuple[str | None, str | None]:
    """(the value as PostgreSQL spells it, None) or (None, one sentence why not).

    A build-dependent enum value (lz4, zstd, io_uring) the server lacks is reported with the
    prefix "not built" so the caller can skip the variant instead of refusing the profile.
    """
    if len(value) > MAX_VALUE or not value.isprintable():
        return None, f"{row.name}'s value must be printable text of at most {MAX_VALUE} characters"
    if row.vartype == "bool":
        spelled = _BOOL.get(value.strip().lower())
        if spelled is None:
            return None, f"{row.name} = {value!r} is not on or off (true/false)"
        return spelled, None
    if row.vartype == "enum":
        for allowed in row.enumvals or ():
            if allowed.lower() == value.strip().lower():
                return allowed, None
        offers = ", ".join(row.enumvals or ())
        if value.strip().lower() in BUILD_DEPENDENT:
            return None, (
                f"not built: {row.name} = {value} is not built into this server (PostgreSQL "
                f"{version} offers {offers})"
            )
        return None, f"{row.name} = {value!r} is not one of {offers} (PostgreSQL {version})"
    if row.vartype in ("integer", "real"):
        number = _in_base(row, value)
        if isinstance(number, str):
            return None, number
        low = float(row.min_val) if row.min_val is not None else None
        high = float(row.max_val) if row.max_val is not None else None
        if (low is not None and number < low) or (high is not None and number > high):
            return None, (
                f"{row.name} = {value} is out of range: PostgreSQL {version} takes "
                f"{_with_unit(row.min_val, row.unit)} to {_with_unit(row.max_val, row.unit)}"
            )
        return value.strip(), None
    return value, None


SESSION_CONTEXTS = {"user", "superuser", "backend", "superuser-backend"}
"""Contexts a session can set for itself as it connects (startup options)."""
RELOAD_CONTEXT = "sighup"
RESTART_CONTEXT = "postmaster"


def context_problem(row: GucInfo) -> str | None:
    """One sentence when no variant can set this setting at all (fixed when the cluster was
    made, or read-only); None when it can be set per session, by reload or by restart."""
    if row.context in SESSION_CONTEXTS or row.context in (RELOAD_CONTEXT, RESTART_CONTEXT):
        return None
    return (
        f"{row.name} cannot be changed on a running cluster (its context is {row.context}: "
        "fixed when the cluster was made or when PostgreSQL was built)"
    )


def canonical(row: GucInfo, value: str) -> str:
    """A checked value with its unit spelled out, so a read-back can be compared with it.

    A bare number takes the setting's unit (wal_buffers = 64 is 64 × 8kB = 512kB); a value
    that already names a unit, a bool or an enum value is kept as PostgreSQL spells it.
    """
    m = _NUMBER.fullmatch(value)
    if m is None or m.group(2) or not row.unit or row.vartype not in ("integer", "real"):
        return value
    unit = re.fullmatch(r"(\d*)\s*([A-Za-z]+)", row.unit)
    if unit is None or float(m.group(1)) < 0:
        return value  # -1 and the like mean "automatic", not an amount
    amount = float(m.group(1)) * float(unit.group(1) or 1)
    return f"{int(amount) if amount.is_integer() else amount}{unit.group(2)}"


def _amount(text: str) -> tuple[float, str] | None:
    """(amount in bytes or ms, 'memory' or 'time') for '4GB', '5min'; None otherwise."""
    m = _NUMBER.fullmatch(text)
    if m is None or not m.group(2):
        return None
    for kind, family in (("memory", _MEMORY), ("time", _TIME)):
        if m.group(2) in family:
            return float(m.group(1)) * family[m.group(2)], kind
    return None


def same_setting(current: str, wanted: str) -> bool:
    """Whether a value read back (current_setting) is the one asked for: on = true = 1,
    4GB = 4096MB, 300s = 5min."""
    a, b = current.strip().lower(), wanted.strip().lower()
    if _BOOL.get(a, a) == _BOOL.get(b, b):
        return True
    x, y = _amount(current.strip()), _amount(wanted.strip())
    if x is not None and y is not None and x[1] == y[1]:
        return abs(x[0] - y[0]) <= 1e-9 * max(abs(x[0]), abs(y[0]), 1.0)
    try:
        return float(a) == float(b)
    except ValueError:
        return False
