"""A real run on two servers ends on the servers' card, drawn (issue 39): PG 15 and PG 18 take
turns through the app's `m` in the presenter layout at 160x45, and the screen — not the card's
builder — shows the biggest verdict between the servers in the headline and on the card, each
server's block, `2 of 2 servers finished`, no rows left empty under the card; Enter opens the
table with the pair's row, whole at 120x36 too.
"""

from __future__ import annotations

import re

import pytest

from explorer.lab.store.results import ResultStore
from explorer.models import Knobs, TableKind, Variant
from explorer.server.connect import Target
from explorer.tui.app import PgwxApp
from explorer.tui.widgets.duration import DurationPane
from explorer.tui.widgets.headline import Headline
from explorer.tui.widgets.results_table import ResultsTable
from tests.support.app import matrix_to_servers_card, rows_of, wait_for
from tests.support.runs import small_profile

pytestmark = pytest.mark.pg15

PROFILE = small_profile(
    "table-kind",
    [Variant(name="logged"), Variant(name="unlogged", knobs=Knobs(table_kind=TableKind.UNLOGGED))],
    rows=500,
    repeats=2,
).model_copy(update={"warmup": 0})
"""Two variants, two rounds on each server: a pair verdict per variant, quickly."""


async def test_a_two_server_run_ends_on_its_card_as_drawn(
    pg15: Target, pg18: Target, store: ResultStore
) -> None:
    app = PgwxApp(servers=[pg15, pg18], store=store, profiles=[PROFILE], present=True)
    async with app.run_test(size=(160, 45)) as pilot:
        lab = app.lab
        card = await matrix_to_servers_card(pilot, lab)
        told = card.servers
        assert told is not None and told.biggest is not None
        big = told.biggest
        pair = f"{big.variant} {big.phase} on 18 vs 15"
        assert big.server == "18" and big.reference == "15"
        screen = rows_of(app)
        # The card, as drawn in the duration pane: the pair's verdict and each server's block.
        duration = lab.query_one(DurationPane)
        inside = duration.scrollable_content_region
        drawn = [row[inside.x : inside.right] for row in screen[inside.y : inside.bottom]]
        text = "\n".join(drawn)
        assert "2 of 2 servers finished (15, 18)" in text, text
        assert f"{pair}  {big.verdict.short_label()}" in text, text
        assert any(row.strip() == "on 15" for row in drawn) and any(
            row.strip() == "on 18" for row in drawn
        ), text
        for variant in ("logged", "unlogged"):
            assert sum(bool(re.match(rf"\s+{variant}\s", row)) for row in drawn) >= 2, text
        last = max(n for n, row in enumerate(drawn) if row.strip())
        assert len(drawn) - last - 1 <= 2, f"rows left empty under the card:\n{text}"
        # The headline above the panes tells the same pair in big digits.
        headline = lab.query_one(Headline)
        assert headline.display and headline.servers is told
        top = "\n".join(screen[headline.region.y : headline.region.bottom])
        first = f"{big.variant} {big.phase} on 18 "
        assert first in top and " 15" in top.split(first, 1)[1].split("\n", 1)[0], top
        # Enter: the table, with the pair's row; whole at 120x36 as well.
        await pilot.press("enter")
        await pilot.pause(0.3)
        await pilot.press("P")  # the usual panes again
        await pilot.resize_terminal(120, 36)
        await pilot.pause(0.8)
        table = lab.query_one(ResultsTable)
        shown = rows_of(app)[table.region.y : table.region.bottom]
        assert any(re.search(r"logged @ 15 +insert +2 ", row) for row in shown), "\n".join(shown)
        rows = [table.get_row_at(n) for n in range(table.row_count)]
        assert any(str(r[0]) == f"{big.variant} on 18 vs 15" for r in rows)
        await pilot.press("q")
        await wait_for(pilot, lambda: not app.is_running, 60)
