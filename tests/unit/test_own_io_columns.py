"""Evictions, FPI bytes and the work columns' source in the report, without a server (issue 37).

The recorded run (tests/fixtures/durability.json) was stored before pgwx read evictions: they
must read as unknown, never 0.
"""

from __future__ import annotations

import json

from explorer.analysis.report import to_csv, to_json, to_markdown
from tests.support.recorded import record


def md_cells(md: str, variant: str, phase: str) -> dict[str, str]:
    header = next(ln for ln in md.splitlines() if ln.startswith("| variant |"))
    line = next(ln for ln in md.splitlines() if ln.startswith(f"| {variant} | {phase} |"))
    names = [c.strip() for c in header.strip("|").split("|")]
    return dict(zip(names, [c.strip() for c in line.strip("|").split("|")], strict=True))


def test_evictions_stored_before_pgwx_read_them_are_unknown_not_zero() -> None:
    rec = record()
    md = to_markdown(rec)
    cells = md_cells(md, "unlogged", "copy")
    assert cells["evictions"] == "?"
    assert cells["ext pages"] != "?"  # the rest of the row was measured
    row = next(r for r in json.loads(to_json(rec))["rows"] if r["phase"] == "copy")
    assert row["evicted"] is None and row["extended"] is not None
    header, *lines = to_csv(rec).splitlines()
    names = header.split(",")
    first = dict(zip(names, lines[0].split(","), strict=False))
    assert first["evicted"] == "?"
