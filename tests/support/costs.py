"""Counting the expensive things Textual does, for the tests that keep keys quick.

`layouts` counts full-screen layout passes, `restyled` the nodes the stylesheet is applied to,
`painted` the widgets the compositor asks for their lines; each returns the list it fills,
from the moment it is called (monkeypatched, so undone at the test's end). `full_passes`
counts Python's full (generation 2) collections, `make_garbage_until` makes the young ones
come as they do in the app.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import pytest
from textual.app import App
from textual.css.stylesheet import Stylesheet
from textual.dom import DOMNode
from textual.geometry import Region
from textual.screen import Screen
from textual.strip import Strip
from textual.widget import Widget

T = TypeVar("T")


def screen_updates(
    monkeypatch: pytest.MonkeyPatch, record: Callable[[App[object], Screen[object], Any], T | None]
) -> list[T]:
    """What `record` makes of each screen update handed to the terminal from now on (the app,
    the screen, the update); updates it makes None of are left out."""
    seen: list[T] = []
    display = App._display

    def kept(self: App[object], screen: Screen[object], renderable: Any) -> None:
        display(self, screen, renderable)
        if renderable is not None and (made := record(self, screen, renderable)) is not None:
            seen.append(made)

    monkeypatch.setattr(App, "_display", kept)
    return seen


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


@contextmanager
def full_passes(events: list[str] | None = None) -> Iterator[list[int]]:
    """A 1 appended as each full (generation 2) collection starts, by Python or by pgwx;
    and "pass" to `events`, for a test that orders them among its own."""
    started: list[int] = []

    def seen(phase: str, info: dict[str, Any]) -> None:
        if phase == "start" and info["generation"] == 2:
            started.append(1)
            if events is not None:
                events.append("pass")

    gc.callbacks.append(seen)
    try:
        yield started
    finally:
        gc.callbacks.remove(seen)


def make_garbage_until(condition: Callable[[], object]) -> None:
    """Cyclic garbage (each cycle waits for a collection) and objects that live on, as in the
    app, until `condition()`: the young generations' passes follow, and what survives them is
    what makes Python start a full pass."""
    kept: list[object] = []
    for _ in range(2000):
        if condition():
            return
        for n in range(1000):
            cycle: list[object] = [n]
            cycle.append(cycle)
            if n % 4 == 0:
                kept.append(cycle)
    raise AssertionError("the condition never came")
