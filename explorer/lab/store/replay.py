"""A recorded run to play back, and the player a presenter drives.

`ReplaySource` is where the events come from: the results store (`pgwx replay RUN`), a
recording file (`pgwx replay talk.pgwx`), a shipped recording by name (`pgwx replay
quick-demo`), or a JSON fixture of the tests. `Player` is where the replay is: a position
in the events, a speed, paused or not. The state at any position is rebuilt by folding the
events up to it into a fresh `RunView`, so a jump shows exactly what a live run showed then.
"""

from __future__ import annotations

import copy
import datetime as dt
import itertools
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import TypeAdapter

from explorer.lab.store.bounds import MAX_WHOLE_BYTES, open_regular
from explorer.lab.store.recording import (
    SUFFIX,
    RecordingError,
    Tape,
    not_a_recording,
    read_recording,
)
from explorer.lab.store.results import ResultStore, StoreError
from explorer.lab.view.runstate import RunView
from explorer.models import Event, PhaseStarted, Profile, RunRecord, RunStarted, SampleTaken
from explorer.paths import recordings_dir

_EVENTS: TypeAdapter[list[Event]] = TypeAdapter(list[Event])

CHECKPOINT_EVERY = 1024
"""A jump keeps a copy of the state folded every this many events, so the next jump folds
at most this many (an hour's 14,000 events are ~0.3 s to fold from the start)."""

SPEEDS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0)
"""The speeds `<` and `>` step through."""


def speed_label(speed: float) -> str:
    """4×, 0.25×, 1×."""
    return f"{speed:g}×"


@dataclass
class ReplaySource:
    """Events of one run, and what is needed to show them as the live screen would.

    Args:
        events: The run's events in order.
        profile: The profile the run ran (variant order and baseline for the table).
        scale: The run's size multiplier.
        speed: 1 = recorded pace, 2 = twice as fast, 0 = all at once (tests, screenshots).
        recorded_at: When the run started, when known.
        record: The run as stored (results and all), when it comes from a store or a file.
    """

    events: Sequence[Event]
    profile: Profile | None = None
    scale: float = 1.0
    speed: float = 1.0
    recorded_at: dt.datetime | None = None
    record: RunRecord | None = None

    @classmethod
    def from_store(cls, store: ResultStore, ref: str, speed: float = 1.0) -> ReplaySource:
        """A stored run (id, unique prefix or 'latest')."""
        record = store.load(ref)
        events = list(store.events(record.id))
        return cls(events, record.profile, record.scale, speed, record.started_at, record)

    @classmethod
    def from_file(cls, path: Path, speed: float = 0.0) -> ReplaySource:
        """A .pgwx recording, or a recorded stream {"profile", "scale", "events"} (tests)."""
        with open_regular(path) as f:
            gzipped = f.read(2) == b"\x1f\x8b"
            if not gzipped and path.suffix != SUFFIX:
                f.seek(0)
                text = f.read(MAX_WHOLE_BYTES + 1)
                if len(text) > MAX_WHOLE_BYTES:  # no recorded stream is this large
                    raise not_a_recording(path)
        if gzipped or path.suffix == SUFFIX:
            rec = read_recording(path, tape=True)
            run = rec.run
            return cls(rec.events, run.profile, run.scale, speed, run.started_at, run)
        try:
            data = json.loads(text)
            profile = Profile.model_validate(data["profile"]) if data.get("profile") else None
            events = _EVENTS.validate_python(data["events"])
            scale = float(data.get("scale", 1.0))
        except (ValueError, TypeError, KeyError, AttributeError, RecursionError):
            # ValidationError and JSONDecodeError are ValueErrors: not a recording, as import says
            raise not_a_recording(path) from None
        return cls(events, profile, scale, speed)

    @classmethod
    def find(cls, store: ResultStore, ref: str, speed: float = 1.0) -> ReplaySource:
        """What `pgwx replay REF` means: a file, a stored run, or a shipped recording's name.

        A stored run wins over a shipped recording of the same name; a path that exists wins
        over both.

        Raises:
            StoreError: nothing matches (the store's sentence).
            RecordingError: the file is not a playable recording.
        """
        path = Path(ref)
        if os.path.lexists(path) and not path.is_dir():
            return cls.from_file(path, speed)  # refused there if not a regular file
        try:
            return cls.from_store(store, ref, speed)
        except StoreError:
            shipped = recordings_dir() / f"{ref.removesuffix(SUFFIX)}{SUFFIX}"
            if ref != "latest" and shipped.is_file():
                return cls.from_file(shipped, speed)
            if ref.endswith(SUFFIX) or "/" in ref:
                raise RecordingError(
                    f"No recording file {ref}; give the path of a .pgwx file, a run id "
                    "(`pgwx runs`), or quick-demo / fk-timing-restore."
                ) from None
            raise

    def upto(self, count: int) -> ReplaySource:
        """The first `count` events only: a run caught mid-flight."""
        return ReplaySource(
            self.events[:count], self.profile, self.scale, self.speed, self.recorded_at, None
        )

    def headline(self) -> str:
        """'recorded 2026-11-22 14:03 on PostgreSQL 18.6 (bundled)' — what and when."""
        parts = []
        if self.recorded_at is not None:
            parts.append(f"recorded {self.recorded_at.astimezone().strftime('%Y-%m-%d %H:%M')}")
        started = next((e for e in self.events if isinstance(e, RunStarted)), None)
        if started is not None:
            kind = "bundled" if started.server.bundled else "external"
            version = started.server.capabilities.version
            parts.append(f"on PostgreSQL {version} ({kind})")
        axis = self.record.axis if self.record is not None else None
        if axis is not None:
            among = ", ".join(axis.labels) or f"{len(axis.runs)} in turns"
            parts.append(f"· {axis.label} of servers {among}")  # short: the header is one line
        return " ".join(parts) or "recorded run"


