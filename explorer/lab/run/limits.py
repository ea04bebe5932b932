"""Bounds on every size a user can give, checked before anything touches a server.

One function, `sized_workload` (`check_sizes` for its estimate alone), applied by the run
request (`explorer.lab.run.request`) that `pgwx run` and the app both build: the scale must
be a finite number above 0, repeats 1 to 100 (as in profile files), the settle pause 0 to 60
seconds, and the estimated size of one trial under a ceiling that only an explicit opt-in
passes (`--allow-large`). A mistyped `--scale 1e300` is refused with the estimate, not sent
to the server as `generate_series(1, 10^306)`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from explorer.analysis.units import human_bytes
from explorer.errors import UsageError
from explorer.models import Profile

if TYPE_CHECKING:
    from explorer.lab.workloads.base import Workload

MAX_REPEATS = 100
"""Most repeats of each variant (the same bound as a profile file's `repeats`)."""
MAX_SETTLE_SECONDS = 60.0
"""Longest pause after each CHECKPOINT (the same bound as a profile's `settle_seconds`)."""
MAX_ROWS = 50_000_000
"""Estimated rows one trial writes above which `--allow-large` is needed."""
MAX_BYTES = 20 * 1024**3
"""Estimated bytes one trial writes above which `--allow-large` is needed (20 GiB)."""
LARGE_ROWS = 5_000_000
"""Estimated rows from which the estimate is worth showing before the run starts."""


@dataclass(frozen=True)
class SizeEstimate:
    """How big a run is, before it starts."""

    rows: int
    """Rows one trial writes (the workload's scaled counts)."""
    bytes: int
    """Rough bytes one trial writes."""
    trials: int
    """Trials planned (variants × repeats)."""
    upto: bool = False
    """`trials` is the most the run may take (repeats = "auto" may end it sooner)."""

    @property
    def large(self) -> bool:
        """Worth telling the user before the run starts."""
        return self.rows >= LARGE_ROWS or self.bytes >= MAX_BYTES // 10

    @property
    def over_ceiling(self) -> bool:
        """Too big to run without an explicit opt-in."""
        return self.rows > MAX_ROWS or self.bytes > MAX_BYTES

    def describe(self) -> str:
        """E.g. 'about 10,000,000 rows (1.1 GiB) per trial, 15 trials'."""
        rows = f"{self.rows:,}" if self.rows < 10**15 else _power(self.rows)
        size = human_bytes(self.bytes) if self.bytes < 1024**6 else f"{_power(self.bytes)} B"
        most = "up to " if self.upto else ""
        return f"about {rows} rows ({size}) per trial, {most}{self.trials} trials"


def _power(n: int) -> str:
    """A huge count as '10^306' (a float would overflow)."""
    return f"10^{len(str(n)) - 1}"


def check_sizes(
    profile: Profile,
    *,
    scale: float = 1.0,
    repeats: int | str | None = None,
    settle: float | None = None,
    variants: int | None = None,
    allow_large: bool = False,
) -> SizeEstimate:
    """Check every size of a planned run; the estimate when they are all acceptable
    (`sized_workload`, for a caller that has no use for the workload it builds)."""
    return sized_workload(
        profile,
        scale=scale,
        repeats=repeats,
        settle=settle,
        variants=variants,
        allow_large=allow_large,
    )[0]


def sized_workload(
    profile: Profile,
    *,
    scale: float = 1.0,
    repeats: int | str | None = None,
    settle: float | None = None,
    variants: int | None = None,
    allow_large: bool = False,
) -> tuple[SizeEstimate, Workload]:
    """Check every size of a planned run: the estimate, and the scaled workload it was made
    from (built once here, the run's own: `RunOptions.workload`).

    Args:
        profile: The validated profile.
        scale: Multiplier of the workload's sizes (`--scale`).
        repeats: Repeats override (`--repeats`); None, or a non-integer mode such as
            "auto", leaves the count to the profile (or to whoever resolves the mode).
        settle: Pause override after each CHECKPOINT (`--settle`), seconds.
        variants: How many variants run (None: all of the profile's).
        allow_large: The user passed `--allow-large`: the ceiling does not apply.

    Raises:
        UsageError: one sentence naming the option, the bound and what to do.
    """
    if isinstance(scale, bool) or not isinstance(scale, int | float) or not math.isfinite(scale):
        raise UsageError(f"--scale must be a finite number greater than 0, not {scale!r}.")
    if scale <= 0:
        raise UsageError(f"--scale must be greater than 0 (got {scale:g}); try --scale 0.1.")
    # With auto repeats the most a run can take is its ceiling, warm-up included.
    count = (
        profile.max_repeats + profile.warmup
        if profile.repeats == "auto"
        else profile.repeats + profile.warmup
    )
    if isinstance(repeats, int) and not isinstance(repeats, bool):
        if not 1 <= repeats <= MAX_REPEATS:
            raise UsageError(f"--repeats must be between 1 and {MAX_REPEATS} (got {repeats}).")
        count = repeats
    if settle is not None and not (math.isfinite(settle) and 0 <= settle <= MAX_SETTLE_SECONDS):
        raise UsageError(
            f"--settle must be between 0 and {MAX_SETTLE_SECONDS:g} seconds (got {settle:g})."
        )
    # the workloads load the driver: imported here, so the parser's use of the bounds stays light
    from explorer.lab.workloads import build_workload

    try:
        workload = build_workload(profile, scale)
        rows, size = workload.params.estimate()
    except OverflowError:
        raise UsageError(
            f"--scale {scale:g} is far too large for any server; use a scale near 1."
        ) from None
    estimate = SizeEstimate(
        rows=rows,
        bytes=size,
        trials=(variants or len(profile.variants)) * count,
        upto=profile.repeats == "auto" and not isinstance(repeats, int),
    )
    if estimate.over_ceiling and not allow_large:
        raise UsageError(
            f"--scale {scale:g} makes {profile.name} {estimate.describe()}, over pgwx's "
            f"ceiling of {MAX_ROWS:,} rows or {human_bytes(MAX_BYTES)} per trial; "
            "use a smaller --scale, or pass --allow-large if you mean it."
        )
    return estimate, workload
