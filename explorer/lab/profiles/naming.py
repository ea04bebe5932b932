"""The naming rule for variants built from knobs: a short label of what differs from the
defaults, never silently cut and never shared by two different variants of one table."""

from __future__ import annotations

from collections.abc import Mapping

from explorer.models import Knobs, Variant

NAME_MAX: int = next(
    m.max_length for m in Variant.model_fields["name"].metadata if hasattr(m, "max_length")
)
"""Longest variant name the store accepts (models.Variant)."""

KNOB_LABELS = {
    "fk": "fk",
    "toast": "toast",
    "load_in_create_txn": "same-txn",
    "pregrown": "pregrown",
    "synchronous_commit": "sc",
    "fsync": "fsync",
    "full_page_writes": "fpw",
    "wal_level": "wal",
    "temp_buffers": "tb",
    "shared_buffers": "sb",
    "track_io_timing": "tiot",
}
"""Knob → its short label in a variant name, in the order the labels are written."""


def shorten(name: str, limit: int = NAME_MAX) -> str:
    """`name`, or its first `limit - 1` characters and an ellipsis: never silently cut."""
    return name if len(name) <= limit else name[: limit - 1].rstrip() + "…"


def variant_name(knobs: Knobs, taken: Mapping[str, Knobs] | None = None) -> str:
    """A short label of the knobs that differ from the defaults, e.g. 'unlogged sc=off'.

    Args:
        knobs: The variant's knobs.
        taken: Names already in the table and their knobs: a different variant that would
            get the same label is numbered ('… #2') instead, so no two share a name.
    """
    parts = [knobs.table_kind.value]
    for field, label in KNOB_LABELS.items():
        value = getattr(knobs, field)
        if value != Knobs.model_fields[field].default:
            shown = ("on" if value else "off") if isinstance(value, bool) else str(value)
            parts.append(f"{label}={getattr(value, 'value', shown)}")
    full = " ".join(parts)
    taken = taken or {}
    name, number = shorten(full), 2
    while name in taken and taken[name] != knobs:
        suffix = f" #{number}"
        name, number = shorten(full, NAME_MAX - len(suffix)) + suffix, number + 1
    return name
