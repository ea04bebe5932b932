"""The top line: which server (password masked), its version, what it can do, the run."""

from __future__ import annotations

from rich.text import Text
from textual.geometry import Region
from textual.reactive import reactive
from textual.widget import Widget

from explorer.models import Capabilities

UNDO_PENDING = "settings left changed by an interrupted run"
"""What the header says while a journal still holds server settings to put back."""


def badges(
    caps: Capabilities | None,
    bundled: bool,
    *,
    short: bool = False,
    owned_as: str = "bundled",
    missing_only: bool = False,
) -> Text:
    """lz4 ✓ · pg_stat_io ✓ · superuser ✓ · bundled — ✓/✗ read without colour too.

    `owned_as` names a server pgwx owns: "bundled", or "owned" for one made with another
    installed PostgreSQL (`--pg 15`). `missing_only` keeps only the ✗ badges (what the server
    lacks matters more than what it has), for a header short of room."""
    text = Text()
    if caps is None:
        return text

    def badge(name: str, ok: bool, why: str = "") -> None:
        if ok and missing_only:
            return
        if text:
            text.append(" · ", style="dim")
        text.append(f"{name} ")
        text.append("✓" if ok else "✗", style="bold green" if ok else "bold red")
        if why and not ok:
            text.append(f" {why}", style="dim")

    badge("lz4", caps.lz4, "not built" if caps.major >= 14 and not short else "")
    badge("pg_stat_io", caps.pg_stat_io != "none")
    badge("superuser", caps.superuser)
    text.append(" · ", style="dim")
    text.append(owned_as if bundled else "external", style="bold")
    return text


def first_difference(old: Text, new: Text) -> int:
    """The cell where `new` first differs from `old`, in characters or in style."""
    at = next(
        (i for i, (a, b) in enumerate(zip(old.plain, new.plain, strict=False)) if a != b),
        min(len(old.plain), len(new.plain)),
    )
    for a, b in zip(old.spans, new.spans, strict=False):
        if a != b:
            at = min(at, a.start, b.start)
            break
    else:
        if len(old.spans) != len(new.spans):
            longer = old.spans if len(old.spans) > len(new.spans) else new.spans
            at = min(at, longer[min(len(old.spans), len(new.spans))].start)
    return new[:at].cell_len


def short_run(run: str, width: int) -> Text:
    """'quick-demo 2/6 running' in `width` cells, the profile name cut first ("fk-ti… 2/6
    running"): the count and the status are what the line is for."""
    name, _, rest = run.partition(" ")
    keep = width - len(rest) - 2
    if len(run) > width and rest and keep >= 1:
        run = f"{name[:keep]}… {rest}"
    text = Text(run, style="bold")
    text.truncate(width, overflow="ellipsis")
    return text


