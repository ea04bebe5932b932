"""The event stream on stderr, as a person would want to read it (`pgwx run`, `replay`)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from explorer.analysis.units import human_bytes
from explorer.lab.view.stream import LEVEL_MARK, narrate
from explorer.models import Event, Notice, PhaseEnded, PhaseStarted, SampleTaken, TrialEnded
from explorer.text import printable


class Progress:
    """Prints the event stream to stderr as a person would want to read it."""

    def __init__(self, stream: Any = None) -> None:
        self.out = stream or sys.stderr
        self.live = self.out.isatty()
        self.phase = ""
        self._line = False
        self._tag = ""

    def tagged(self, tag: str) -> Callable[[Event], None]:
        """`self`, for the events of one server of several: its lines start with [tag]."""

        def emit(event: Event) -> None:
            self._tag = f"[{tag}] "
            try:
                self(event)
            finally:
                self._tag = ""

        return emit

    def _control(self, sequence: str) -> None:
        """Write pgwx's own terminal control (clear the live line): past the text filter."""
        getattr(self.out, "unfiltered", self.out).write(sequence)

    def _print(self, text: str) -> None:
        if self._line:
            self._control("\r\033[K")
            self._line = False
        print(printable(text), file=self.out, flush=True)

    def __call__(self, event: Event) -> None:
        if isinstance(event, PhaseStarted):
            self.phase = event.phase
        elif isinstance(event, SampleTaken):
            rate = event.sample.get("wal_bytes_per_s")
            if self.live and rate is not None:
                self._control("\r\033[K")
                self.out.write(printable(f"    {self.phase} … WAL {human_bytes(rate)}/s"))
                self.out.flush()
                self._line = True
        else:
            line = narrate(event)
            if line is None:
                return
            if isinstance(event, Notice):
                line = f"  {LEVEL_MARK[event.level]} {line}"
            elif isinstance(event, PhaseEnded | TrialEnded):
                line = f"    {line}"
            self._print(self._tag + line if self._tag else line)
