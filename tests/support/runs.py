"""Building runs for tests: a small one-off profile, the run_profile fixture's type, and a
PG 18 superuser's capabilities for tests that need no server."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from explorer.models import Capabilities, Event, Profile, RunRecord, Variant


def small_profile(
    workload: str, variants: list[Variant], *, rows: int, repeats: int = 1, name: str = "t"
) -> Profile:
    """A one-off profile for tests: no settle pause, `rows` as the workload's size."""
    return Profile(
        name=name,
        title=name,
        workload=workload,
        params={"rows": rows},
        repeats=repeats,
        settle_seconds=0,
        variants=variants,
    )


RunProfile = Callable[..., Awaitable[tuple[RunRecord, list[Event]]]]
"""What the `run_profile` fixture gives: `await run(target, profile, **options)`."""


def fake_caps(version_num: int = 180006) -> Capabilities:
    """Capabilities of a PG 18 superuser's bundled server, for tests that need no server."""
    from explorer.analysis.calibration import synthetic_caps

    return synthetic_caps(version_num)
