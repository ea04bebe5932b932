"""What the lab screen and its controller are given: one frozen configuration, built once.

The app turns its arguments into a `LabConfig` before anything is drawn; the screen and the
`RunController` read only this object (never attributes of the app), so the front end's edge
is typed and nothing below the app imports the app.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from explorer.lab.profiles.catalog import ProfileError, list_profiles
from explorer.lab.run.bench import ServerChoice
from explorer.lab.store.replay import ReplaySource
from explorer.lab.store.results import ResultStore
from explorer.models import Profile

__all__ = ["LabConfig", "ServerChoice", "offered_profiles"]


@dataclass(frozen=True)
class LabConfig:
    """How this lab was opened: which server, what it offers, where runs go."""

    store: ResultStore
    """Where runs go (and where exports and screenshots are written next to)."""
    server: ServerChoice = field(default_factory=ServerChoice)
    """Which server: the one handed in, the user's, or the bundled one."""
    servers: tuple[ServerChoice, ...] = ()
    """Every server, in the order named, when several were (`pgwx --pg 15 --pg 18`, or
    several --dsn): the knob panel lists them and `m` takes turns on those checked. Empty:
    one server, `server`."""
    profiles: tuple[Profile, ...] = ()
    """The profiles offered in the knob panel."""
    profile_problems: tuple[str, ...] = ()
    """Profiles that failed to load, as one sentence each (logged at start)."""
    replay: ReplaySource | None = None
    """A recorded run to play instead of talking to a server."""
    allow_risky: bool = False
    """Allow fsync/full_page_writes off on a server pgwx does not own."""
    sample_interval: float = 0.25
    """Seconds between statistics samples during a run."""
    ascii: bool = False
    """Draw ASCII only."""
    present: bool | None = None
    """The presenter layout (`--present`): True on, False off, None automatic on a wide but
    short, projector-like terminal (`layout_classes` in screens/lab.py)."""


def offered_profiles(given: list[Profile] | None) -> tuple[tuple[Profile, ...], tuple[str, ...]]:
    """The profiles to offer and, when none were given, a sentence per one that failed to load.

    Args:
        given: The profiles to offer (tests); None for the shipped and the user's own.
    """
    if given is not None:
        return tuple(given), ()
    profiles: list[Profile] = []
    problems: list[str] = []
    for path, loaded in list_profiles():
        if isinstance(loaded, ProfileError):
            problems.append(f"profile {path.stem} skipped: {loaded}")
        else:
            profiles.append(loaded)
    return tuple(profiles), tuple(problems)
