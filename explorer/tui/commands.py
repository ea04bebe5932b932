"""Every action of the lab in the command palette (ctrl+p), in one place.

The keys live on the screen that owns each action (`screens/lab.py`); this module only
lists them for the palette, plus one entry per profile and per size, which have no key.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from textual.command import DiscoveryHit, Hit, Hits, Provider

LAB_COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("Run the variant", "run", "Run the variant the knobs describe, in the background  (r)"),
    ("Run matrix", "matrix", "Run every variant of the chosen profile  (m)"),
    ("Cancel the run", "cancel", "Stop the run; settings are put back  (c)"),
    ("Chart: pg_stat_io", "chart('io')", "Writes/extends/fsyncs by backend type  (i)"),
    ("Chart: wait events", "chart('waits')", "Wait events of the workload, stacked  (w)"),
    ("Chart: WAL rate", "chart('wal')", "WAL MiB/s from the insert position  (l)"),
    ("Next phase in the bars", "next_phase", "Compare another phase's durations  (p)"),
    ("Export the results table", "export", "Markdown file under the results directory  (e)"),
    ("Save a screenshot", "screenshot", "SVG under the results directory  (s)"),
    ("Pause the live view", "toggle_pause", "Freeze the panes; the run goes on  (space)"),
    ("Refresh less often", "refresh_interval(1)", "Lighter over a slow link  (+)"),
    ("Refresh more often", "refresh_interval(-1)", "A livelier clock and chart  (-)"),
    ("Help", "help", "Keys, panes, and why pg_stat_io lands late  (?)"),
    ("Go to the knobs", "pane('knobs')", "Knobs pane / tab  (1)"),
    ("Go to duration", "pane('duration')", "Duration pane / tab  (2)"),
    ("Go to server activity", "pane('activity')", "Activity pane / tab  (3)"),
    ("Go to results", "pane('results')", "Results pane / tab  (4)"),
    ("Reconnect", "reconnect", "Try the server again after it could not be reached  (R)"),
    ("Replay: pause / resume", "replay_pause", "Pause or resume the replay  (space)"),
    ("Replay: slower", "replay_speed(-1)", "Down to 0.25×  (<)"),
    ("Replay: faster", "replay_speed(1)", "Up to 16×  (>)"),
    ("Replay: previous phase", "replay_phase(-1)", "Back to where the previous phase started  ([)"),
    ("Replay: next phase", "replay_phase(1)", "On to where the next phase starts  (])"),
    ("Replay: start", "replay_jump('start')", "Jump to the start of the replay  (g)"),
    ("Replay: end", "replay_jump('end')", "Jump to the end of the replay  (G)"),
    ("Quit pgwx", "quit", "Cancels a run and stops the bundled server first  (q)"),
)
"""(title, screen action, help) of every lab action."""


class LabCommands(Provider):
    """The lab's actions, and choosing a profile or size by name."""

    def _commands(self) -> list[tuple[str, Callable[[], Any], str]]:
        screen = self.screen
        if not hasattr(screen, "action_run"):
            return []
        out: list[tuple[str, Callable[[], Any], str]] = [
            (title, partial(screen.run_action, action), help_text)
            for title, action, help_text in LAB_COMMANDS
        ]
        panel = getattr(screen, "knob_panel", None)
        if panel is not None and not panel.locked:
            for name, profile in panel.profiles.items():
                out.append((f"Profile: {name}", partial(panel.choose_profile, name), profile.title))
        return out

    async def discover(self) -> Hits:
        """The actions, shown before anything is typed."""
        for title, callback, help_text in self._commands():
            yield DiscoveryHit(title, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        """Actions and profiles matching what was typed."""
        matcher = self.matcher(query)
        for title, callback, help_text in self._commands():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), callback, help=help_text)
