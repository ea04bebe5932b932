"""A run on several servers ends on a card as one run does (issue 39): the biggest verdict
between the servers, each variant's line per server, `n of m` servers, and the presenter
headline telling the server pair's ratio.

The two-server run is built without a server (tests.support.servers_card: the shipped
fk-timing-restore trials as 15's, with deferred twice as fast as 18's); the app is a replay
of that recording, and the end of the servers' matrix is the screen's own
`show_servers_card`, the call its ServersJudged handler makes with the controller's group.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from explorer.analysis.server_card import biggest_row, server_card
from explorer.tui.widgets.duration import DurationPane
from explorer.tui.widgets.headline import Headline, server_words
from explorer.tui.widgets.summary import SummaryCard, render_servers_card
from tests.support.app import rows_of
from tests.support.presenter import FK_TIMING, finished, replay_app, screen_rows, squeezed
from tests.support.servers_card import two_server_group


def test_the_biggest_server_verdict_is_the_decided_one_that_moved_most() -> None:
    card = server_card(two_server_group())
    assert card is not None
    row = card.biggest
    assert row is not None and row.verdict.ratio is not None
    assert (row.variant, row.phase, row.server, row.reference) == ("deferred", "total", "18", "15")
    assert row.verdict.word == "faster" and 0.4 < row.verdict.ratio < 0.6
    assert biggest_row(card.judged) is row
    assert [name for name, _ in card.servers] == ["15", "18"]
    assert server_card(two_server_group()[:1]) is None  # one server: the usual card


def test_the_headline_tells_an_undecided_server_pair_plainly() -> None:
    # A live run's headline read "unlogged total on 18 undecided vs on 15".
    card = server_card(two_server_group())
    assert card is not None
    row = next(r for r in card.judged.rows if r.verdict.word == "undecided")
    told = server_words(row, "fk-timing-restore").plain.split("\n")[0]
    assert told == f"{row.variant} {row.phase} on 18 vs 15: undecided", told
    decided = server_words(card.biggest, "fk-timing-restore").plain  # type: ignore[arg-type]
    assert decided.startswith("deferred total on 18 faster than on 15")


def test_the_card_text_names_each_server_and_counts_n_of_m() -> None:
    card = server_card(two_server_group())
    assert card is not None
    text = render_servers_card(card, "fk-timing-restore", 100).plain
    assert "2 of 2 servers finished (15, 18)" in text
    assert "deferred total on 18 vs 15  0.50× faster" in text
    on15, on18 = text.index("on 15\n"), text.index("on 18\n")
    assert on15 < on18
    for _, lines in card.servers:
        for line in lines:
            assert line.variant in text
    # each server's own deferred verdict, in its own block
    assert "deferred    2.3" in text[on15:on18] and "slower" in text[on15:on18]
    assert "undecided" in text[on18:].split("deferred", 1)[1].split("\n", 1)[0]


@pytest.mark.parametrize("size", [(100, 30), (160, 45)], ids=["100x30", "160x45"])
async def test_a_two_server_run_ends_on_a_card_and_a_server_headline(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    async with replay_app(tmp_path, FK_TIMING, present=True).run_test(size=size) as pilot:
        app = await finished(pilot)
        lab = app.lab
        lab.show_servers_card(two_server_group())
        await pilot.pause()
        card = lab.query_one(SummaryCard)
        assert card.display and card.servers is not None
        headline = lab.query_one(Headline)
        assert headline.display and lab.has_class("-card")
        assert headline.servers is card.servers
        text = squeezed("".join(screen_rows(app)))
        assert squeezed("deferred total on 18 faster than on 15") in text
        assert squeezed("2 of 2 servers finished") in text
        duration = lab.query_one(DurationPane)
        assert duration.max_scroll_y == 0, "the servers' card must fit its pane"
        assert squeezed("not-valid") in text.rsplit(squeezed("on 18"), 1)[1]
        big = headline.query_one("#headline-big")
        if size == (160, 45):
            assert big.region.height == 5
        else:
            assert not big.display
        # Escape: back to the bars, the headline goes with the card
        card.focus()
        await pilot.press("escape")
        await pilot.pause()
        assert not card.display and not headline.display


@pytest.mark.parametrize("size", [(160, 45), (100, 30)], ids=["160x45", "100x30"])
async def test_nothing_is_left_empty_under_the_servers_card(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    # At 160x45 the card was drawn in 15 rows of a 31-row pane, the rest left empty.
    async with replay_app(tmp_path, FK_TIMING, present=True).run_test(size=size) as pilot:
        app = await finished(pilot)
        lab = app.lab
        lab.show_servers_card(two_server_group())
        await pilot.pause(0.3)
        duration = lab.query_one(DurationPane)
        inside = duration.scrollable_content_region
        rows = [row[inside.x : inside.right] for row in rows_of(app)]
        drawn = rows[inside.y : inside.bottom]
        blank_tail = len(drawn) - max(n for n, row in enumerate(drawn) if row.strip()) - 1
        assert blank_tail <= 2, "\n".join(drawn)
        assert duration.max_scroll_y == 0, "the servers' card must fit its pane"


def test_a_narrow_card_keeps_each_total_with_its_unit() -> None:
    # At 120x36 the duration pane is 35 cells: `immediate  2.05× slower · 240` then `ms`.
    card = server_card(two_server_group())
    assert card is not None
    text = render_servers_card(card, "fk-timing-restore", 35).plain
    told = [line for line in text.split("\n") if line.rstrip().endswith((" s", " ms"))]
    assert len(told) == sum(len(lines) for _, lines in card.servers)
    assert all(len(line) <= 35 for line in told), told
    assert "  after-load\n    1.13× undecided · 2.69 s" in text
