"""What a front end asks to run, checked in one place before anything touches a server.

`RunRequest.build` is the one door: `pgwx run` and the app both build a request, and every
rule about what a run may be is applied here in the order users meet it — the variants
named, then the sizes (`explorer.lab.run.limits`), the warm-up, the noise threshold and the
time budget. Each refusal is a `UsageError` of one sentence naming the option, the same
sentence whichever front end asked.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from explorer.analysis.plan import least_comparisons, plan_sentence, refusal
from explorer.errors import UsageError
from explorer.lab.run.limits import SizeEstimate, sized_workload
from explorer.models import Profile, Variant, parse_budget, parse_sweep, parse_threshold

if TYPE_CHECKING:
    from explorer.lab.workloads.base import Workload

MAX_WARMUP = 10
"""Most warm-up rounds a run may ask for."""


@dataclass(frozen=True)
class RunOptions:
    """How to run a profile, beyond the profile itself (what the runner reads)."""

    scale: float = 1.0
    """Multiplies the workload's size parameters."""
    repeats: int | None = None
    """A fixed number of measured trials per variant, overriding the profile's repeats."""
    warmup: int | None = None
    """Overrides the profile's warm-up rounds (0: none)."""
    threshold: float | None = None
    """Overrides the profile's noise threshold (a fraction, 0.05 = 5 %)."""
    budget: float | None = None
    """Overrides the profile's time budget in seconds (repeats = "auto")."""
    variants: list[str] | None = None
    """Run only these variants (by name)."""
    allow_risky: bool = False
    """Allow fsync/full_page_writes off on a server pgwx does not own."""
    allow_large: bool = False
    """`--allow-large`: past the size ceiling, and the run's data bounds raised
    (`explorer.lab.workloads.data_bounds`)."""
    sample: bool = True
    """Run the statistics sampler beside the workload."""
    sample_interval: float = 0.25
    """Seconds between samples."""
    settle_seconds: float | None = None
    """Overrides the profile's pause after CHECKPOINT."""
    trust_sql: bool = False
    """Run a profile's own SQL unfenced (as pgwx's own user) where the fence cannot be made."""
    label: str | None = None
    """A free label kept with the run (`--label`), shown in runs, history and compare."""
    ref: str | None = None
    """A git ref or version kept with the run (`--ref`)."""
    workload: Workload | None = field(default=None, compare=False, repr=False)
    """The profile's workload, scaled, as the request built it for the size estimate: the
    runner of one server's run takes it rather than building it again (None: the runner
    builds it). A workload keeps its prepared data, so two runs at once never share one
    (`for_another_run`)."""

    def for_another_run(self) -> RunOptions:
        """These options for a run beside the one that takes `workload` (another server's):
        that run builds its own."""
        return replace(self, workload=None)


LABEL_MAX = 200
"""Longest --label / --ref kept (models.RunRecord)."""


def select_variants(profile: Profile, wanted: Sequence[str] | None) -> list[Variant]:
    """The profile's variants, or the named subset; UsageError names what does not exist."""
    if not wanted:
        return list(profile.variants)
    known = {v.name for v in profile.variants}
    missing = [w for w in wanted if w not in known]
    if missing:
        raise UsageError(
            f"profile {profile.name} has no variant {', '.join(missing)}; "
            f"it has {', '.join(sorted(known))}"
        )
    return [v for v in profile.variants if v.name in wanted]


def option_value(option: str, value: Any, parse: Callable[[Any], float]) -> float | None:
    """An option's value through its parser; UsageError in one sentence naming the option."""
    if value is None:
        return None
    try:
        return parse(value)
    except ValueError as exc:
        raise UsageError(f"{option}: {exc}.") from None


def threshold_option(value: Any) -> float | None:
    """--threshold as a fraction (5%, 0.05), None when not given."""
    return option_value("--threshold", value, parse_threshold)


def budget_option(value: Any) -> float | None:
    """--budget in seconds (600, 90s, 10m, 1h), None when not given."""
    return option_value("--budget", value, parse_budget)


