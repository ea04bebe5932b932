"""Start-up styles the knob panel and the footer in the screen's own passes only (issue 39,
point 7: `pgwx` usable ≤ 1 s).

The knob panel was marked current after mounting, which restyled its ~90 nodes once more at
every start; the footer was made wide and then, at the first layout, compact (below 110
columns), each key restyled by itself as its class changed. Textual styles the whole screen a
couple of times as it starts anyway (on resume, and with the layout's classes). These tests
count the stylesheet's passes (no timing is asserted).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pytest
from textual.css.stylesheet import Stylesheet
from textual.dom import DOMNode
from textual.widgets._footer import FooterKey

from explorer.tui.widgets.knobs import KnobPanel
from tests.support.app import replay_app


@pytest.mark.parametrize("size", [(80, 24), (120, 36)])
async def test_start_up_styles_the_knobs_and_the_footer_in_the_screens_passes(
    tmp_path: Path, size: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    passes: list[set[int]] = []
    """The nodes of each call to the stylesheet, in order."""
    update_nodes = Stylesheet.update_nodes

    def counting(self: Stylesheet, nodes: Iterable[DOMNode], animate: bool = False) -> None:
        nodes = list(nodes)
        passes.append({id(node) for node in nodes})
        update_nodes(self, nodes, animate)

    monkeypatch.setattr(Stylesheet, "update_nodes", counting)
    async with replay_app(tmp_path, 165).run_test(size=size) as pilot:
        await pilot.pause(0.3)
        lab = pilot.app.lab
        screen = {id(node) for node in lab.walk_children(with_self=True)}
        panel = {id(node) for node in lab.query_one(KnobPanel).walk_children()}
        whole_screen = [p for p in passes if len(p & screen) >= len(screen) // 2]
        over_panel = [p for p in passes if len(p & panel) >= len(panel) // 2]
        assert whole_screen  # the count sees Textual's own passes
        assert over_panel == whole_screen, (size, len(over_panel), len(whole_screen))
        # No key of the footer styled by itself (old: each, as the footer turned compact).
        assert lab.query(FooterKey)
        one_key = [p for p in passes if len(p) == 1 and p not in whole_screen]
        keys = [p for p in one_key if p & {id(k) for k in pilot.app.query(FooterKey)}]
        assert keys == [], (size, len(keys))
