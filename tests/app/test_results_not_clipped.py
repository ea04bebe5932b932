"""The results table never cuts a count or a verdict that grew after its row was first drawn.

A row is drawn when its first trial ends and its cells are updated in place afterwards (to
keep the bytes on a slow link down). The columns were sized to the first values only, so 30
trials showed as `3` and a verdict grown from `too few runs` lost its word and bracket — at
80, 120 and 200 columns alike. And at 80 columns the longest verdicts ran off the table's
right edge (`2.30× [1.65–3.43] slo`): a table too narrow for them shows the compact row
(`2.30× slower`) and the whole verdict, with min–max, in the line under the selected row.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
from pathlib import Path

import pytest
from rich.text import Text
from textual.app import App, ComposeResult
from textual.widgets import DataTable

from explorer.analysis.report import SummaryRow, summarize
from explorer.lab.store.recording import import_recording
from explorer.lab.store.replay import recordings_dir
from explorer.lab.store.results import ResultStore
from explorer.models import RunRecord, TrialResult
from explorer.tui.widgets.results_table import COLUMNS, MechanismLine, ResultsTable, cells

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
        if table.compact:
            need["verdict"] = max(len(r.verdict_short()) for r in many)
        for key, _ in COLUMNS:
            if key == "note":
                continue  # cut on purpose (NOTE_WIDTH), the export has it whole
            if key not in table.columns:
                # min and max move under the selected row (compact), a mechanism column
                # that would not fit whole is left out (the line under the row has it)
                assert (table.compact and key in ("min", "max")) or key in (
                    "wal",
                    "extends",
                    "wait",
                )
                continue
            column = table.columns[key]  # type: ignore[index]
            assert column.content_width >= need[key], (key, column.content_width, need[key])
        # What the terminal shows: the n column says 30, not 3.
        n_col = table.columns["n"]  # type: ignore[index]
        assert n_col.content_width >= 2


# --------------------------------------------------------------------------- what is on screen


class DetailApp(App[None]):
    """The table and the line under it, wired as the lab wires them."""

    def compose(self) -> ComposeResult:
        yield ResultsTable(id="results")
        yield MechanismLine(id="mechanism")

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        table = self.query_one(ResultsTable)
        self.query_one(MechanismLine).show_row(
            table.row_at(event.cursor_row), compact=table.compact
        )


def fk_timing_record(tmp_path: Path) -> RunRecord:
    """The shipped fk-timing-restore recording: the longest verdicts pgwx writes."""
    store = ResultStore(tmp_path / "r.sqlite")
    return import_recording(store, recordings_dir() / "fk-timing-restore.pgwx")


@pytest.mark.parametrize("size", [(80, 24), (120, 36), (200, 50)])
@pytest.mark.parametrize("which", ["durability x30", "fk-timing-restore"])
async def test_n_and_the_verdict_are_whole_on_screen(
    size: tuple[int, int], which: str, tmp_path: Path
) -> None:
    record = _record(30) if which == "durability x30" else fk_timing_record(tmp_path)
    rows = summarize(record)
    async with DetailApp().run_test(size=size) as pilot:
        table = pilot.app.query_one(ResultsTable)
        table.show(rows)
        await pilot.pause(0.2)
        # Full rows where they fit, compact ones (no interval) where they do not; never cut.
        if which == "fk-timing-restore":
            assert table.compact == (size[0] == 80), size  # its verdicts need ~110 columns
        drawn = [s.text for s in table.render_lines(table.region.reset_offset)]
        # Every column but the note (cut on purpose) ends inside the table: none half shown.
        shown = [table.columns[k] for k in table.keys if k != "note"]  # type: ignore[index]
        room = table.scrollable_content_region.width
        assert sum(c.get_render_width(table) for c in shown) <= room, table.keys
        for n, row in enumerate(rows[: table.size.height - 2]):
            line = drawn[n + 1]  # under the header
            words = line.split()
            assert str(row.n) in words, (line, row.n)
            verdict = row.verdict_short() if table.compact else row.verdict_label()
            assert verdict in line, (line, verdict)
        if table.compact:
            # The interval the compact row leaves out is under the selected row.
            cut = next(r for r in rows if r.verdict is not None and "[" in r.verdict_label())
            table.move_cursor(row=rows.index(cut))
            await pilot.pause(0.2)
            detail = " ".join(
                s.text
                for s in pilot.app.query_one(MechanismLine).render_lines(
                    pilot.app.query_one(MechanismLine).region.reset_offset
                )
            )
            assert cut.verdict_label() in " ".join(detail.split()), detail