class ServerHeader(Widget):
    """Server label, version and capability badges on the left; the run on the right.

    Uses two lines when the stylesheet gives it two rows and one is too narrow. When the
    server could not be reached it grows to show the whole sentence under the first line.
    """

    DEFAULT_CSS = """
    ServerHeader {
        height: 1;
        background: $panel;
        color: $foreground;
        padding: 0 1;
    }
    """

    label: reactive[str] = reactive("connecting…")
    """The server as Target.label() shows it (never with a password)."""
    servers: reactive[str] = reactive("")
    """Before the label, when there are several servers: 'm on 15 + 18 · r on 15', or empty."""
    caps: reactive[Capabilities | None] = reactive(None)
    """What the server can do, once probed."""
    bundled: reactive[bool] = reactive(False)
    """pgwx started this server."""
    run: reactive[str] = reactive("", repaint=False)
    """'quick-demo 2/6 · running', or empty (repaints only its own cells: `watch_run`)."""
    failure: reactive[str] = reactive("", layout=True)
    """Why the server could not be reached or opened (one sentence), or empty."""
    undo_pending: reactive[bool] = reactive(False)
    """An interrupted run left server settings changed and they are not put back yet."""
    retry_key: str = "R"
    """The key that tries the server again, named in the failure line."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._drawn: list[Text] = []
        """The lines last rendered (none while a failure is shown)."""

    def watch_failure(self, failure: str) -> None:
        """Grow to hold the sentence; back to the stylesheet's height once connected."""
        self.styles.height = "auto" if failure else None

    def watch_run(self, _old: str, _new: str) -> None:
        """Repaint only the cells that changed: from the first changed one to the line's end.

        The run changes with every trial; repainting the whole header for it sent both
        lines, badges and all, down the wire each time (a tenth of a matrix's bytes at
        80x24). Anything but a change within the same lines repaints the whole header.
        """
        if not self.is_mounted:
            return
        region = self.content_region
        before = self._drawn
        after = [] if self.failure else self._lines(region.width, region.height)
        if not before or len(before) != len(after):
            self.refresh()
            return
        for y, (old, new) in enumerate(zip(before, after, strict=True)):
            if old.plain == new.plain and old.spans == new.spans:
                continue
            x = first_difference(old, new)
            self.refresh(Region(x, y, max(region.width - x, 1), 1))

    def _left(self) -> Text:
        text = Text()
        text.append("pgwx", style="bold")
        text.append(" ─ ", style="dim")
        if self.failure:
            # First, so a long label cut to the width never hides it.
            text.append("✗ not connected", style="bold red")
            text.append(" ─ ", style="dim")
        if self.servers:
            text.append(self.servers, style="bold")
            text.append(" ─ ", style="dim")
        text.append(self.label)
        if self.caps is not None and "PostgreSQL" not in self.label:
            text.append(f" ─ PostgreSQL {self.caps.version}")
        return text

    def _right(
        self, short: bool = False, *, missing_only: bool = False, badges_: bool = True
    ) -> Text:
        text = Text()
        if self.undo_pending:
            text.append(f"⚠ {UNDO_PENDING}", style="bold yellow")
            if self.caps is not None:
                text.append("  ")
        # Owned labels start "bundled PostgreSQL …" or "PostgreSQL 15.20 from /usr/lib/…".
        owned_as = "owned" if self.label.startswith("PostgreSQL ") else "bundled"
        if badges_:
            text.append_text(
                badges(
                    self.caps,
                    self.bundled,
                    short=short,
                    owned_as=owned_as,
                    missing_only=missing_only,
                )
            )
        if self.run:
            if text:
                text.append("  ")
            text.append(self.run, style="bold")
        return text

    def _lines(self, width: int, height: int) -> list[Text]:
        left, right = self._left(), self._right()
        if height >= 2 and left.cell_len + right.cell_len + 2 > width:
            left.truncate(width, overflow="ellipsis")
            return [left, self._fitted_right(width)]
        # One row: the server label gives way first (down to 12 cells), then the badges.
        right = self._fitted_right(max(width - 14, 1))
        room = max(width - right.cell_len - 2, 12)
        left.truncate(room, overflow="ellipsis")
        gap = max(width - left.cell_len - right.cell_len, 1)
        line = Text.assemble(left, " " * gap, right)
        line.truncate(width, overflow="ellipsis")
        return [line]

    def _fitted_right(self, width: int) -> Text:
        """Badges and the run in `width` cells (line 2, or the right of line 1), sized to fit
        rather than cut: the
        badges shortened ("lz4 ✗"), then only what the server lacks, then none; the run's
        numbers and status are never cut ("155/155 finished"), a long profile name is."""
        for right in (
            self._right(),
            self._right(short=True),
            self._right(short=True, missing_only=True),
            self._right(badges_=False),
        ):
            if right.cell_len <= width:
                return right
        return short_run(self.run, width)

    def render(self) -> Text:
        """The header: one line when it fits (or when given one row), else two."""
        region = self.content_region
        if self.failure:
            # The sentence stays on screen whole (the log scrolls it away at 80x24).
            self._drawn = []
            first = self._lines(region.width, 1)
            why = Text(f"{self.failure} — press {self.retry_key} to try again", style="red")
            return Text("\n").join([*first, why])
        self._drawn = self._lines(region.width, region.height)
        return Text("\n").join(self._drawn)
