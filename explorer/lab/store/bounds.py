"""A recording is data of bounded size: what pgwx opens, how much it reads, what it believes.

A `.pgwx` file is made to be passed around, so it is read as an attacker could have written
it. Only a regular file is opened (never a device, a pipe or a directory: they are checked
after opening without blocking, before a byte is read). Its compressed and inflated sizes,
the length of each line, the number of events are held under ceilings generous enough for a
day-long run, and the read stops at the first one crossed with one sentence. Every field a
replay computes with is then checked: times finite, non-negative, in order and within a week;
the run id in pgwx's own format and the same in every event; names within the profile's
limits and naming the profile's own variants.
"""

from __future__ import annotations

import gzip
import math
import os
import stat
import zlib
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import BinaryIO

from explorer.analysis.units import human_bytes
from explorer.errors import PgwxError
from explorer.lab.store.results import RUN_ID
from explorer.models import (
    Event,
    PhaseEnded,
    PhaseStarted,
    RunEnded,
    RunRecord,
    RunStarted,
    TrialEnded,
    TrialResult,
    TrialStarted,
)

MAX_FILE_BYTES = 512 << 20
"""Compressed size: a day-long run's recording is some tens of MB."""
MAX_TEXT_BYTES = 2 << 30
"""Inflated size: a day of events at ~1.5 kB each."""
MAX_HEAD_BYTES = 32 << 20
"""The first line (profile, server, settings, every trial's results): thousands of trials."""
MAX_LINE_BYTES = 1 << 20
"""One event's line; the largest recorded so far is ~7 kB."""
MAX_WHOLE_BYTES = 64 << 20
"""A recording in another JSON layout than pgwx's is read whole, so it must be smaller."""
MAX_EVENTS = 1_000_000
"""A day at ~11 events a second (a sample every quarter second, phases, trials)."""
MAX_SECONDS = 7 * 86_400.0
"""The latest event time believed: a week after the run started."""
MAX_DEPTH = 64
"""Nesting of the first line's JSON (a recording's is about 10 deep); each event's line is held
to the JSON parser's own ceiling of about 200 levels, which pgwx can store and show."""
ORDER_SLACK = 5.0
"""Seconds an event may be stamped before the latest one before it: a notice from another
task is stamped when it is made and told a little later; more is not a pgwx run's order."""
MAX_NAME = 100
"""Profile and phase names longer than this are not pgwx's (variant names stop at 40)."""


class RecordingError(PgwxError, ValueError):
    """A file that cannot be played or imported; str() is one sentence."""


def invalid(path: Path, what: str) -> RecordingError:
    """'PATH is a pgwx recording with WHAT; …': a field no pgwx run could have written."""
    return RecordingError(
        f"{path} is a pgwx recording with {what}; pgwx does not play or import it "
        "(export it again from the store it came from)."
    )


def too_deep(value: object, limit: int = MAX_DEPTH) -> bool:
    """`value` (parsed JSON) nests dicts and lists more than `limit` deep (walked without
    recursion, so the walk itself has no depth limit to hit)."""
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth >= limit:
                return True
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return False


