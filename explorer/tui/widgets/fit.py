"""Text laid out for the width it is given at render time."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rich.console import Console, ConsoleOptions, RenderResult
from rich.text import Text


class FitWidth:
    """A renderable built for the width it is given, so bars and legends never wrap badly.

    Args:
        build: Makes the text for a width in cells.
    """

    def __init__(self, build: Callable[[int], Text]) -> None:
        self.build = build

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.build(options.max_width)


def flow(items: Sequence[Text], width: int, gap: str = "  ") -> Text:
    """Items left to right, a new line where the next would not fit; never split one."""
    out = Text()
    used = 0
    for item in items:
        need = item.cell_len + (len(gap) if used else 0)
        if used and used + need > width:
            out.append("\n")
            used, need = 0, item.cell_len
        if used:
            out.append(gap)
        out.append_text(item)
        used += need
    return out