class Player:
    """Where a replay is: how many events are shown, at what speed, paused or not.

    Args:
        source: The recorded run.
        view: The state it rebuilds (the screen's panes draw from this object).
    """

    def __init__(
        self, source: ReplaySource, view: RunView, checkpoint_every: int = CHECKPOINT_EVERY
    ) -> None:
        self.source = source
        self.checkpoint_every = checkpoint_every
        self._checkpoints: dict[int, RunView] = {}
        """Position → the state folded from the start up to it (exact copies, never shown)."""
        self.events = source.events
        self.view = view
        self.position = 0
        """Events folded into the view so far."""
        self.speed = source.speed
        """1 = recorded pace; 0 = as fast as possible."""
        self.paused = False
        self._anchor: tuple[float, float] | None = None
        """(wall clock, recorded clock) when playing last (re)started: waits are measured
        from there, so time spent drawing never slows the replay down."""
        events = self.events
        if isinstance(events, Tape):
            self.ats: Sequence[float] = events.ats
            self.boundaries = events.phase_starts
            self.told = events.told
        else:
            self.ats = [e.at for e in events]
            self.boundaries = [i for i, e in enumerate(events) if isinstance(e, PhaseStarted)]
            self.told = [i for i, e in enumerate(events) if not isinstance(e, SampleTaken)]
        """ats: each event's time; boundaries: indices of the events where a phase starts
        (what `[` and `]` jump between); told: indices of the events that are not samples."""

    @property
    def done(self) -> bool:
        """Every event is shown."""
        return self.position >= len(self.events)

    @property
    def clock(self) -> float:
        """Recorded seconds of the latest event shown."""
        return self.view.now

    def start(self, wall: float) -> None:
        """Playing (re)starts now (`wall`, a monotonic clock) from the event in view."""
        self._anchor = (wall, self.view.now)

    def wait(self, wall: float) -> float:
        """Seconds to wait, at `wall`, before the next event at the current speed (0: none)."""
        if self.done or self.speed <= 0 or self.position == 0:
            return 0.0
        if self._anchor is None:
            self.start(wall)
        assert self._anchor is not None
        started, recorded = self._anchor
        due = started + max(self.ats[self.position] - recorded, 0.0) / self.speed
        return max(due - wall, 0.0)

    def step(self) -> Event:
        """Show the next event (fold it into the view) and return it."""
        event = self.events[self.position]
        self.position += 1
        self.view.apply(event)
        return event

    def faster(self, steps: int) -> float:
        """Move `steps` along SPEEDS (negative: slower); returns the new speed."""
        now = self.speed if self.speed > 0 else SPEEDS[-1]
        index = min(range(len(SPEEDS)), key=lambda i: abs(SPEEDS[i] - now))
        self.speed = SPEEDS[max(0, min(len(SPEEDS) - 1, index + steps))]
        return self.speed

    def seek(self, position: int) -> None:
        """Show the run as it was after `position` events: rebuilt from the events.

        The fold starts from the latest checkpoint at or before `position` (itself folded
        from the start), or from a fresh view.
        """
        self.position = max(0, min(position, len(self.events)))
        every = self.checkpoint_every
        start = max((p for p in self._checkpoints if p <= self.position), default=0)
        if start:
            fresh = copy.deepcopy(self._checkpoints[start])
        else:
            fresh = RunView(profile=self.source.profile, scale=self.source.scale)
        for n, event in enumerate(itertools.islice(self.events, start, self.position), start):
            fresh.apply(event)  # one decoded at a time
            if (n + 1) % every == 0 and n + 1 not in self._checkpoints:
                self._checkpoints[n + 1] = copy.deepcopy(fresh)
        # The panes hold this object: refill it rather than replace it.
        vars(self.view).update(vars(fresh))

    def told_before(self, limit: int) -> list[Event]:
        """The latest `limit` events shown that are not samples (a log retold after a jump)."""
        shown = [i for i in self.told if i < self.position][-limit:]
        return [self.events[i] for i in shown]

    def next_boundary(self) -> int | None:
        """The position just after the next phase start (None: there is none ahead)."""
        return next((b + 1 for b in self.boundaries if b + 1 > self.position), None)

    def previous_boundary(self) -> int:
        """The position just after the phase start before the one in view (0: the start)."""
        return max((b + 1 for b in self.boundaries if b + 1 < self.position), default=0)