@dataclass(frozen=True)
class RunRequest:
    """A run that passed every check: the profile, the runner's options, the size estimate."""

    profile: Profile
    """The profile as loaded (the runner applies the overrides in `options`)."""
    options: RunOptions
    """Scale, overrides, variant subset, opt-ins, sampling."""
    estimate: SizeEstimate
    """How big one trial is and how many are planned (shown first when large)."""
    variants: list[Variant] = field(default_factory=list)
    """The variants that will run."""

    @classmethod
    def build(
        cls,
        profile: Profile,
        *,
        scale: float = 1.0,
        repeats: int | None = None,
        warmup: int | None = None,
        threshold: str | float | None = None,
        budget: str | float | None = None,
        variants: Sequence[str] | None = None,
        settle: float | None = None,
        allow_large: bool = False,
        allow_risky: bool = False,
        sample: bool = True,
        sample_interval: float = 0.25,
        trust_sql: bool = False,
        allow_undecidable: bool = False,
        servers: int = 1,
        label: str | None = None,
        ref: str | None = None,
    ) -> RunRequest:
        """Check a run as a user asked for it (options as typed: threshold '5%', budget '10m').

        Raises:
            UsageError: one sentence naming the option, what is wrong and what to do.
        """
        # A bad --variant or an absurd size fails here, before any server work.
        chosen = select_variants(profile, variants)
        estimate, workload = sized_workload(
            profile,
            scale=scale,
            repeats=repeats,
            settle=settle,
            variants=len(chosen),
            allow_large=allow_large,
        )
        if warmup is not None and not 0 <= warmup <= MAX_WARMUP:
            raise UsageError(f"--warmup must be between 0 and {MAX_WARMUP}.")
        # Fixed --repeats too few for any comparison to be decided (fewer than 5 trials a side):
        # refused before any server work (`explorer.analysis.plan`).
        # Only a number the user typed: a profile's own repeats are its author's choice.
        fixed = profile.model_copy(update={"repeats": repeats}) if repeats else None
        refused = fixed and refusal(fixed, least_comparisons(len(chosen), servers))
        if refused and not allow_undecidable:
            raise UsageError(refused)
        for option, text in (("--label", label), ("--ref", ref)):
            if text is not None and not 0 < len(text.strip()) <= LABEL_MAX:
                raise UsageError(f"{option} takes 1 to {LABEL_MAX} characters.")
        options = RunOptions(
            scale=scale,
            repeats=repeats,
            warmup=warmup,
            threshold=threshold_option(threshold),
            budget=budget_option(budget),
            variants=list(variants) if variants else None,
            allow_risky=allow_risky,
            allow_large=allow_large,
            sample=sample,
            sample_interval=sample_interval,
            settle_seconds=settle,
            trust_sql=trust_sql,
            label=label.strip() if label else None,
            ref=ref.strip() if ref else None,
            workload=workload,
        )
        return cls(profile=profile, options=options, estimate=estimate, variants=chosen)


def swept(profile: Profile, spec: str) -> Profile:
    """The profile with `--sweep NAME=V1,V2,…`: one variant per value, on the baseline
    variant's knobs; UsageError with one sentence when the spec is not one."""
    try:
        sweep = parse_sweep(spec)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    data = profile.model_dump()
    data["sweep"] = sweep.model_dump()
    return Profile.model_validate(data)


def run_plan(request: RunRequest, servers: int = 1, noise: float | None = None) -> str:
    """The plan sentence a front end says before the first trial (`explorer.analysis.plan`),
    with this machine's trial-to-trial `noise` when a self-test kept it."""
    o = request.options
    update: dict[str, Any] = {}
    if o.repeats is not None:
        update["repeats"] = o.repeats
    if o.threshold is not None:
        update["threshold"] = o.threshold
    profile = request.profile.model_copy(update=update)
    variants = len(request.variants)
    # Within one server the blocked t over every variant of the round; with several, the
    # between-server comparisons are the paired t of their two columns: the fewer degrees of
    # freedom of the two, so the plan never promises more than either family can do.
    columns = variants if servers == 1 else 2
    return plan_sentence(profile, least_comparisons(variants, servers), noise, columns)
