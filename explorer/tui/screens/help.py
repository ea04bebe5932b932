"""The help screen: the keys that apply here, what each pane shows, why some counters land late.

The lab hands it the keys of its session only (`LabKey.applies`): a live session does not
list the replay's keys, a replay does not list the run's, and no key is listed twice.

The text is written in a small part of Markdown (`## ` headings, `- ` lists, `**bold**`,
`*italic*`, `` `keys` ``) and drawn as one widget (`HelpText`). Textual's Markdown widget drew
it as ~170 widgets and brought markdown-it, pygments and linkify (~130 modules): `?` took
~160 ms of CPU, the half of `pgwx` started to a key answered that came after the first frame.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from rich.console import Group, RenderableType
from rich.style import Style
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Footer

from explorer.tui.keys import LabKey
from explorer.tui.restyle import restyle
from explorer.tui.widgets.activity import FLUSH_NOTE

PANES = f"""
## What the panes show

**Knobs** — the workload (a profile), its size, and the knobs of the variant that
**r** runs. A choice the server cannot do is struck through, cannot be picked, and
the line under it says why (lz4 not built in, a restart-only setting on a server pgwx does
not own, fsync off on someone else's server). `⟳` marks a setting that needs a restart:
pgwx restarts its bundled server for it.

**Duration** — the trial in flight: variant, repeat, phase, elapsed time, and progress
(rows from `pg_stat_progress_copy`, blocks from CREATE INDEX / VACUUM progress, else the
table's size). As trials finish, one bar per variant: the median of the phase, with the
spread (min–max) as `╌`. **p** shows the next phase.

**Server activity** — one chart, three views (four for a sweep):
- **l** WAL MiB/s from `pg_current_wal_insert_lsn()`: moves even during one long statement.
- **i** `pg_stat_io` operations/s (writes, extends, fsyncs) by backend type.
  *The mode line says it:* **{FLUSH_NOTE}** — a backend publishes its I/O counters when
  it goes idle (at most once a second), so one long COPY shows up when it ends.
  Background processes (checkpointer, bgwriter) report as they go. Not on PG 15.
- **w** wait events of the workload's own backends, stacked: how many of them sat in
  each wait, on average, per sample (`CPU` = running, no wait).
- **v** a sweep of one setting (`--sweep`, or a profile's `sweep`): each value's time ratio
  to the first with its interval, beside it checkpoints, full-page images and WAL per trial
  (each as a share of its largest; the numbers under the charts).

**Results** — `min / median / max` seconds per variant and phase and a verdict against
the baseline: Hodges–Lehmann ratio `[interval]` (95 % for the whole table) and one word —
**faster** / **slower** when the interval excludes 1 and the ratio beats the noise
threshold, `same within ±3 %` when the whole interval lies inside it, `undecided` otherwise
(`too few runs` below 5; warm-ups not counted), then WAL, relation extensions and the top
wait. The duration pane draws each interval over its bar. **e** writes it as markdown
under the results directory; the log says where. **4** focuses the table: **↑** **↓** pick a
row, and the lines under the table give that row's mechanism (WAL, full-page images,
writes, extends, fsyncs, waits); **←** **→** scroll the columns a narrow terminal cannot show.

**Log** — knobs applied and undone, server restarts, failures, in one sentence each.

At 80 columns the panes become tabs: **1**–**4** show a pane and focus its main widget
(the workload choice, the bars or the end card, the chart, the results table), **tab** /
**shift+tab** move between the widgets on screen. The footer keeps **?** and **q** at its
right end and leaves out what does not fit (p, e, s first): they are all listed above.
Everything works from the keyboard; the mouse is optional.
"""


def keys_table(keys: Sequence[LabKey], replay: bool = False) -> str:
    """A markdown list of the keys: key, action, what it does (in this session)."""
    lines = ["## Keys", ""]
    shown: set[str] = set()
    for key in keys:
        if key.shown in shown:
            continue  # one line per key (the session's own meaning of it)
        shown.add(key.shown)
        lines.append(f"- `{key.shown}` **{key.label}** — {key.says(replay)}")
    lines.append("- `ctrl+p` **Command palette** — every action, searchable")
    return "\n".join(lines)


INLINE = re.compile(r"\*\*(.+?)\*\*|\*(.+?)\*|`([^`]+)`")
"""`**bold**`, `*italic*`, `` `a key` `` inside a line of the help."""


def inline(line: str, key: Style) -> Text:
    """A line of the help with its marks drawn (and taken out)."""
    text = Text()
    at = 0
    for mark in INLINE.finditer(line):
        text.append(line[at : mark.start()])
        bold, italic, code = mark.groups()
        if bold is not None:
            text.append(bold, "bold")
        elif italic is not None:
            text.append(italic, "italic")
        else:
            text.append(code, key)
        at = mark.end()
    text.append(line[at:])
    return text


def blocks(source: str) -> list[tuple[str, list[str]]]:
    """The help's text as blocks: ("heading", [title]), ("para", [its lines joined]), ("list",
    [an item each]). Blocks are parted by blank lines or a change of kind; a list item and a
    paragraph go on over the lines under them."""
    out: list[tuple[str, list[str]]] = []
    for chunk in source.strip().split("\n\n"):
        kind = ""  # of the block this chunk is making
        for line in chunk.splitlines():
            if line.startswith("## "):
                kind = "heading"
                out.append((kind, [line[3:].strip()]))
            elif line.startswith("- "):
                if kind == "list":
                    out[-1][1].append(line[2:].strip())
                else:
                    kind = "list"
                    out.append((kind, [line[2:].strip()]))
            elif kind in ("list", "para"):
                out[-1][1][-1] += " " + line.strip()
            else:
                kind = "para"
                out.append((kind, [line.strip()]))
    return out


def help_text(source: str, colours: Mapping[str, str]) -> RenderableType:
    """The help drawn for a terminal: headings, paragraphs, lists with hanging indents, a
    blank line between blocks (none under a heading)."""
    key = Style(color=colours.get("text-accent"), bgcolor=colours.get("surface-lighten-1"))
    heading = Style(color=colours.get("markdown-h2-color"), bold=True, underline=True)
    bullet = Style(color=colours.get("markdown-h2-color"))
    parts: list[RenderableType] = []
    after = ""
    for kind, lines in blocks(source):
        if after and after != "heading":
            parts.append(Text())
        after = kind
        if kind == "heading":
            parts.append(Text(lines[0], heading))
        elif kind == "para":
            parts.append(inline(lines[0], key))
        else:
            items = Table.grid(padding=0)
            items.add_column(width=2, no_wrap=True)
            items.add_column(ratio=1)
            for item in lines:
                items.add_row(Text("• ", bullet), inline(item, key))
            parts.append(items)
    return Group(*parts)


class HelpText(Widget):
    """The help's text, one widget (see the module's docstring).

    Args:
        source: The text, in the help's part of Markdown (read back by the tests).
    """

    DEFAULT_CSS = """
    HelpText {
        height: auto;
    }
    """

    def __init__(self, source: str) -> None:
        super().__init__()
        self.source = source

    def render(self) -> RenderableType:
        """Headings, paragraphs and lists, in the theme's colours."""
        return help_text(self.source, self.app.theme_variables)


