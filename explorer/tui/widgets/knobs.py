"""The knob panel: the profile, its size, and the knobs of the variant that `r` runs.

A choice the server cannot do stays in the list, struck through and disabled, and the row
says why under it (and in its tooltip), so the user learns what their server lacks.

While a run or a replay owns the server the choices cannot change: the panel then shows the
same rows as one read-only text (no list arrows) in place of its ~60 widgets, so a key that
shows the panel mid-run lays out and paints one widget, and the run's start and end do not
restyle every list.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from functools import partial
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.css.query import NoMatches
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import Checkbox, Label, OptionList, Select, Static

from explorer.lab.profiles.availability import unavailable_reason
from explorer.lab.workloads import build_workload
from explorer.models import Capabilities, FkTiming, Knobs, Profile, TableKind, Toast
from explorer.tui.glyphs import glyph
from explorer.tui.restyle import NoFocusStyles
from explorer.tui.widgets.othersettings import OtherSettings


@dataclass(frozen=True)
class KnobDef:
    """One row of the panel.

    Args:
        field: The `Knobs` field it sets.
        label: Row label.
        choices: (label, value); value None means "leave the server's setting".
        guc: The setting whose current value the "server" choice shows.
    """

    field: str
    label: str
    choices: tuple[tuple[str, Any], ...]
    guc: str | None = None


def _server(*values: tuple[str, Any]) -> tuple[tuple[str, Any], ...]:
    return (("server", None), *values)


KNOB_DEFS = (
    KnobDef("table_kind", "Table kind", tuple((k.value, k) for k in TableKind)),
    KnobDef("fk", "Foreign key", tuple((k.value, k) for k in FkTiming)),
    KnobDef("toast", "TOAST", tuple((k.value, k) for k in Toast)),
    KnobDef(
        "synchronous_commit",
        "synchronous_commit",
        _server(("on", "on"), ("off", "off"), ("local", "local")),
        "synchronous_commit",
    ),
    KnobDef("fsync", "fsync", _server(("on", True), ("off", False)), "fsync"),
    KnobDef(
        "full_page_writes",
        "full_page_writes",
        _server(("on", True), ("off", False)),
        "full_page_writes",
    ),
    KnobDef(
        "wal_level",
        "wal_level ⟳",
        _server(("minimal", "minimal"), ("replica", "replica"), ("logical", "logical")),
        "wal_level",
    ),
    KnobDef(
        "io_method",
        "io_method ⟳",
        _server(("sync", "sync"), ("worker", "worker"), ("io_uring", "io_uring")),
        "io_method",
    ),
)
"""The knobs the panel offers, in the order shown."""

INLINE_UNFOLLOWED = {"fk": "no FK", "toast": "no TOAST", "table_kind": "fixed"}
"""What a knob's row says after its value when the workload does not follow it (short: the
read-only view gives a value about 19 columns at 120x36; the tooltip has the sentence)."""

LABEL_WIDTH = 19
"""Columns of a row's label (the live rows' and the read-only view's)."""

TITLE_ROWS = 2
"""Rows the profile's title may take under the workload choice (one when the knobs would
not all fit otherwise)."""

DEFAULT_PROFILE = "quick-demo"
"""Selected at start when it is shipped: the profile that shows pgwx end to end."""

SCALES = (0.001, 0.01, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0)
"""Size multipliers offered."""


