"""Evictions, FPI bytes and the work columns' source in the report, without a server (issue 37).

The recorded run (tests/fixtures/durability.json) was stored before pgwx read evictions: they
must read as unknown, never 0.
"""

from __future__ import annotations

import json
from pathlib import Path

from explorer.analysis.card import card_lines
from explorer.analysis.report import to_csv, to_json, to_markdown
from explorer.lab.store.recording import import_recording
from explorer.lab.store.results import ResultStore
from tests.support.recorded import record

RECORDINGS = Path(__file__).parents[2] / "profiles" / "recordings"


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


def test_the_card_names_evictions_when_their_comparison_is_decided(tmp_path: Path) -> None:
    """The shipped fk-timing-restore recording, its WAL and fsyncs made equal across trials
    (undecided) and its evictions set: one variant evicts 1,000× more, and the card says so;
    the others evict as much as the baseline, and nothing is said."""
    store = ResultStore(tmp_path / "results.sqlite")
    rec = import_recording(store, RECORDINGS / "fk-timing-restore.pgwx")
    base = rec.profile.baseline_name()
    assert "evictions" not in " ".join(line.mechanism for line in card_lines(rec))
    for i, trial in enumerate(rec.trials):
        # the same per-trial totals whatever the phases: all on the first phase, 0 elsewhere
        for n, phase in enumerate(trial.phases):
            m = phase.mechanism
            if m is None:
                continue
            m.wal_bytes = 1_000_000 if n == 0 else 0
            for w in (m.writers or {}).values():
                w.fsyncs = 1 if n == 0 else 0
                w.evicted = 10 + i % 3 if n == 0 else 0
            if trial.variant == "immediate" and m.writers and n == 0:
                m.writers["checkpointer"].evicted = 10_000 + i % 3
    lines = {line.variant: line for line in card_lines(rec)}
    assert lines["immediate"].mechanism.startswith("evictions ")
    assert "→" in lines["immediate"].mechanism
    others = [v for v in lines if v not in (base, "immediate")]
    assert others and all(lines[v].mechanism == "" for v in others)