class HelpBody(VerticalScroll):
    """The help's scrolling frame: its focus restyles the frame alone.

    Focused as the help opens, Textual's `watch_has_focus` styled everything under it a second
    time (a third of what `?` cost with the Markdown widget's ~170 nodes); no rule styles the
    text by the frame's focus, only the frame itself (its border and scrollbar)."""

    def watch_has_focus(self, _has_focus: bool) -> None:
        restyle(self)


class HelpScreen(ModalScreen[None]):
    """Keys and panes, over the main screen.

    Args:
        keys: The main screen's keys that apply in its session, from its key table, so the
            list cannot drift from the keys.
    """

    TITLE = "pgwx — the PostgreSQL write path, live"
    """The border title."""
    REPLAY_TITLE = "pgwx — a recorded run, replayed (no server)"
    """The border title in a replay."""

    DEFAULT_CSS = """
    HelpScreen {
        align: center middle;
    }
    HelpScreen #help-body {
        width: 100;
        max-width: 100%;
        height: 90%;
        border: round $border;
        background: $surface;
        padding: 0 1;
    }
    """

    BINDINGS = [
        Binding(
            "escape,q,question_mark", "dismiss", "Close", id="help.close", tooltip="Back to the lab"
        ),
    ]

    def __init__(self, keys: Sequence[LabKey], *, replay: bool = False) -> None:
        super().__init__()
        self._lab_keys = keys
        self._replay = replay

    def compose(self) -> ComposeResult:
        """The help text."""
        with HelpBody(id="help-body") as body:
            body.border_title = self.REPLAY_TITLE if self._replay else self.TITLE
            yield HelpText(keys_table(self._lab_keys, self._replay) + "\n" + PANES)
        yield Footer()

    def on_mount(self) -> None:
        """Scroll with the keyboard at once."""
        self.query_one("#help-body").focus()

    async def action_dismiss(self, result: None = None) -> None:
        """Close the help."""
        self.dismiss(result)