def _plain(n: int) -> str:
    for unit, size in (("M", 1_000_000), ("k", 1_000)):
        if n >= size and n % (size // 10) == 0:
            return f"{n / size:g}{unit}"
    return f"{n:,}"


def scale_label(profile: Profile | None, scale: float) -> str:
    """'×0.01 · rows 10k': the multiplier and what it makes of the profile's sizes."""
    text = f"×{scale:g}"
    if profile is None:
        return text
    try:
        params = build_workload(profile, scale).params
    except (KeyError, ValueError):
        return text
    sizes = [f"{name} {_plain(value)}" for name, value in params.sizes_shown()]
    return " · ".join([text, *sizes[:2]])


def short_reason(why: str) -> str:
    """The reason without its parenthesised detail (the tooltip has the whole sentence)."""
    head = why.split(" (", 1)[0].split("; ", 1)[0]
    if len(head) < 12:
        return why
    if "--allow-risky" in why and "--allow-risky" not in head:
        # The way out must stay on screen, not only in the tooltip.
        head += "; --allow-risky unlocks it"
    way_out = re.search(r"`pgwx (--pg[^`]*)` *$", why)
    if way_out and way_out.group(0) not in head:
        # lz4 elsewhere on this machine: the command that gets it stays on screen too.
        head += f"; `pgwx {way_out.group(1)}` has it"
    extra = re.search(r"`pip install [^`]*`", why)
    if extra and extra.group(0) not in head:
        head += f"; {extra.group(0)} brings it"
    return head


def compact_reason(why: str, knob: str) -> str | None:
    """A reason that names its knob, said without the name (the row above shows it), short
    enough for one line of the panel; None when it has no short form."""
    built = re.match(r"\w+=\w+ is not built into this server \(.*--with-(\w+)", why)
    if built:
        return f"not built (no {built.group(1)})"
    newer = re.search(r"needs (PostgreSQL \d+\+)", why)
    if newer:
        return f"needs {newer.group(1)}"
    missing = re.match(rf"{re.escape(knob)} does not exist on (PostgreSQL \S+)", why)
    if missing:
        return f"not in {missing.group(1)}"
    if why.startswith("TEMPORARY tables live in one session") and "other sessions" in why:
        return "other sessions load it"
    if why.startswith("no declared table follows table_kind"):
        return "no declared table follows it"
    declared = re.match(r"the \w+ knob is set but no declared (.+) follows it", why)
    if declared:
        return f"no declared {declared.group(1)}"
    if why.startswith("the toast knob is set but no table names a column"):
        return "no toast column declared"
    lacking = re.match(r"the [\w-]+ workload has (no [^,]+), so the \w+ knob changes nothing", why)
    if lacking:
        return f"this load has {lacking.group(1)}"
    return None


class KnobSelect(Select[Any]):
    """A compact Select whose unavailable choices are shown but cannot be picked.

    Its list opens inside the knob panel's border: near the panel's foot it opens upward.
    The panel works as a form: `↑` `↓` move to the previous or next knob (Textual's Select
    opens its list on them), `Enter` or `space` opens the list, `Esc` closes it.
    """

    BINDINGS = [
        Binding("enter,space", "show_overlay", "Open", show=False),
        Binding("down", "next_knob", "Next knob", show=False),
        Binding("up", "previous_knob", "Previous knob", show=False),
    ]

    DEFAULT_CSS = """
    KnobSelect > SelectOverlay {
        border: round $accent;
        background: $surface;
    }
    /* The value takes the whole row up to its arrow (compact Select kept a cell after the
       arrow: at 120x36 `fk-timing-restor`, arrow); one longer still ends in `…`, never cut. */
    KnobSelect.-textual-compact > SelectCurrent {
        padding: 0;
    }
    KnobSelect > SelectCurrent Static#label {
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    """

    def __init__(self, choices: list[tuple[str, Any]], *, id: str | None = None) -> None:
        # Labels are Text: a profile named '[b]x' is shown as typed, never read as markup.
        shown = [(Text(label), value) for label, value in choices]
        super().__init__(shown, allow_blank=False, compact=True, id=id)
        self.values: list[Any] = [value for _, value in choices]
        """The values offered, in list order (the overlay's option indexes)."""
        self.labels: list[str] = [label for label, _ in choices]
        """Their labels, in the same order."""
        self.unavailable: dict[Any, str] = {}
        """Value → why the server cannot do it."""
        self._lift = 0
        """Rows the open list is moved up to stay inside the panel (see `_keep_inside`)."""

    def on_mount(self) -> None:
        """Apply the disabled choices once the option list exists."""
        self.call_after_refresh(self._disable_unavailable)

    def action_next_knob(self) -> None:
        """Focus the next choice of the panel (the last one stays)."""
        self._step(1)

    def action_previous_knob(self) -> None:
        """Focus the previous choice of the panel (the first one stays)."""
        self._step(-1)

    def _step(self, by: int) -> None:
        panel = next((a for a in self.ancestors if isinstance(a, KnobPanel)), None)
        if panel is not None:
            panel.step_from(self, by)

    def _watch_value(self, value: Any) -> None:
        """Select's own, with the shown label changed in place: during a matrix the panel
        shows each trial's knobs, and Textual's label update asks for a layout pass of the
        whole screen (10-30 ms a key pressed meanwhile waits for) though the one-row label
        keeps its size."""
        try:
            label = self.query_one("SelectCurrent #label", Static)
        except NoMatches:
            super()._watch_value(value)
            return
        update = label.update
        label.update = partial(update, layout=False)  # type: ignore[method-assign]
        try:
            super()._watch_value(value)
        finally:
            del label.update

    def set_choices(
        self, choices: list[tuple[str, Any]], unavailable: dict[Any, str], keep: Any
    ) -> None:
        """New choices; keep `keep` selected when it is still possible."""
        self.unavailable = unavailable
        shown = [
            (Text(f"{label} ✗", style="dim strike") if value in unavailable else Text(label), value)
            for label, value in choices
        ]
        with self.prevent(Select.Changed):
            self.set_options(shown)
        self.values = [value for _, value in choices]
        self.labels = [label for label, _ in choices]
        usable = [v for _, v in choices if v not in unavailable]
        self.value = keep if keep in usable else (usable[0] if usable else choices[0][1])
        with self.prevent(Select.Changed):
            # The value may be unchanged while its label changed ("server" → "server (on)").
            self.mutate_reactive(Select.value)  # type: ignore[misc]
        self._disable_unavailable()

    def _disable_unavailable(self) -> None:
        overlay = self.query_one("SelectOverlay", OptionList)
        for index, value in enumerate(self.values):
            if value in self.unavailable:
                overlay.disable_option_at_index(index)

    def watch_expanded(self, expanded: bool) -> None:
        """Keep the open list off the panel's border (it is drawn over the screen)."""
        overlay = self.query_one("SelectOverlay", OptionList)
        self._lift = 0
        overlay.styles.offset = (0, 0)
        if expanded:
            self.call_after_refresh(self._keep_inside)

    @property
    def shown_label(self) -> str:
        """The label of the value shown ('server (on)', '×0.01 · rows 10k')."""
        for label, value in zip(self.labels, self.values, strict=True):
            if value == self.value:
                return label
        return ""

    def _keep_inside(self, checks: int = 3) -> None:
        """Move the open list up by what it would hang below the panel's border.

        Checked again after the next screen updates: the list may not be laid out yet at
        the first (a busy machine), and the panel may scroll the select into view after.
        """
        panel = next((a for a in self.ancestors if isinstance(a, KnobPanel)), None)
        overlay = self.query_one("SelectOverlay", OptionList)
        if panel is None or not self.expanded:
            return
        if overlay.region:
            top, bottom = panel.region.y + 1, panel.region.bottom - 1  # inside the border
            over = overlay.region.bottom - bottom
            if over > 0:
                self._lift += min(over, max(overlay.region.y - top, 0))
                overlay.styles.offset = (0, -self._lift)
        if checks > 1:
            self.call_after_refresh(self._keep_inside, checks - 1)


class ServerBox(Checkbox):
    """A server of several, checked when `m` takes turns on it: `[x] 15`, `[ ] 18` (the
    state is read in the text, not only in its colour)."""

    @property
    def _button(self) -> Content:
        return Content("[x]" if self.value else "[ ]")


class KnobPanel(NoFocusStyles, VerticalScroll):
    """Profile picker, size and the variant's knobs.

    Args:
        profiles: The profiles offered (quick-demo is selected when there, else the first).
        id: Widget id.
    """

    DEFAULT_CSS = """
    KnobPanel {
        /* The form scrolls for its last row (other settings): a scrollbar would take the
           knobs' columns and wrap a choice to two rows; the border says what is below. */
        scrollbar-size-vertical: 0;
    }
    KnobPanel .knob-row {
        height: 1;
    }
    KnobPanel .knob-label {
        width: 19;  /* LABEL_WIDTH */
        color: $text-muted;
    }
    KnobPanel KnobSelect {
        width: 1fr;
    }
    KnobPanel .reason {
        color: $text-muted;
        text-style: italic;
        padding: 0 0 0 2;
    }
    KnobPanel #server-row {
        display: none;
    }
    KnobPanel #server-row.-several {
        display: block;
    }
    KnobPanel #server-row Checkbox {
        width: auto;
        margin: 0 2 0 0;
    }
    KnobPanel #knob-rows {
        height: auto;
    }
    KnobPanel #knob-view {
        display: none;
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    KnobPanel #profile-title {
        padding: 0;
        /* wrapped by _fit_title: a scrollbar appearing must not wrap it to a third row */
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    """

    @dataclass
    class Changed(Message):
        """The variant the panel describes changed: another profile, size or knob value."""

        panel: KnobPanel
        """The panel that changed."""
        profile: Profile | None
        """The chosen profile."""
        scale: float
        """The chosen size multiplier."""
        knobs: Knobs
        """The knobs key r runs: the profile's baseline, overridden by the panel."""

        @property
        def control(self) -> KnobPanel:
            """The panel (for `@on(KnobPanel.Changed, "#knobs")`)."""
            return self.panel

    @dataclass
    class ServersChanged(Message):
        """Which of several servers are checked changed (or a last one stayed checked)."""

        panel: KnobPanel
        checked: tuple[int, ...]
        """The checked servers' indexes, in the order named."""
        kept: str | None = None
        """The server that stayed checked because it was the last one, if that happened."""

    caps: reactive[Capabilities | None] = reactive(None, init=False)
    """The server's capabilities (bound from the screen): what it cannot do is marked."""

    def __init__(
        self, profiles: list[Profile], *, allow_risky: bool = False, id: str | None = None
    ) -> None:
        super().__init__(id=id, classes="pane")
        self.profiles = {p.name: p for p in profiles}
        self.allow_risky = allow_risky
        """Allow fsync/full_page_writes off on a server pgwx does not own."""
        self.locked = False
        """A run or replay owns the server: the knobs cannot change."""
        self.scales: tuple[float, ...] = SCALES
        """Size multipliers offered."""
        self._chosen: dict[str, Any] | None = None
        """The user's knob values while a run's variant is shown instead."""
        self._other_chosen: dict[str, str] | None = None
        """The user's other settings while a run's variant is shown instead."""
        self._title_rows = TITLE_ROWS
        """Rows the profile's title has now (`TITLE_ROWS`, or one when room is short, or none
        beside a list of servers)."""
        self._title_shown: str | None = None
        """The profile title's text as last shown (None: not yet)."""
        self._reasons_shown: dict[str, list[str]] = {}
        """Each knob's reason rows as shown under it (none: no row)."""
        self._view_shown: tuple[object, ...] | None = None
        """What the read-only view was last built from (None: not built)."""
        self._view_lines: dict[str, int] = {}
        """Each knob's line in the read-only view."""
        self._view_height = 0
        """Lines the read-only view has."""
        self._fitted: tuple[int, int] = (0, 0)
        """The size the title and the view were last fitted at (a hidden panel's is 0x0)."""
        self._view_width = 0
        """The width the read-only view is built for: the panel's, or while it is hidden its
        width when last shown."""

    def compose(self) -> ComposeResult:
        """One row per knob, each with a (hidden) reason line."""
        names = [(name, name) for name in self.profiles]
        with Horizontal(classes="knob-row", id="server-row"):
            yield Label("Servers", classes="knob-label")
        with Vertical(id="knob-rows"):
            with Horizontal(classes="knob-row"):
                yield Label("Workload", classes="knob-label")
                yield KnobSelect(names or [("(no profiles)", "")], id="knob-profile")
            yield Static(id="profile-title", classes="reason")
            with Horizontal(classes="knob-row"):
                yield Label("Size", classes="knob-label")
                yield KnobSelect([(f"×{s:g}", s) for s in self.scales], id="knob-scale")
            for knob in KNOB_DEFS:
                with Horizontal(classes="knob-row"):
                    yield Label(knob.label, classes="knob-label")
                    yield KnobSelect(list(knob.choices), id=f"knob-{knob.field}")
                yield Static(id=f"why-{knob.field}", classes="reason")
            yield OtherSettings(id="knob-other")
        yield Static(id="knob-view")

    def on_mount(self) -> None:
        """Title, default size, the first profile's knobs."""
        self.border_title = Text("Knobs")
        self.query_one("#knob-scale", KnobSelect).value = 1.0
        if DEFAULT_PROFILE in self.profiles:
            with self.prevent(Select.Changed):
                self.select("profile").value = DEFAULT_PROFILE
        self._profile_chosen()

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        """Scrolled: say again whether knobs remain below."""
        super().watch_scroll_y(old_value, new_value)
        self._say_more()

    def on_resize(self) -> None:
        """Resized: the title wrapped again, and say whether knobs remain below.

        Shown again at the size it had (a tab, the pane beside the chart), Textual sends a
        resize too: the title and view already fit it. Wrapping the title anew there gave it
        its rows back, then `_say_more` took one away again: two to three layout passes of
        the whole screen after each `1` in the presenter layout.
        """
        if (self.size.width, self.size.height) == self._fitted:
            self._update_view()  # a trial's knobs that came while it was hidden
            return
        self._title_rows = self._title_room()
        self._fit_title()
        self.call_after_refresh(self._say_more)

    def _say_more(self) -> None:
        """On a terminal too short for every knob, the border says how to reach the rest
        (at 80x24 a long profile title and reasons can push io_method below the fold)."""
        if self.max_scroll_y > 0 and self._title_rows > 1:
            # The title gives way first: one row of it, and every knob in sight.
            self._title_rows = 1
            self._fit_title()
            self.call_after_refresh(self._say_more)
            return
        seen_to = self.scroll_y + self.scrollable_content_region.height
        hidden = [knob.field for knob in KNOB_DEFS if self._row_bottom(knob.field) > seen_to]
        other = self.query_one(OtherSettings)
        if not self.locked and other.display and other.virtual_region.bottom > seen_to:
            hidden.append("other settings")
        more = self.max_scroll_y > 0 and self.scroll_y < self.max_scroll_y and bool(hidden)
        way = "↓" if self.locked else "Tab ↓"  # locked: the panel has the focus and scrolls
        subtitle = f"{hidden[-1] if len(hidden) == 1 else 'more'} below: {way}" if more else ""
        if str(self.border_subtitle or "") != subtitle:
            self.border_subtitle = subtitle

    def _row_bottom(self, field: str) -> int:
        """Where a knob's row ends in the panel's scrolled content (the live row's, or its
        line of the read-only view while a run owns the panel)."""
        if self.locked:
            view = self.query_one("#knob-view", Static)
            return view.virtual_region.y + self._view_lines.get(field, 0) + 1
        row = self.select(field).parent
        return row.virtual_region.bottom if isinstance(row, Widget) else 0

    # ------------------------------------------------------------------ read-only view
    def _update_view(self) -> None:
        """While locked: the rows as one text — label, the value shown, the profile's title
        and the reasons, as the live rows show them (rebuilt only when one of those
        changed)."""
        # Hidden (a tab, or not beside the chart) it has no width: built for the width it
        # had when last shown, as it will show again. Built at no width, its reasons wrapped
        # at ten columns, and showing it laid the screen out twice and showed the last
        # trial's knobs for a frame.
        self._view_width = self.scrollable_content_region.width or self._view_width
        width = self._view_width
        if not self.locked or not width:
            return
        rows = [("Workload", "profile"), ("Size", "scale")]
        rows += [(knob.label, knob.field) for knob in KNOB_DEFS]
        values = tuple(self.select(field).shown_label for _, field in rows)
        reasons = tuple(tuple(self._reasons_shown.get(k.field, ())) for k in KNOB_DEFS)
        key = (width, self._title_shown, values, reasons)
        if key == self._view_shown:
            return
        self._view_shown = key
        lines: list[Content] = []
        at: dict[str, int] = {}
        for (label, field), value in zip(rows, values, strict=True):
            at[field] = len(lines)
            lines.append(Content.assemble((f"{label:<{LABEL_WIDTH}}", "dim"), value))
            if field == "profile":
                under = (self._title_shown or "").splitlines()  # wrapped by _fit_title
            else:
                reasons_here = self._reasons_shown.get(field, [])
                under = [
                    part for row in reasons_here for part in textwrap.wrap(row, max(width - 2, 10))
                ]
            lines.extend(Content.styled(f"  {part}", "dim italic") for part in under)
        self._view_lines = at
        view = self.query_one("#knob-view", Static)
        # Each trial of a matrix shows its variant here: the same rows, other values. Only a
        # new number of lines needs a layout pass of the whole screen.
        view.update(Content("\n").join(lines), layout=len(lines) != self._view_height)
        self._view_height = len(lines)

    # ------------------------------------------------------------------ servers
    def show_servers(self, labels: list[str], about: list[str]) -> None:
        """List several servers, each checked: which ones `m` takes turns on. One server (or
        none) shows no list at all.

        Args:
            labels: How each is named ('15', '18').
            about: What each is, for its tooltip ('PostgreSQL 15.14 from …').
        """
        row = self.query_one("#server-row", Horizontal)
        row.remove_children(Checkbox)
        several = len(labels) > 1
        row.set_class(several, "-several")
        if several:
            row.mount_all(
                ServerBox(Text(label), True, compact=True, id=f"server-{n}", tooltip=Text(tip))
                for n, (label, tip) in enumerate(zip(labels, about, strict=True))
            )
        self._title_rows = self._title_room()
        self._fit_title()
        self.call_after_refresh(self._say_more)

    def _title_room(self) -> int:
        """Rows the profile's title starts with: `TITLE_ROWS`, or none where a list of
        servers takes a row (the workload's tooltip has the title then): with the list, every
        knob fits wherever it fits without it."""
        return 0 if self.query_one("#server-row").has_class("-several") else TITLE_ROWS

    @property
    def server_boxes(self) -> list[Checkbox]:
        """The servers' check boxes, in the order named (none for one server)."""
        return list(self.query_one("#server-row").query(Checkbox))

    def checked_servers(self) -> tuple[int, ...]:
        """The indexes of the checked servers (empty for one server)."""
        return tuple(n for n, box in enumerate(self.server_boxes) if box.value)

    def on_checkbox_changed(self, event: Checkbox.Changed) -> None:
        """A server checked or not; the last one checked stays checked."""
        event.stop()
        kept = None
        if not event.value and not self.checked_servers():
            kept = str(event.checkbox.label)
            with event.checkbox.prevent(Checkbox.Changed):
                event.checkbox.value = True
        self.post_message(self.ServersChanged(self, self.checked_servers(), kept))

    def step_from(self, widget: Widget, by: int) -> None:
        """Focus the form's stop `by` after `widget` (the knobs, then the other settings
        row), scrolled into view; at either end the focus stays."""
        stops = [w for w in self.query("KnobSelect, ServerBox, SettingsInput") if w.focusable]
        if widget not in stops:
            return
        at = stops.index(widget) + by
        if 0 <= at < len(stops):
            stops[at].focus()
            self.scroll_to_widget(stops[at], animate=False)

    # ------------------------------------------------------------------ reading
    def select(self, field: str) -> KnobSelect:
        """The Select of one knob (or 'profile', 'scale')."""
        return self.query_one(f"#knob-{field}", KnobSelect)

    @property
    def profile(self) -> Profile | None:
        """The chosen profile."""
        return self.profiles.get(str(self.select("profile").value))

    @property
    def scale(self) -> float:
        """The chosen size multiplier."""
        value: Any = self.select("scale").value
        return float(value)

    def knobs(self) -> Knobs:
        """The variant the panel describes: the profile's baseline knobs, overridden."""
        profile = self.profile
        base = Knobs()
        if profile is not None:
            wanted = profile.baseline_name()
            base = next((v.knobs for v in profile.variants if v.name == wanted), base)
        values: dict[str, Any] = {k.field: self.select(k.field).value for k in KNOB_DEFS}
        other = self.query_one(OtherSettings).settings
        if other:
            values["settings"] = {**base.settings, **other}
        return base.model_copy(update=values)

    # ------------------------------------------------------------------ changes
    def on_select_changed(self, event: Select.Changed) -> None:
        """A new profile resets the knobs to its baseline; any choice is announced."""
        event.stop()
        if event.select.id == "knob-profile":
            self._profile_chosen()
        else:
            self._announce()

    def _announce(self) -> None:
        """Tell the screen what `r` would run now (not while a run's variant is shown)."""
        if self._chosen is None:
            self.post_message(self.Changed(self, self.profile, self.scale, self.knobs()))

    def reveal_other_settings(self) -> None:
        """Show the "other settings" row and put the cursor in it (the palette's entry)."""
        if not self.locked:
            self.query_one(OtherSettings).reveal()

    def on_other_settings_changed(self, event: OtherSettings.Changed) -> None:
        """The other settings row changed: announce what `r` would run now."""
        event.stop()
        self._announce()

    def watch_caps(self, _old: Capabilities | None, _new: Capabilities | None) -> None:
        """The server is known: mark what it cannot do."""
        if self.is_mounted:
            self.query_one(OtherSettings).set_caps(self.caps)
            self._refresh_choices(keep_current=True)

    def show_profile(self, profile: Profile, scale: float) -> None:
        """Show a profile and size that may not be in the lists (a replayed run's)."""
        self.profiles[profile.name] = profile
        self.scales = tuple(sorted({*self.scales, scale}))
        names = [(name, name) for name in self.profiles]
        self.select("profile").set_choices(names, {}, profile.name)
        self.select("scale").set_choices([(f"×{s:g}", s) for s in self.scales], {}, scale)
        self._profile_chosen()

    def choose_profile(self, name: str) -> None:
        """Select a profile by name (the command palette's "Profile: …")."""
        if not self.locked and name in self.profiles:
            self.select("profile").value = name

    def show_knobs(self, knobs: Knobs | None) -> None:
        """Show the knobs of the variant in flight (a matrix's current cell); None puts
        back what the user had chosen."""
        if knobs is not None and self._chosen is None:
            self._chosen = {k.field: self.select(k.field).value for k in KNOB_DEFS}
        values = (
            {k.field: getattr(knobs, k.field) for k in KNOB_DEFS}
            if knobs is not None
            else self._chosen or {}
        )
        other = self.query_one(OtherSettings)
        if knobs is not None:
            if self._other_chosen is None:
                self._other_chosen = dict(other.settings)
            other.show(knobs.settings)
        else:
            other.show(self._other_chosen or {})
            self._other_chosen = None
        if knobs is None:
            self._chosen = None
        for field, value in values.items():
            select = self.select(field)
            if value in select.values and select.value != value:
                with self.prevent(Select.Changed):
                    select.value = value
        self._update_view()

    def set_running(self, text: Text | str | None) -> None:
        """Lock the panel while a run (or replay) owns the server: the rows become one
        read-only text. Say what is running in the border's title ("Knobs · now:
        unlogged"): a row of its own would push the last knob out of sight at 120x36."""
        running = text is not None
        if running != self.locked:
            rows = self.query_one("#knob-rows", Vertical)
            focused = self.screen.focused
            if running and focused is not None and rows in focused.ancestors:
                self.focus()  # the list in focus is about to be hidden: the panel scrolls
            self.locked = running
            self._view_shown = None
            self._update_view()
            # Two displays change, not a restyle of every list (40-65 ms a run's start/end).
            rows.display = not running
            self.query_one("#knob-view", Static).display = running
            self.call_after_refresh(self._say_more)
        for box in self.server_boxes:
            box.disabled = running
        title = Text("Knobs")
        if text is not None:
            title.append(" · ")
            title.append_text(Text(text) if isinstance(text, str) else text)
        self.border_title = title

    def _profile_chosen(self) -> None:
        profile = self.profile
        title = self.query_one("#profile-title", Static)
        title.tooltip = Text(profile.title) if profile else None
        self._title_rows = self._title_room()
        self._fit_title()
        self._refresh_choices(keep_current=False)

    def _fit_title(self) -> None:
        """The profile's title in at most `TITLE_ROWS` rows ("…" where it is cut; its
        tooltip has it whole), so that every knob fits at 120x36."""
        profile = self.profile
        self._fitted = (self.size.width, self.size.height)
        title = self.query_one("#profile-title", Static)
        title.display = profile is not None and self._title_rows > 0
        self.select("profile").tooltip = (
            Text(profile.title) if profile is not None and not title.display else None
        )
        if profile is None or not title.display:
            shown = ""
        else:
            width = self.scrollable_content_region.width
            rows = textwrap.wrap(profile.title, width) if width > 10 else [profile.title]
            if len(rows) > self._title_rows:
                rows = rows[: self._title_rows]
                last = rows[-1]
                rows[-1] = (last if len(last) < width else last[: width - 1].rstrip()) + "…"
            shown = "\n".join(rows)
        if shown != self._title_shown:
            # Only a new text: the panel is resized each time a tab shows it (80x24), and
            # updating the same title asked for a second layout pass of the whole screen.
            self._title_shown = shown
            title.update(Text(shown))
        self._update_view()

    def _refresh_choices(self, *, keep_current: bool) -> None:
        profile = self.profile
        base = self.knobs() if keep_current else self._baseline(profile)
        workload = None
        if profile is not None and self.caps is not None:
            try:
                workload = build_workload(profile)
            except (KeyError, ValueError):
                workload = None
        for knob in KNOB_DEFS:
            reasons = {}
            for _, value in knob.choices:
                why = self._why(knob.field, value, workload)
                if why:
                    reasons[value] = why
            choices = [(self._choice_label(knob, lbl, v), v) for lbl, v in knob.choices]
            fixed = self._unfollowed(reasons)
            if fixed is not None:
                # The workload ignores this knob: said on its own row, not on a row of its own
                # under it (every knob must still fit at 120x36).
                short = INLINE_UNFOLLOWED.get(knob.field, fixed)
                choices = [(lbl if v in reasons else f"{lbl} · {short}", v) for lbl, v in choices]
            self.select(knob.field).set_choices(choices, reasons, getattr(base, knob.field))
            self._explain(knob, reasons, rows_shown=fixed is None)
        scale = self.select("scale")
        scale.set_choices([(scale_label(profile, s), s) for s in self.scales], {}, scale.value)
        self._update_view()
        self._announce()
        self.call_after_refresh(self._say_more)

    @staticmethod
    def _baseline(profile: Profile | None) -> Knobs:
        if profile is None:
            return Knobs()
        wanted = profile.baseline_name()
        return next((v.knobs for v in profile.variants if v.name == wanted), Knobs())

    def _choice_label(self, knob: KnobDef, label: str, value: Any) -> str:
        if value is None and knob.guc and self.caps is not None:
            guc = self.caps.gucs.get(knob.guc)
            if guc is not None:
                return f"server ({guc.setting})"
        return label

    def _why(self, field: str, value: Any, workload: Any) -> str | None:
        if self.caps is None or value is None:
            return None
        if field == "io_method" and self.caps.major >= 18 and "io_method" not in self.caps.gucs:
            return None  # a recording from before pgwx read it: unknown, not "does not exist"
        try:
            knobs = Knobs(**{field: value})
        except ValueError:
            return "not a valid value"
        return unavailable_reason(knobs, self.caps, allow_risky=self.allow_risky, workload=workload)

    @staticmethod
    def _unfollowed(reasons: dict[Any, str]) -> str | None:
        """'no foreign key in this load' when every refused choice is refused because the
        workload does not follow the knob, else None."""
        said = {compact_reason(why, "") for why in reasons.values()}
        if len(said) != 1 or not all(why.endswith("changes nothing") for why in reasons.values()):
            return None
        fixed = said.pop()
        return fixed.removeprefix("this load has ") if fixed else None

    def _explain(self, knob: KnobDef, reasons: dict[Any, str], *, rows_shown: bool = True) -> None:
        labels = dict((v, label) for label, v in knob.choices)
        full = [f"{labels[v]} ✗ {why}" for v, why in reasons.items()]
        line = self.query_one(f"#why-{knob.field}", Static)
        # Several choices often share one reason (wal_level minimal and logical both need a
        # restart): each reason once, naming the choices it applies to.
        grouped: dict[str, list[str]] = {}
        short: dict[str, str] = {}
        for value, why in reasons.items():
            said = short_reason(why)
            compact = compact_reason(why, knob.field)
            if compact is not None:
                short[said] = compact
            grouped.setdefault(said, []).append(str(labels[value]))
        offered = [v for _, v in knob.choices if v is not None]
        rows = []
        for why, names in grouped.items():
            if why in short:
                # The short form leaves out its subject: name the choices, or the knob when
                # none of its values (but the one in use) can be had ("io_method: not in
                # PostgreSQL 15.14", "fk: no declared foreign key").
                every = len(names) >= max(len(offered) - 1, 2)
                subject = knob.field if every else ", ".join(names)
                rows.append(f"{glyph('✗')} {subject}: {short[why]}")
            else:
                named = len(reasons) > 1 and not why.startswith(f"{names[0]} ")
                prefix = ", ".join(names) + ": " if named else ""
                rows.append(f"{glyph('✗')} {prefix}{why}")
        if not rows_shown:
            rows = []
        line.update(Text("\n".join(rows)))
        line.display = bool(rows)
        self._reasons_shown[knob.field] = rows
        self.select(knob.field).tooltip = Text("\n".join(full)) if full else None
