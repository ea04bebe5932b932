"""`?` draws the help as one widget, styled once (issue 39, point 7: usable ≤ 1 s is `?` answered).

The help was Textual's Markdown widget: ~170 widgets to mount, style and lay out, and the
help's scrolling frame, focused as it opens, had Textual restyle all of them a second time —
~160 ms of CPU for `?`, the larger part of `pgwx` started to a key answered after the first
frame. Now its text is one widget (`HelpText`) drawn with hanging indents. The widgets and the
stylesheet's passes are counted, the text read as the terminal shows it (no time is asserted).
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import pairwise
from pathlib import Path

import pytest
from textual.css.stylesheet import Stylesheet
from textual.dom import DOMNode

from explorer.tui.screens.help import HelpScreen, HelpText
from tests.support.app import replay_app, rows_of


async def test_the_help_is_one_widget_styled_once_as_it_opens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    passes: list[set[int]] = []
    update_nodes = Stylesheet.update_nodes

    def counting(self: Stylesheet, nodes: Iterable[DOMNode], animate: bool = False) -> None:
        nodes = list(nodes)
        passes.append({id(node) for node in nodes})
        update_nodes(self, nodes, animate)

    async with replay_app(tmp_path, 40).run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.3)
        monkeypatch.setattr(Stylesheet, "update_nodes", counting)
        await pilot.press("?")
        await pilot.pause(0.5)
        help_screen = pilot.app.screen
        assert isinstance(help_screen, HelpScreen)
        body = help_screen.query_one("#help-body")
        assert body.has_focus  # the keys scroll it at once
        inside = list(body.walk_children(with_self=True))
        assert len(inside) <= 4, [type(n).__name__ for n in inside]  # frame, text, scrollbars
        text = help_screen.query_one(HelpText)
        assert sum(id(text) in p for p in passes) == 1

        # Drawn as a list: a bullet, the key, its label, and a wrapped line under the text.
        rows = [row.strip("│ ") for row in rows_of(pilot.app)]
        assert "Keys" in rows[2], rows[:4]
        assert any(row.startswith("• space Pause — Pause or resume the replay") for row in rows)
        assert "**" not in "".join(rows) and "`" not in "".join(rows)  # the marks drawn

        def wrapped_item() -> tuple[str, str] | None:
            rows = rows_of(pilot.app)
            for row, below in pairwise(rows):
                if row.strip("│ ").startswith("• i pg_stat_io operations/s"):
                    # With the line under it in the frame too.
                    return (row.strip("│"), below.strip("│")) if below[0] == "│" else None
            return None

        for _ in range(120):  # down to the chart's list, a line at a time
            if wrapped_item() is not None:
                break
            await pilot.press("down")
            await pilot.pause(0.02)
        found = wrapped_item()
        assert found is not None, rows_of(pilot.app)
        item, under = found
        indent = item.index("•") + 2
        assert under[:indent].strip() == "" and under[indent] != " ", (item, under)
