"""Replay jumps show what a natural replay shows at that moment (issue 21).

`g`, `[` and `]` once left the "finished" card up while the header said `6/18 running`, and
`G` showed the bars, not the card a natural end shows. The card belongs to the end of the
run: after a jump back it is gone, after `G` it is the natural end's card, line for line.
"""

from __future__ import annotations

from pathlib import Path

from textual.pilot import Pilot

from explorer.lab.store.replay import ReplaySource, recordings_dir
from explorer.lab.store.results import ResultStore
from explorer.tui.app import PgwxApp
from explorer.tui.widgets.header import ServerHeader
from explorer.tui.widgets.summary import SummaryCard
from tests.support.app import wait_for


def card_shown(app: PgwxApp) -> str | None:
    """The card's lines as drawn, or None when it is hidden."""
    card = app.lab.query_one(SummaryCard)
    if not card.display:
        return None
    return "\n".join(strip.text for strip in card.render_lines(card.region.reset_offset))


def header(app: PgwxApp) -> str:
    return str(app.lab.query_one(ServerHeader).run)


async def jump(pilot: Pilot[int], key: str) -> None:
    await pilot.press(key)
    await pilot.pause(0.3)


async def test_jumps_show_the_card_only_at_the_end_both_directions(tmp_path: Path) -> None:
    source = ReplaySource.from_file(recordings_dir() / "quick-demo.pgwx")
    app = PgwxApp(replay=source, store=ResultStore(tmp_path / "r.sqlite"), ascii=False)
    async with app.run_test(size=(100, 30)) as pilot:
        # A natural replay to its end: the card is up and the header says finished.
        await wait_for(pilot, lambda: app.lab.view.status == "finished", 60)
        await wait_for(pilot, lambda: card_shown(app) is not None, 10)
        await pilot.pause(0.3)
        natural = card_shown(app)
        assert natural is not None and "baseline" in natural
        assert header(app).endswith("finished")
        await jump(pilot, "space")  # paused: a jump shows that moment and stays there
        assert app.lab.controller.player is not None and app.lab.controller.player.paused

        await jump(pilot, "g")
        assert header(app).endswith("running")
        assert card_shown(app) is None, "the finished card is up while the run is running"

        await jump(pilot, "right_square_bracket")
        assert header(app).endswith("running") and card_shown(app) is None

        await jump(pilot, "G")
        assert header(app).endswith("finished")
        assert card_shown(app) == natural, "G shows the card a natural end shows"

        await jump(pilot, "left_square_bracket")
        assert header(app).endswith("running")
        assert card_shown(app) is None
