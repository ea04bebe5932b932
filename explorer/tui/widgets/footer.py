"""The lab's footer: `? Help` and `q Quit` always on screen, the other keys as room allows.

Textual's Footer lays its keys out in one row and cuts whatever passes the right edge: at
80x24 during a matrix, with the results card's `⏎ Table  esc Bars` in front, that was
`? Help` and `q Quit` (`q Q`). This footer keeps the pinned keys (`LabKey.pinned`) at the
right end, and fits the rest deliberately: chart and replay groups spelled out when there
is room ("i io  w waits  l wal"), compact otherwise ("iwl chart"), then the keys that can
wait (`LabKey.drop`, highest first) left out whole, never cut in the middle. The help and
the command palette still list every key.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from rich.cells import cell_len
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import HorizontalGroup
from textual.screen import Screen
from textual.widgets import Footer
from textual.widgets._footer import FooterKey, FooterLabel, KeyGroup

from explorer.tui.keys import LAB_KEYS


@dataclass
class Entry:
    """One thing in the footer: a key, or a group of keys with one label."""

    keys: list[tuple[Binding, bool, str]]
    """(binding, enabled, tooltip) of each key, in order."""
    group: Binding.Group | None
    """The group, when several keys share one."""
    drop: int = 0
    """How early it is left out when the row is full (highest first)."""
    expanded: bool = True
    """A group shown as its keys with their own labels, not as "keys label"."""
    displays: list[str] = field(default_factory=list)
    """How each key is written."""

    @property
    def grouped(self) -> bool:
        """Several keys under one label."""
        return self.group is not None and len(self.keys) > 1

    def width(self, compact: bool) -> int:
        """Cells it takes, with the gap after it (as the stylesheet lays it out)."""
        if self.grouped and not self.expanded:
            keys = sum(cell_len(d) for d in self.displays)
            label = cell_len(self.group.description) if self.group else 0
            # compact: "keys label " · wide: " keys label "
            return keys + 1 + label + (1 if compact else 2)
        return sum(_key_width(d, b.description, compact) for d, (b, _, _) in self._pairs())

    def _pairs(self) -> Iterable[tuple[str, tuple[Binding, bool, str]]]:
        return zip(self.displays, self.keys, strict=True)


def _compact(key: FooterKey, compact: bool) -> FooterKey:
    """The key made compact or not before it mounts: left to its default (compact) and set
    after, each key of a wide footer was restyled by itself, at every start."""
    key.set_reactive(FooterKey.compact, compact)
    key.set_class(compact, "-compact", update=False)
    return key


def _key_width(display: str, description: str, compact: bool) -> int:
    """One FooterKey: compact "k desc " · wide " k desc "."""
    text = cell_len(display) + (1 + cell_len(description) if description else 0)
    return text + (1 if compact else 2)


PINNED_IDS = frozenset(key.id for key in LAB_KEYS if key.pinned)
"""Binding ids the footer always shows, at its right end."""
DROP = {key.id: key.drop for key in LAB_KEYS}
ORDER = {key.id: n for n, key in enumerate(LAB_KEYS)}
"""Footer order: the key table's, whatever widget has the focus (Textual lists a priority
binding, such as `space`, first or not depending on the focus; the keys must not move)."""


def in_table_order(
    active: Iterable[tuple[object, Binding, bool, str]],
) -> list[tuple[object, Binding, bool, str]]:
    """The focused widget's own keys first (the end card's `⏎ Table`), as Textual lists them,
    then the lab's in the key table's order."""
    return sorted(active, key=lambda b: (b[1].id in ORDER, ORDER.get(b[1].id or "", 0)))


"""Binding id → how early the footer leaves it out."""


class LabFooter(Footer):
    """A Footer whose pinned keys never leave the screen and whose other keys are fitted."""

    DEFAULT_CSS = """
    LabFooter #footer-pinned {
        dock: right;
        width: auto;
        height: 1;
        padding-left: 1;
        background: $footer-background;
    }
    LabFooter #footer-pinned FooterKey.-command-palette {
        dock: none;
    }
    """

    def __init__(self, *, wide: bool = True) -> None:
        """`wide`: the palette's key shown and the keys spaced, else compact. Made so from the
        start, the keys are not styled one way and then the other as the screen first lays
        out (each key's class change restyled it: ~100 restyles at start)."""
        super().__init__(compact=not wide, show_command_palette=wide)
        self._composed_width = 0
        self._composed_keys: tuple[object, ...] | None = None
        self.left_out: list[str] = []
        """Actions the last layout left out for want of room (the help lists them)."""
        self.recomposed = 0
        """How many times the keys were laid out (tests read it)."""

    def _shown_keys(self) -> tuple[object, ...]:
        """What the footer draws from the screen's bindings: keys, labels, enabled."""
        return tuple(
            (b.key, b.action, b.description, enabled)
            for _node, b, enabled, _tip in in_table_order(self.screen.active_bindings.values())
            if b.show
        )

    def bindings_changed(self, screen: Screen[object]) -> None:
        """Lay the keys out again only when what they show changed.

        Textual's Footer recomposes on every change of focus; 1-4 move the focus, and each
        recompose restyled some 60 keys (a third of a key press's time at 80x24) to draw
        the same footer again.
        """
        if (
            self._bindings_ready
            and self.is_attached
            and screen is self.screen
            and self._shown_keys() == self._composed_keys
        ):
            return
        super().bindings_changed(screen)

    def compose(self) -> ComposeResult:
        """The fitted keys, then the pinned ones docked at the right.

        Drawn from the first compose: the screen's keys are known then. Textual's Footer
        waits for the screen's first bindings signal and recomposes after a refresh, so
        `pgwx` showed its first frames without `? Help` and `q Quit` (about 0.1-0.2 s)."""
        if not self._bindings_ready:
            if not self.is_attached:
                return
            self.set_reactive(Footer._bindings_ready, True)
        width = self.size.width or self.app.size.width
        self._composed_width = width
        self._composed_keys = self._shown_keys()
        self.recomposed += 1
        active = self.screen.active_bindings
        entries, pinned = self._entries(in_table_order(active.values()))
        palette = None
        if self.show_command_palette and self.app.ENABLE_COMMAND_PALETTE:
            palette = active.get(self.app.COMMAND_PALETTE_BINDING)
        room = width - self._pinned_width(pinned, palette)
        self.left_out = self._fit(entries, room)
        for entry in entries:
            yield from self._draw(entry)
        with HorizontalGroup(id="footer-pinned"):
            for binding, enabled, tooltip in pinned:
                yield self._key(binding, enabled, tooltip)
            if palette is not None:
                _node, binding, enabled, tooltip = palette
                yield _compact(  # compact whatever the footer is, as in Textual's Footer
                    FooterKey(
                        binding.key,
                        self.app.get_key_display(binding),
                        binding.description,
                        binding.action,
                        classes="-command-palette",
                        disabled=not enabled,
                        tooltip=binding.tooltip or binding.description,
                    ),
                    True,
                )

    def on_resize(self, event: events.Resize) -> None:
        """Fit the keys again to a new width."""
        if self._bindings_ready and event.size.width != self._composed_width:
            self._composed_width = event.size.width
            self.call_after_refresh(self.recompose)

    # ------------------------------------------------------------------ fitting
    def _entries(
        self, active: Iterable[tuple[object, Binding, bool, str]]
    ) -> tuple[list[Entry], list[tuple[Binding, bool, str]]]:
        """Shown bindings (one per action) as entries, and the pinned ones apart."""
        seen: set[str] = set()
        entries: list[Entry] = []
        pinned: list[tuple[Binding, bool, str]] = []
        for _node, binding, enabled, tooltip in active:
            if not binding.show or binding.action in seen:
                continue
            seen.add(binding.action)
            key = (binding, enabled, tooltip)
            if binding.id in PINNED_IDS:
                pinned.append(key)
                continue
            display = self.app.get_key_display(binding)
            drop = DROP.get(binding.id or "", 0)
            last = entries[-1] if entries else None
            if last is not None and binding.group is not None and last.group == binding.group:
                last.keys.append(key)
                last.displays.append(display)
                last.drop = max(last.drop, drop)
            else:
                entries.append(Entry([key], binding.group, drop, displays=[display]))
        return entries, pinned

    def _pinned_width(
        self,
        pinned: list[tuple[Binding, bool, str]],
        palette: tuple[object, Binding, bool, str] | None,
    ) -> int:
        width = 1 + sum(
            _key_width(self.app.get_key_display(b), b.description, self.compact)
            for b, _, _ in pinned
        )
        if palette is not None:
            binding = palette[1]
            # border 1, " ^p palette" and its right padding
            width += 1 + _key_width(self.app.get_key_display(binding), binding.description, False)
        return width

    def _fit(self, entries: list[Entry], room: int) -> list[str]:
        """Make `entries` fit in `room` cells; the actions left out."""
        compact = self.compact

        def used() -> int:
            return sum(entry.width(compact) for entry in entries)

        left_out: list[str] = []

        def collapse(most_drop: int) -> None:
            # Groups whose keys are never left out say as much compact ("<> speed"): first.
            for entry in entries:
                if used() <= room:
                    return
                if entry.grouped and entry.drop <= most_drop:
                    entry.expanded = False

        def leave_out(least_drop: int) -> None:
            while entries and used() > room:
                # The highest `drop` goes first; among equals, the one furthest right.
                worst = max(range(len(entries)), key=lambda n: (entries[n].drop, n))
                if entries[worst].drop < least_drop:
                    return
                left_out.extend(b.action for b, _, _ in entries.pop(worst).keys)

        collapse(0)  # the replay's groups
        leave_out(2)  # p, e, s: the help and the palette have them
        collapse(1)  # "iwl chart" only when "i io  w waits  l wal" does not fit
        leave_out(0)  # then anything but the pinned keys, from the right
        return left_out

    # ------------------------------------------------------------------ drawing
    def _key(
        self, binding: Binding, enabled: bool, tooltip: str, *, label: bool = True
    ) -> FooterKey:
        key = FooterKey(
            binding.key,
            self.app.get_key_display(binding),
            binding.description if label else "",
            binding.action,
            disabled=not enabled,
            tooltip=tooltip or (binding.description if not label else ""),
            classes="" if label else "-grouped",
        )
        return _compact(key, self.compact).data_bind(compact=Footer.compact)

    def _draw(self, entry: Entry) -> ComposeResult:
        if entry.grouped and not entry.expanded and entry.group is not None:
            with KeyGroup(classes="-compact" if entry.group.compact else ""):
                for binding, enabled, tooltip in entry.keys:
                    yield self._key(binding, enabled, tooltip, label=False)
            yield FooterLabel(entry.group.description)
            return
        for binding, enabled, tooltip in entry.keys:
            yield self._key(binding, enabled, tooltip)
