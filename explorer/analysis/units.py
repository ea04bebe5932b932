"""The one way pgwx writes sizes and counts, so a table size reads the same everywhere.

Bytes are 1024-based with IEC labels (KiB, MiB, GiB: what PostgreSQL's own
`pg_size_pretty` computes, spelled without ambiguity); counts (rows, operations) are decimal.
"""

from __future__ import annotations

MIB = 1024 * 1024
"""Bytes in a MiB: the unit of the WAL chart and the progress texts."""

_BYTE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def human_bytes(value: float | None) -> str:
    """'1.1 GiB', '340.0 KiB', '0 B'; '' for None (a counter the server did not give)."""
    if value is None:
        return ""
    size = float(value)
    for unit in _BYTE_UNITS:
        if abs(size) < 1024 or unit == _BYTE_UNITS[-1]:
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable: the last unit always returns")


def human_count(n: float) -> str:
    """'6.1M', '950.0k', '12': rows and operations, decimal."""
    for unit, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n) >= size:
            return f"{n / size:.1f}{unit}"
    return f"{n:.0f}"
