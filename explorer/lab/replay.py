"""A recorded run to play back: from the results store (`pgwx replay RUN`) or a JSON file."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from pydantic import TypeAdapter

from explorer.lab.results import ResultStore
from explorer.models import Event, Profile

_EVENTS: TypeAdapter[list[Event]] = TypeAdapter(list[Event])


@dataclass
class ReplaySource:
    """Events of one run, and what is needed to show them as the live screen would.

    Args:
        events: The run's events in order.
        profile: The profile the run ran (variant order and baseline for the table).
        scale: The run's size multiplier.
        speed: 1 = recorded pace, 2 = twice as fast, 0 = all at once (tests, screenshots).
    """

    events: list[Event]
    profile: Profile | None = None
    scale: float = 1.0
    speed: float = 1.0

    @classmethod
    def from_store(cls, store: ResultStore, ref: str, speed: float = 1.0) -> ReplaySource:
        """A stored run (id, unique prefix or 'latest')."""
        record = store.load(ref)
        return cls(list(store.events(record.id)), record.profile, record.scale, speed)

    @classmethod
    def from_file(cls, path: Path, speed: float = 0.0) -> ReplaySource:
        """A recorded stream: {"profile": …, "scale": …, "events": […]} (tests/fixtures)."""
        data = json.loads(path.read_text())
        profile = Profile.model_validate(data["profile"]) if data.get("profile") else None
        events = _EVENTS.validate_python(data["events"])
        return cls(events, profile, float(data.get("scale", 1.0)), speed)

    def upto(self, count: int) -> ReplaySource:
        """The first `count` events only: a run caught mid-flight."""
        return ReplaySource(self.events[:count], self.profile, self.scale, self.speed)
