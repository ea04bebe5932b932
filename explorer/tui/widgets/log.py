"""The lab's log: the run's story, one line per event, re-wrapped when the terminal resizes."""

from __future__ import annotations

from collections import deque

from rich.console import RenderableType
from rich.text import Text
from textual import events
from textual.geometry import Size
from textual.reactive import Reactive
from textual.widgets import RichLog


class LabLog(RichLog):
    """A RichLog that re-wraps its lines on resize and stays quiet on the wire.

    A line given a `hang` wraps under its message, not at column 0: the run clock and the
    mark stay a column of their own (`  44.1s · connected … at /tmp/…` then the rest of the
    path indented under "connected").

    RichLog wraps a line once, at the width it had when written; this one keeps what was
    written and writes it again at the new width. It never shows a horizontal scrollbar
    (lines wrap), and a layout pass elsewhere on the screen does not repaint its scrollbar
    when its own size did not change (Textual would, on every pass).

    Args:
        max_lines: Lines kept (older ones are dropped).
        id: Widget id.
    """

    DEFAULT_CSS = """
    LabLog {
        overflow-x: hidden;
    }
    """

    virtual_size: Reactive[Size] = Reactive(Size(0, 0), layout=False)
    """As on every widget, but a line written does not lay the whole screen out again: the
    log's own size is fixed, so only its scrollbar follows (a layout pass costs 10-30 ms,
    and a key pressed meanwhile waits; a run logs a line or two a second). A scrollbar that
    appears or goes still asks for a layout, as it takes a column."""

    def watch_virtual_size(self, size: Size) -> None:
        """Scroll range and scrollbar for the new size (what a layout pass would do)."""
        self._scroll_update(size)

    def __init__(self, *, max_lines: int = 1000, id: str | None = None) -> None:
        # min_width 1: RichLog's default (78) renders wider than an 80-column log and
        # costs a row to a horizontal scrollbar.
        super().__init__(id=id, wrap=True, markup=False, max_lines=max_lines, min_width=1)
        self._written: deque[tuple[RenderableType, int]] = deque(maxlen=max_lines)
        self._wrapped_at = 0
        self._pending: list[tuple[RenderableType, int]] = []

    def add(self, content: RenderableType, *, defer: bool = False, hang: int = 0) -> None:
        """Append a line (kept, so that a resize can wrap it again).

        Args:
            content: The line.
            defer: Hold it until `flush()` (the screen's next refresh tick): several lines
                then scroll the log once, one repaint instead of one per line.
            hang: Cells of a Text line's start (clock and mark) that its wrapped rows are
                indented by.
        """
        self._pending.append((content, hang))
        if not defer:
            self.flush()

    def reset(self) -> None:
        """Forget every line, shown, kept or held (a replay jump retells the story)."""
        self._written.clear()
        self._pending.clear()
        self.clear()

    def flush(self) -> None:
        """Write the held lines, in order."""
        pending, self._pending = self._pending, []
        for content, hang in pending:
            self._written.append((content, hang))
            width = self._width()
            self.write(self._hung(content, hang, width), width=width)

    def _hung(self, content: RenderableType, hang: int, width: int | None) -> RenderableType:
        """The line wrapped to `width` with its rows after the first indented by `hang`."""
        if not isinstance(content, Text) or not hang or width is None:
            return content
        if content.cell_len <= width or width - hang < 20:
            return content  # fits, or too narrow to spare the indent
        head, body = content[:hang], content[hang:]
        rows = body.wrap(self.app.console, width - hang, overflow="fold")
        out = head.copy()
        for n, row in enumerate(rows):
            if n:
                out.append("\n" + " " * hang)
            out.append_text(row)
        return out

    def _width(self) -> int | None:
        """The width lines wrap to: the log's own (the console's may be another)."""
        width = self.scrollable_content_region.width
        return width if width > 0 else None

    def on_resize(self, event: events.Resize) -> None:
        """Wrap every kept line again at the new width."""
        width = event.size.width
        if width == self._wrapped_at or not self._written:
            self._wrapped_at = width
            return
        self._wrapped_at = width
        # After this refresh: the content region the lines wrap to is settled by then.
        self.call_after_refresh(self._rewrap)

    def _rewrap(self) -> None:
        kept = list(self._written)
        self.clear()
        width = self._width()
        for content, hang in kept:
            self.write(self._hung(content, hang, width), width=width, scroll_end=True)

    def _size_updated(
        self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True
    ) -> bool:
        # `size` is the outer size (padding included), as Textual keeps it in `_size`;
        # compared with `self.size` (the content's) it never matched, so every layout pass
        # of a tab switch went on to redo the log's scroll state.
        if size == self._size and container_size == self.container_size:
            # The log sets its own virtual size as lines arrive; a layout pass of another
            # widget would only repaint the scrollbar with nothing changed.
            return False
        return super()._size_updated(size, virtual_size, container_size, layout)
