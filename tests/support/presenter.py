"""The presenter layout's test helpers: a replay app of a recording, the screen's rows as
text, and waiting for a replay's end card (shared by the presenter and servers-card tests)."""

from __future__ import annotations

import html
import re
from pathlib import Path

from textual.pilot import Pilot

from explorer.lab.store.replay import ReplaySource
from explorer.lab.store.results import ResultStore
from explorer.tui.app import PgwxApp
from explorer.tui.widgets.summary import SummaryCard
from tests.support.app import wait_for
from tests.support.paths import ROOT

FK_TIMING = ROOT / "profiles" / "recordings" / "fk-timing-restore.pgwx"
"""The shipped fk-timing-restore recording: decided verdicts (deferred ~2× slower)."""


def replay_app(tmp_path: Path, fixture: Path, present: bool | None = None) -> PgwxApp:
    source = ReplaySource.from_file(fixture)
    source.speed = 0.0
    store = ResultStore(tmp_path / "r.sqlite")
    return PgwxApp(replay=source, store=store, ascii=False, present=present)


def screen_rows(app: PgwxApp) -> list[str]:
    """The screen as the terminal shows it, one string per row."""
    svg = app.export_screenshot()
    rows: dict[float, list[str]] = {}
    for m in re.finditer(r'<text[^>]*\by="([\d.]+)"[^>]*>(.*?)</text>', svg, flags=re.S):
        rows.setdefault(float(m.group(1)), []).append(html.unescape(m.group(2)))
    return ["".join(rows[y]).replace("\xa0", " ").rstrip("\n") for y in sorted(rows)]


def squeezed(text: str) -> str:
    """Without whitespace: a line the card wrapped still matches."""
    return "".join(text.split())


async def finished(pilot: Pilot[int]) -> PgwxApp:
    """The replay has ended, its card and footer are drawn."""
    app = pilot.app
    assert isinstance(app, PgwxApp)
    await app.workers.wait_for_complete()
    card = app.lab.query_one(SummaryCard)
    await wait_for(pilot, lambda: card.display and card.region.height > 0, 20)

    def footer_drawn() -> bool:
        return "Quit" in screen_rows(app)[-1]

    await wait_for(pilot, footer_drawn, 20)
    # The footer is drawn from the first frame now: wait until the card's last layout pass
    # (the bars under it, its spread) is on screen too, two screens a moment apart the same.
    shot = screen_rows(app)
    for _ in range(15):
        await pilot.pause(0.2)
        again = screen_rows(app)
        if again == shot:
            break
        shot = again
    return app