def open_regular(path: Path) -> BinaryIO:
    """`path` opened for reading, if it is a regular file no larger than MAX_FILE_BYTES.

    Opened without blocking (a FIFO with no writer would wait forever), then checked with
    fstat on what was opened, so a link switched meanwhile changes nothing.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        raise RecordingError(f"Cannot read {path} ({exc.strerror or exc}).") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise RecordingError(
                f"{path} is not a regular file (a device, a pipe or a directory); "
                "give the path of a .pgwx recording."
            )
        if st.st_size > MAX_FILE_BYTES:
            raise RecordingError(
                f"{path} is {human_bytes(st.st_size)}, larger than any recording "
                f"({human_bytes(MAX_FILE_BYTES)} at most); pgwx does not read it."
            )
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


class CappedLines:
    """The inflated lines of a gzip'd recording, each and all of them under the ceilings."""

    def __init__(self, path: Path, raw: BinaryIO) -> None:
        self.path = path
        self.stream = gzip.GzipFile(fileobj=raw, mode="rb")
        self.total = 0
        """Inflated bytes read so far."""

    def __enter__(self) -> CappedLines:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stream.close()

    def _truncated(self) -> RecordingError:
        return RecordingError(
            f"{self.path} is truncated or damaged (its compressed data ends early); "
            "copy or export it again."
        )

    def _count(self, size: int) -> None:
        self.total += size
        if self.total > MAX_TEXT_BYTES:
            raise RecordingError(
                f"{self.path} inflates to more than {human_bytes(MAX_TEXT_BYTES)}, more than "
                "a day-long run records; pgwx does not read it."
            )

    def _line(self, limit: int) -> bytes:
        try:
            line = self.stream.readline(limit + 1)
        except (EOFError, OSError, zlib.error):
            raise self._truncated() from None
        if len(line) > limit:
            raise RecordingError(
                f"{self.path} has a line longer than {human_bytes(limit)}, which no pgwx "
                "recording has; pgwx does not read it."
            )
        self._count(len(line))
        return line

    def head(self) -> bytes:
        """The first line: everything but the events in pgwx's layout."""
        return self._line(MAX_HEAD_BYTES)

    def rest(self) -> bytes:
        """Everything after the first line (another JSON layout), at most MAX_WHOLE_BYTES."""
        try:
            text = self.stream.read(MAX_WHOLE_BYTES - self.total + 1)
        except (EOFError, OSError, zlib.error):
            raise self._truncated() from None
        self._count(len(text))
        if self.total > MAX_WHOLE_BYTES:
            raise RecordingError(
                f"{self.path} is not laid out as pgwx writes recordings and inflates to more "
                f"than {human_bytes(MAX_WHOLE_BYTES)}; pgwx does not read it."
            )
        return text

    def __iter__(self) -> Iterator[bytes]:
        """The lines after the first, one event each (and the closing line)."""
        while line := self._line(MAX_LINE_BYTES):
            yield line

    def survey(self, events_key: bytes) -> None:
        """Read everything once, keeping nothing: refuse a file over any ceiling."""
        if not self.head().rstrip().endswith(events_key):
            self.rest()
            return
        for count, _line in enumerate(self, 1):
            if count > MAX_EVENTS + 1:  # the last line closes the list
                raise RecordingError(
                    f"{self.path} holds more than {MAX_EVENTS:,} events, more than a "
                    "day-long run records; pgwx does not read it."
                )


class Consistency:
    """Checks a recording's run, then each of its events in order, for what pgwx would have
    written: one sentence at the first field that could not come from a pgwx run."""

    def __init__(self, path: Path, run: RunRecord) -> None:
        self.path = path
        self.run = run
        self.variants = {v.name for v in run.profile.variants}
        self.last = 0.0
        """Time of the previous event."""
        if not RUN_ID.fullmatch(run.id):
            self._refuse("a run id that pgwx never makes (it writes 20261122-030405-ab12cd)")
        if not math.isfinite(run.scale) or run.scale <= 0:
            self._refuse("a scale that is not a finite number greater than 0")
        if len(run.profile.name) > MAX_NAME:
            self._refuse(f"a profile name longer than {MAX_NAME} characters")
        for trial in run.trials:
            self._trial(trial)

    def _refuse(self, what: str) -> None:
        raise invalid(self.path, what)

    def _variant(self, name: str) -> None:
        if name not in self.variants:
            self._refuse("a variant its profile does not have")

    def _trial(self, trial: TrialResult) -> None:
        if trial.run_id != self.run.id:
            self._refuse("a trial of another run than its own")
        self._variant(trial.variant)
        for phase in trial.phases:
            self._phase(phase.name, phase.seconds)

    def _phase(self, name: str, seconds: float = 0.0) -> None:
        if len(name) > MAX_NAME:
            self._refuse(f"a phase name longer than {MAX_NAME} characters")
        if not (math.isfinite(seconds) and 0 <= seconds <= MAX_SECONDS):
            self._refuse("a phase duration that is not a finite number of seconds")

    def event(self, n: int, event: Event) -> None:
        """Check the `n`th event (0-based) against the run and the event before it."""
        at = event.at
        if not (math.isfinite(at) and 0 <= at <= MAX_SECONDS):
            self._refuse(f"an event time that is not between 0 and a week (event {n})")
        if at < self.last - ORDER_SLACK:
            self._refuse(f"events out of order (event {n} is earlier than the ones before)")
        self.last = max(self.last, at)
        if isinstance(event, RunStarted | RunEnded) and event.run_id != self.run.id:
            self._refuse(f"events of another run than its own (event {n})")
        if isinstance(event, TrialEnded):
            self._trial(event.result)
        elif isinstance(event, TrialStarted):
            self._variant(event.variant)
        elif isinstance(event, PhaseStarted):
            self._variant(event.variant)
            self._phase(event.phase)
        elif isinstance(event, PhaseEnded):
            self._variant(event.variant)
            self._phase(event.result.name, event.result.seconds)
