"""`?` styles the help's text once (issue 39, point 7: usable ≤ 1 s is `?` answered).

The help's scrolling frame takes the focus as it opens; Textual restyles a widget and all its
descendants on a focus change, so the Markdown under it (~170 nodes) was styled twice, a third
of what `?` cost. The stylesheet's passes are counted (no time is asserted).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pytest
from textual.css.stylesheet import Stylesheet
from textual.dom import DOMNode
from textual.widgets import Markdown

from explorer.tui.screens.help import HelpScreen
from tests.support.app import replay_app


async def test_the_help_is_styled_once_as_it_opens(
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
        text = {id(n) for n in help_screen.query_one(Markdown).walk_children(with_self=True)}
        assert len(text) > 50
        over_text = [p for p in passes if len(p & text) >= len(text) // 2]
        assert len(over_text) == 1, [len(p & text) for p in over_text]
