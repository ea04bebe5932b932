"""The knob panel's "other settings" row: any server setting as `name = value` (issue 37).

The row is the last of the knob form (the panel scrolls where the knobs fill it, as at
120x36): `↓` from the last knob reaches it and `↑` goes back, Enter checks what it holds
(one line under it), and the palette's "Other settings" goes straight to it.

One Input taking `wal_compression = lz4, max_wal_size = 4GB`; the write-path settings are
offered by name as the user types (a suggestion completes with →). What is typed is read as
data: parsed into `Knobs.settings` (which refuses settings naming programs, libraries or
files), checked against the server's own pg_settings rows where the probe read them, and any
problem is one line under the row. The run checks every name again against the server before
anything runs.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import ValidationError
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.suggester import SuggestFromList
from textual.widgets import Input, Label, Static

from explorer.models import Capabilities, Knobs
from explorer.server.gucs import WRITE_PATH, check_value, nearest

PLACEHOLDER = "name = value, … (e.g. wal_compression = lz4)"


def parse(text: str) -> tuple[dict[str, str], str | None]:
    """(settings, None) from `a = 1, b = 2`, or ({}, one sentence why not)."""
    settings: dict[str, str] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        name, sep, value = part.partition("=")
        name, value = name.strip(), value.strip().strip("'\"")
        if not sep or not name or not value:
            return {}, f"{part[:40]!r} is not name = value"
        settings[name] = value
    try:
        Knobs(settings=settings)
    except ValidationError as exc:
        return {}, exc.errors()[0]["msg"].removeprefix("Value error, ")
    return settings, None


def problems(settings: dict[str, str], caps: Capabilities | None) -> list[str]:
    """One line per setting the server at hand cannot take as typed (where it is known)."""
    if caps is None:
        return []
    out = []
    for name, value in settings.items():
        guc = caps.gucs.get(name)
        if guc is None:
            if name in WRITE_PATH or (caps.setting_names and name not in caps.setting_names):
                close = nearest(name, caps.setting_names or list(WRITE_PATH))
                hint = f": did you mean {' or '.join(close)}?" if close else ""
                out.append(f"{name} is not a setting of PostgreSQL {caps.version}{hint}")
            continue  # not read by the probe: the run checks it before anything runs
        _spelled, why = check_value(guc, value, caps.version)
        if why is not None:
            out.append(why.removeprefix("not built: "))
    return out


class SettingsInput(Input):
    """The row's Input, a stop of the knob form: `↑` back to the knob above (`↓` stays: the
    row is the form's last); Enter checks what it holds."""

    BINDINGS = [Binding("up", "previous_knob", "Previous knob", show=False)]

    def action_previous_knob(self) -> None:
        """Focus the knob above (the form's previous stop)."""
        # The knob panel holding this row (not imported: knobs imports this module).
        for ancestor in self.ancestors:
            step_from = getattr(ancestor, "step_from", None)
            if callable(step_from):
                step_from(self, -1)
                return


class OtherSettings(Vertical):
    """`Other settings` and its Input, with one reason line under it."""

    DEFAULT_CSS = """
    OtherSettings {
        height: auto;
    }
    OtherSettings Horizontal {
        height: 1;
    }
    OtherSettings Input, OtherSettings Input:focus {
        width: 1fr;
        height: 1;
        border: none;
        padding: 0 1;
    }
    OtherSettings Input:focus {
        background: $boost;
    }
    OtherSettings #other-why {
        display: none;
    }
    """

    @dataclass
    class Changed(Message):
        """What the row holds changed (only when it parses)."""

        row: OtherSettings
        settings: dict[str, str]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.caps: Capabilities | None = None
        """The server's capabilities, to check values against its pg_settings rows."""
        self.settings: dict[str, str] = {}
        """The settings the row holds (the last text that parsed)."""

    def compose(self) -> ComposeResult:
        with Horizontal(classes="knob-row"):
            yield Label("Other settings", classes="knob-label")
            yield SettingsInput(
                placeholder=PLACEHOLDER,
                suggester=SuggestFromList(WRITE_PATH, case_sensitive=False),
                id="other-settings",
                tooltip="any server setting, e.g. "
                + ", ".join(f"{n}" for n in WRITE_PATH)
                + "; checked against the server before the run",
            )
        yield Static(id="other-why", classes="reason")

    def on_input_changed(self, event: Input.Changed) -> None:
        """Parse and check what was typed; announce it when it parses."""
        event.stop()
        settings, why = parse(event.value)
        lines = [why] if why is not None else problems(settings, self.caps)
        self.show_reasons(lines)
        if why is None and settings != self.settings:
            self.settings = settings
            self.post_message(self.Changed(self, settings))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Enter: check what the row holds now, and say it (one line per problem, or that
        the settings join the knobs `r` runs)."""
        event.stop()
        settings, why = parse(event.value)
        lines = [why] if why is not None else problems(settings, self.caps)
        if lines or not settings:
            self.show_reasons(lines)
            return
        why_line = self.query_one("#other-why", Static)
        names = ", ".join(settings)
        why_line.update(f"✓ {names}: checked; `r` and `m` run with it")
        why_line.display = True

    def set_caps(self, caps: Capabilities | None) -> None:
        """The server is known: check what is typed against it."""
        self.caps = caps
        self.show_reasons(problems(self.settings, caps))

    def show_reasons(self, lines: list[str]) -> None:
        why = self.query_one("#other-why", Static)
        why.update("\n".join(f"✗ {line}" for line in lines))
        why.display = bool(lines)

    def reveal(self) -> None:
        """Show the row, bring it into view and put the cursor in it."""
        self.add_class("-shown")
        field = self.query_one(Input)
        field.focus()
        self.call_after_refresh(field.scroll_visible, animate=False)

    def show(self, settings: dict[str, str]) -> None:
        """Show a variant's settings (a run's cell, a replay), without announcing them."""
        if settings:
            self.add_class("-shown")
        text = ", ".join(f"{k} = {v}" for k, v in settings.items())
        field = self.query_one(Input)
        if field.value != text:
            with self.prevent(Input.Changed):
                field.value = text
            self.settings = dict(settings)
