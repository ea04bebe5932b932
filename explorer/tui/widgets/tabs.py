"""The pane tabs of narrow and short terminals: the four panes' names, the current one lit
and underlined, in one widget.

Textual's `Tabs` is six widgets (the bar, a tab per pane, the underline): each pane key on
an 80x24 terminal restyled the old and the new tab, repainted every tab, the bar and the
underline, and went through a message to show the pane — ~5 ms of a key's ~40. This bar is
drawn in one pass, and only when the current pane changes. It takes no focus: `1`–`4`
choose a pane, and a click on a name says `Chosen` (the lab goes there as the pane's key
does).
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.message import Message
from textual.reactive import reactive
from textual.strip import Strip
from textual.widget import Widget

from explorer.tui.glyphs import ascii_mode


class PaneTabs(Widget):
    """The panes' names on one row, under them a rule marked under the current one."""

    DEFAULT_CSS = """
    PaneTabs {
        height: 2;
    }
    PaneTabs > .pane-tabs--tab {
        color: $foreground 50%;
    }
    PaneTabs > .pane-tabs--current {
        color: $foreground;
        text-style: bold;
    }
    PaneTabs > .pane-tabs--rule {
        color: $foreground 15%;
    }
    PaneTabs > .pane-tabs--mark {
        color: $block-cursor-background;
    }
    PaneTabs:ansi > .pane-tabs--tab {
        text-style: dim;
    }
    PaneTabs:ansi > .pane-tabs--current {
        text-style: not dim bold;
    }
    PaneTabs:ansi > .pane-tabs--rule {
        color: $border-blurred;
    }
    """

    COMPONENT_CLASSES = {
        "pane-tabs--tab",
        "pane-tabs--current",
        "pane-tabs--rule",
        "pane-tabs--mark",
    }

    ALLOW_SELECT = False

    class Chosen(Message):
        """A pane's name was clicked."""

        def __init__(self, pane: str) -> None:
            super().__init__()
            self.pane = pane

    active: reactive[str] = reactive("")
    """The current pane's name (one of `panes`)."""

    def __init__(self, panes: Sequence[str], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.panes = tuple(panes)
        """The panes, in order; each is shown by its name, title-cased."""
        self._labels = tuple(f" {pane.title()} " for pane in self.panes)
        """Each pane's name as shown, a space either side."""
        self.set_reactive(PaneTabs.active, self.panes[0])
        self._drawn: tuple[object, list[Strip]] | None = None
        """(what the rows were drawn for, the rows): see `render_line`."""

    def validate_active(self, pane: str) -> str:
        """Only a pane of the bar can be current."""
        if pane not in self.panes:
            raise ValueError(f"no pane {pane!r} among {self.panes}")
        return pane

    def render_line(self, y: int) -> Strip:
        """Row 1: ` Knobs  Duration  Activity  Results `, the current name lit; row 2: a
        rule, heavy and coloured under the current name, light elsewhere (so the mark shows
        without colour, and in ASCII: `=` on `-`). Drawn as segments, once per pane, width
        and look: through a Text, Textual took ~1.5 ms for the two rows."""
        base = self.rich_style
        key = (self.active, self.size.width, self.app.theme, base, ascii_mode())
        if self._drawn is None or self._drawn[0] != key:
            self._drawn = (key, self._draw(base))
        rows = self._drawn[1]
        return rows[y] if 0 <= y < len(rows) else Strip.blank(self.size.width, base)

    def _draw(self, base: Style) -> list[Strip]:
        tab, current, rule, mark = (
            base + self.get_component_rich_style(f"pane-tabs--{part}")
            for part in ("tab", "current", "rule", "mark")
        )
        heavy, light = ("=", "-") if ascii_mode() else ("━", "─")  # apart without colour
        names: list[Segment] = []
        under: list[Segment] = []
        for pane, label in zip(self.panes, self._labels, strict=True):
            here = pane == self.active
            names.append(Segment(label, current if here else tab))
            under.append(Segment((heavy if here else light) * len(label), mark if here else rule))
        width = self.size.width
        under.append(Segment(light * max(0, width - sum(len(s.text) for s in under)), rule))
        return [Strip(row).adjust_cell_length(width, base).crop(0, width) for row in (names, under)]

    def on_click(self, event: events.Click) -> None:
        """A click on a pane's name (either row) chooses that pane."""
        x = event.x
        for pane, label in zip(self.panes, self._labels, strict=True):
            if 0 <= x < len(label):
                self.post_message(self.Chosen(pane))
                return
            x -= len(label)
