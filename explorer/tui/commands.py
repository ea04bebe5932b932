"""Every action of the lab in the command palette (ctrl+p), in one place.

Every key of the key table (`tui/keys.py`) that applies in the session is an entry, with
its title and what it does; then one entry per profile, which has no key.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from textual.command import DiscoveryHit, Hit, Hits, Provider

from explorer.tui.keys import LAB_KEYS


class LabCommands(Provider):
    """The lab's actions, and choosing a profile or size by name."""

    def _commands(self) -> list[tuple[str, Callable[[], Any], str]]:
        screen = self.screen
        if not hasattr(screen, "action_run"):
            return []
        config = getattr(screen, "config", None)
        replay = getattr(config, "replay", None) is not None
        out: list[tuple[str, Callable[[], Any], str]] = [
            (key.title, partial(screen.run_action, key.action), key.palette_help(replay))
            for key in LAB_KEYS
            if key.applies(replay)  # a replay offers no run keys, a live session no replay keys
        ]
        panel = getattr(screen, "knob_panel", None)
        if panel is not None and not panel.locked:
            out.append(
                (
                    "Other settings",
                    panel.reveal_other_settings,
                    "set any server setting by name (wal_compression = lz4, max_wal_size = 4GB)",
                )
            )
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
