"""Counting the expensive things Textual does, for the tests that keep keys quick.

`layouts` counts full-screen layout passes, `restyled` the nodes the stylesheet is applied to,
`painted` the widgets the compositor asks for their lines; each returns the list it fills,
from the moment it is called (monkeypatched, so undone at the test's end).
"""

from __future__ import annotations

from collections.abc import Iterable

import pytest
from textual.css.stylesheet import Stylesheet
from textual.dom import DOMNode
from textual.geometry import Region
from textual.screen import Screen
from textual.strip import Strip
from textual.widget import Widget


def layouts(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A 1 appended for each layout pass of a screen."""
    passes: list[int] = []
    refresh_layout = Screen._refresh_layout

    def counting(self: Screen[object], *args: object, **kwargs: object) -> None:
        passes.append(1)
        refresh_layout(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Screen, "_refresh_layout", counting)
    return passes


def restyled(monkeypatch: pytest.MonkeyPatch) -> list[DOMNode]:
    """Each node the stylesheet is applied to, as it is."""
    nodes_seen: list[DOMNode] = []
    update_nodes = Stylesheet.update_nodes

    def counting(self: Stylesheet, nodes: Iterable[DOMNode], animate: bool = False) -> None:
        nodes = list(nodes)
        nodes_seen.extend(nodes)
        update_nodes(self, nodes, animate)

    monkeypatch.setattr(Stylesheet, "update_nodes", counting)
    return nodes_seen


def painted(monkeypatch: pytest.MonkeyPatch) -> list[Widget]:
    """Each widget whose lines are asked for (a call per widget per screen update)."""
    widgets: list[Widget] = []
    render_lines = Widget.render_lines

    def counting(self: Widget, crop: Region) -> list[Strip]:
        widgets.append(self)
        return render_lines(self, crop)

    monkeypatch.setattr(Widget, "render_lines", counting)
    return widgets
