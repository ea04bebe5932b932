"""Building runs for tests: a small one-off profile, the run_profile fixture's type, and a
PG 18 superuser's capabilities for tests that need no server."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from explorer.models import Capabilities, Event, PhaseMechanism, Profile, RunRecord, Variant


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


def update_mech(record: RunRecord, variant: str) -> list[PhaseMechanism]:
    """The UPDATE phase's mechanism of each trial of a bulk-write variant (all must be ok)."""
    out = []
    for trial in record.trials:
        if trial.variant == variant:
            assert trial.status == "ok", trial.reason
            phase = next(p for p in trial.phases if p.name == "update")
            assert phase.mechanism is not None
            out.append(phase.mechanism)
    return out
