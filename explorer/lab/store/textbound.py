"""Every text the store keeps is bounded, wherever it came from.

A trial's notes, a phase's reason, a notice, a server's error or version string: text from
outside (a profile's SQL, a server, a teammate's planted row) reaches the store through the
run's records and events. Whatever bound each producer keeps, the store keeps its own at its
door: a string longer than STORED_TEXT_MAX characters is cut there, saying how long it was,
so one row never holds megabytes and a recording's line stays under what `pgwx replay` and
`pgwx import` read (`explorer.lab.store.bounds.MAX_LINE_BYTES`).
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

STORED_TEXT_MAX = 64_000
"""Characters of one text field the store keeps (notes of --allow-large runs fit)."""


def cut_text(text: str, limit: int = STORED_TEXT_MAX) -> str:
    """`text`, or its first `limit` characters and how long it was."""
    if len(text) <= limit:
        return text
    return (
        f"{text[:limit]}… (cut by the results store: {len(text):,} characters; it keeps {limit:,})"
    )


def _cut_all(data: Any, keep: tuple[str, ...]) -> bool:
    """Cut every long string in parsed JSON `data` in place (walked without recursion; the
    top-level keys in `keep` are left whole); whether any was cut."""
    cut = False
    stack: list[Any] = [data]
    top = True
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, value in item.items():
                if top and key in keep:
                    continue
                if isinstance(value, str) and len(value) > STORED_TEXT_MAX:
                    item[key] = cut_text(value)
                    cut = True
                elif isinstance(value, dict | list):
                    stack.append(value)
        elif isinstance(item, list):
            for i, value in enumerate(item):
                if isinstance(value, str) and len(value) > STORED_TEXT_MAX:
                    item[i] = cut_text(value)
                    cut = True
                elif isinstance(value, dict | list):
                    stack.append(value)
        top = False
    return cut


def stored_json(
    model: BaseModel, *, exclude: set[str] | None = None, keep: tuple[str, ...] = ()
) -> str:
    """`model` as the JSON the store keeps: every string at most STORED_TEXT_MAX characters.

    Args:
        exclude: Fields left out (a run's trials, kept in their own rows).
        keep: Top-level fields kept whole (the run's profile: the user's own file, bounded
            when it is loaded, and stored as written so the run can be read back).
    """
    raw = model.model_dump_json(exclude=exclude)
    if len(raw) <= STORED_TEXT_MAX:
        return raw  # no string in it can be longer
    data = json.loads(raw)
    if not _cut_all(data, keep):
        return raw
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))
