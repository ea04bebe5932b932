"""Names and notes from run data are text everywhere: never Rich markup, markdown or formulas.

A variant name, a note or a failure reason comes from a profile file or a server; shown in
the app, a markdown table or a CSV cell it must read as itself and restyle or break nothing.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from explorer.analysis.report import to_csv, to_markdown
from explorer.lab.store.replay import ReplaySource
from explorer.lab.store.results import ResultStore
from explorer.models import RunRecord
from explorer.tui.app import PgwxApp
from explorer.tui.widgets.results_table import ResultsTable
from tests.support.app import FIXTURE, wait_for

HOSTILE = {
    "defaults": "[/bold]closing",
    "sync-commit-off": "[b red]loud",
    "fsync-fpw-off": "a|b\\c",
    "minimal-same-txn": "=1+2",
}
"""Fixture variant → a name that is markup, breaks a markdown table, or is a formula."""


def hostile_fixture(tmp_path: Path) -> Path:
    """The durability recording with its variants renamed (events and profile alike)."""
    text = FIXTURE.read_text()
    for old, new in HOSTILE.items():
        text = text.replace(json.dumps(old), json.dumps(new))
    path = tmp_path / "hostile.json"
    path.write_text(text)
    return path


def _plain(app: PgwxApp) -> str:
    """Everything the results table shows, as plain text."""
    table = app.lab.query_one(ResultsTable)
    cells = []
    for row in range(table.row_count):
        for cell in table.get_row_at(row):
            cells.append(getattr(cell, "plain", str(cell)))
    return "\n".join(cells)


async def test_replay_shows_markup_names_literally(tmp_path: Path) -> None:
    source = ReplaySource.from_file(hostile_fixture(tmp_path))
    app = PgwxApp(replay=source, store=ResultStore(tmp_path / "r.sqlite"))
    async with app.run_test(size=(160, 40)) as pilot:
        lab = app.lab
        await wait_for(pilot, lambda: lab.view.status == "finished", 20)
        await pilot.pause(0.3)
        shown = _plain(app)
        for name in HOSTILE.values():
            assert name in shown, (name, shown)
        # The whole screen renders without a MarkupError and shows the names as typed.
        screen = app.export_screenshot()
        assert "[/bold]closing" in screen.replace("&#160;", " ")
        assert app.is_running


def _record(tmp_path: Path) -> RunRecord:
    """The hostile recording as a stored run (the way `pgwx report` reads one)."""
    from explorer.lab.store.replay import ReplaySource as _Source
    from explorer.lab.view.runstate import RunView

    source = _Source.from_file(hostile_fixture(tmp_path))
    view = RunView(profile=source.profile, scale=source.scale)
    for event in source.events:
        view.apply(event)
    assert view.record is not None
    return view.record


def test_markdown_escapes_pipes_backslashes_and_newlines(tmp_path: Path) -> None:
    record = _record(tmp_path)
    record.trials[0].status = "failed"
    record.trials[0].reason = "line one\nline two | three"
    md = to_markdown(record)
    table = [ln for ln in md.splitlines() if ln.startswith("| ")]
    width = table[0].count(" | ")
    # Every row has as many cell separators as the header: no name or note split a row.
    for line in table:
        unescaped = line.replace("\\|", "")
        assert unescaped.count(" | ") == width, line
    assert "a\\|b\\\\c" in md
    assert "line one line two" in md.replace("<br>", " ")


def test_csv_cells_are_never_formulas(tmp_path: Path) -> None:
    record = _record(tmp_path)
    rows = list(csv.reader(io.StringIO(to_csv(record))))
    cells = [cell for row in rows[1:] for cell in row]
    assert "'=1+2" in cells
    assert not any(cell[:1] in ("=", "+", "@", "\t", "\r") for cell in cells if cell)
    # Negative numbers stay numbers.
    assert all(not cell.startswith("'-") or not cell[2:3].isdigit() for cell in cells)
