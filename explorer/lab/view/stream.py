"""The event stream's readers share this: the sink type, replay pacing and narration.

The runner emits events to an `EventSink`; the headless CLI, the app and `pgwx replay` read
them. What a person reads of an event (one line of text) is written once, in `narrate`, and
the pace of a replay is computed once, in `paced`, whatever sleeps between the events.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from explorer.analysis.units import human_bytes
from explorer.models import (
    Event,
    Notice,
    PhaseEnded,
    PhaseMechanism,
    RunEnded,
    RunStarted,
    TrialEnded,
    TrialStarted,
)


def mechanism_brief(m: PhaseMechanism | None) -> str:
    """' · WAL 49.7 MiB · ext 5,760 · CPU 67% (n=12)': a phase's mechanism in a few words.

    The sample count goes in brackets as in every table (`CPU 100% of 13` read as 13 CPUs).
    """
    if m is None:
        return ""
    wal = "?" if m.wal_bytes is None else human_bytes(m.wal_bytes)
    ext = m.writer_sum("extended")
    parts = [f"WAL {wal}", f"ext {'?' if ext is None else f'{ext:,}'}"]
    shares = m.wait_shares()
    if shares:
        parts.append(f"{shares[0][0]} {shares[0][1]:.0%} (n={m.wait_samples})")
    return " · " + " · ".join(parts)


EventSink = Callable[[Event], None]
"""Takes each event of a run, in order, on the event loop (it must not block)."""

LEVEL_MARK = {"info": "·", "warning": "!", "error": "✗"}
"""Notice level → a mark that reads without colour."""


def narrate(event: Event) -> str | None:
    """The line a person reads for an event; None for events that are drawn, not told.

    Samples and phase starts have no line (the charts and the duration pane show them).
    """
    if isinstance(event, RunStarted):
        return (
            f"run {event.run_id}: {event.profile} on {event.server.dsn_masked} "
            f"(PostgreSQL {event.server.capabilities.version}), "
            f"{'up to ' if event.upto else ''}{event.total_trials} trials"
        )
    if isinstance(event, Notice):
        return event.message
    if isinstance(event, TrialStarted):
        # The plan counts rounds without the warm-ups; a rep beside it would contradict it.
        where = f" · {event.plan}" if event.plan else f" · rep {event.repeat}"
        return f"[{event.index}/{'≤' if event.upto else ''}{event.total}] {event.variant}{where}"
    if isinstance(event, PhaseEnded):
        r = event.result
        rows = f" · {r.rows:,} rows" if r.rows is not None else ""
        return f"{r.name:<16} {r.seconds:8.3f} s{rows}{mechanism_brief(r.mechanism)}"
    if isinstance(event, TrialEnded):
        t = event.result
        # No rep here: the trial's start line counts it (by round, where there is a plan).
        if t.status != "ok":
            return f"{t.variant} {t.status}: {t.reason}"
        warm = " (warm-up, not counted)" if t.warmup else ""
        return f"{t.variant} done in {sum(p.seconds for p in t.phases):.2f} s{warm}"
    if isinstance(event, RunEnded):
        return f"run {event.run_id} {event.status}" + (f": {event.reason}" if event.reason else "")
    return None


def level(event: Event) -> str:
    """How loud a narrated event is: 'info', 'warning' or 'error'."""
    if isinstance(event, Notice):
        return event.level
    if isinstance(event, TrialEnded) and event.result.status != "ok":
        return "warning"
    if isinstance(event, RunEnded) and event.status != "finished":
        return "warning"
    return "info"


def paced(events: Iterable[Event], speed: float) -> Iterator[tuple[float, Event]]:
    """Each recorded event with the seconds to wait before it, to replay at `speed`.

    Args:
        events: A run's events in recorded order.
        speed: 1 = recorded pace, 2 = twice as fast; 0 (or less) = no waiting at all.

    Yields:
        (seconds to wait, event); the clock never runs backwards, so an event stamped earlier
        than one before it (notices from another task) waits 0.
    """
    last: float | None = None
    for event in events:
        wait = 0.0
        if speed > 0 and last is not None and event.at > last:
            wait = (event.at - last) / speed
        last = event.at if last is None else max(last, event.at)
        yield wait, event
