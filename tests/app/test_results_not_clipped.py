"""The results table never cuts a count or a verdict that grew after its row was first drawn.

A row is drawn when its first trial ends and its cells are updated in place afterwards (to
keep the bytes on a slow link down). The columns were sized to the first values only, so 30
trials showed as `3` and a verdict grown from `too few runs` lost its word and bracket — at
80, 120 and 200 columns alike.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
from pathlib import Path

import pytest
from rich.text import Text
from textual.app import App, ComposeResult

from explorer.analysis.report import SummaryRow, summarize
from explorer.models import RunRecord, TrialResult
from explorer.tui.widgets.results import COLUMNS, ResultsTable, cells

FIXTURE = Path(__file__).parents[1] / "fixtures" / "durability.json"


def _record(per_variant: int) -> RunRecord:
    data = json.loads(FIXTURE.read_text())
    started = next(e for e in data["events"] if e["kind"] == "run-started")
    results = [e["result"] for e in data["events"] if e["kind"] == "trial-ended"]
    trials: list[TrialResult] = []
    by_variant: dict[str, list[dict[str, object]]] = {}
    for r in results:
        by_variant.setdefault(r["variant"], []).append(r)
    for n in range(per_variant):
        for rows in by_variant.values():
            t = TrialResult.model_validate(copy.deepcopy(rows[n % len(rows)]))
            t.warmup = False
            for p in t.phases:  # a little spread, so the statistics are not degenerate
                p.seconds *= 1 + 0.01 * (n % 7)
            trials.append(t)
    return RunRecord(
        id=started["run_id"],
        profile=data["profile"],
        scale=data["scale"],
        server=started["server"],
        started_at=dt.datetime(2025, 1, 1, tzinfo=dt.UTC),
        status="finished",
        trials=trials,
    )


class TableApp(App[None]):
    def compose(self) -> ComposeResult:
        yield ResultsTable(id="results")


def _cell_widths(rows: list[SummaryRow]) -> dict[str, int]:
    widths: dict[str, int] = {}
    for row in rows:
        for (key, _), value in zip(COLUMNS, cells(row), strict=True):
            width = value.cell_len if isinstance(value, Text) else len(value)
            widths[key] = max(widths.get(key, 0), width)
    return widths


@pytest.mark.parametrize("size", [(80, 24), (120, 36), (200, 50)])
async def test_counts_and_verdicts_grow_their_columns(size: tuple[int, int]) -> None:
    few, many = summarize(_record(3)), summarize(_record(30))
    assert any(r.n == 30 for r in many)
    assert [(r.variant, r.phase) for r in few] == [(r.variant, r.phase) for r in many]
    async with TableApp().run_test(size=size) as pilot:
        table = pilot.app.query_one(ResultsTable)
        table.show(few)
        await pilot.pause()
        table.show(many)
        await pilot.pause()
        need = _cell_widths(many)
        for key, _ in COLUMNS:
            if key == "note":
                continue  # cut on purpose (NOTE_WIDTH), the export has it whole
            column = table.columns[key]  # type: ignore[index]
            assert column.content_width >= need[key], (key, column.content_width, need[key])
        # What the terminal shows: the n column says 30, not 3.
        n_col = table.columns["n"]  # type: ignore[index]
        assert n_col.content_width >= 2
