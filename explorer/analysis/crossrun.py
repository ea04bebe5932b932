"""Two stored runs side by side: `pgwx compare RUN_A RUN_B`.

Variants are matched by name, and a variant of B whose name A lacks is matched with A's variant
of the same knobs (a single run started with `r` is stored as `logged fk=deferred`, the matrix
calls the same knobs `deferred`); phases by name. Run A is the baseline of every comparison, so a
verdict reads "in run B this variant's phase was … than in run A" (PG 15 against PG 18,
yesterday against today, a laptop against a server). The statistics are the same as within a
run (`explorer.analysis.verdict.compare`), on each run's measured trials (warm-ups left out).
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from explorer.analysis import markdown
from explorer.analysis.family import judge_family
from explorer.analysis.history import run_tags
from explorer.analysis.judge import samples, settled
from explorer.analysis.verdict import Verdict, compare
from explorer.models import RunRecord
from explorer.text import printable


@dataclass
class CrossRow:
    """One variant's phase in both runs."""

    variant: str
    """Run A's name of the variant."""
    phase: str
    a: list[float]
    """Seconds per measured trial in run A."""
    b: list[float]
    """Seconds per measured trial in run B."""
    verdict: Verdict
    """Run B against run A."""
    variant_b: str = ""
    """Run B's name of the variant, when it differs (matched by knobs, not by name)."""

    @property
    def label(self) -> str:
        """The variant as both runs name it."""
        return f"{self.variant} (B: {self.variant_b})" if self.variant_b else self.variant


@dataclass
class CrossRuns:
    """The matched comparisons and what could not be matched."""

    a: RunRecord
    b: RunRecord
    threshold: float
    rows: list[CrossRow] = field(default_factory=list)
    only_a: list[str] = field(default_factory=list)
    """'variant' or 'variant phase' found only in run A."""
    only_b: list[str] = field(default_factory=list)
    """'variant' or 'variant phase' found only in run B."""


def _ordered(run: RunRecord, measured: Iterable[str]) -> list[str]:
    """The measured variants in the profile's order (then any the profile does not name)."""
    seen = set(measured)
    named = [v.name for v in run.profile.variants if v.name in seen]
    return named + sorted(seen - set(named))


def _pair_variants(a: RunRecord, b: RunRecord, va: list[str], vb: list[str]) -> dict[str, str]:
    """A's variant name -> B's: same name first, then the same knobs under another name."""
    pairs = {v: v for v in va if v in vb}
    if a.profile.workload != b.profile.workload:
        return pairs
    knobs_a = {v.name: v.knobs for v in a.profile.variants if v.name in va}
    knobs_b = {v.name: v.knobs for v in b.profile.variants}
    for name_b in (v for v in vb if v not in pairs.values() and v in knobs_b):
        # only an unambiguous match: one variant of A has these knobs, and it is unpaired
        same = [name_a for name_a, knobs in knobs_a.items() if knobs == knobs_b[name_b]]
        if len(same) == 1 and same[0] not in pairs:
            pairs[same[0]] = name_b
    return pairs


def compare_runs(a: RunRecord, b: RunRecord, threshold: float | None = None) -> CrossRuns:
    """Every variant × phase that both runs measured, B judged against A.

    Args:
        a: The reference run.
        b: The run judged against it.
        threshold: Noise threshold; run A's profile's when None.
    """
    t = threshold if threshold is not None else a.profile.threshold
    out = CrossRuns(a=a, b=b, threshold=t)
    sa, sb = samples(a.trials), samples(b.trials)
    variants_a = _ordered(a, (v for v, _ in sa.seconds))
    variants_b = _ordered(b, (v for v, _ in sb.seconds))
    pairs = _pair_variants(a, b, variants_a, variants_b)
    out.only_a = [v for v in variants_a if v not in pairs]
    out.only_b = [v for v in variants_b if v not in pairs.values()]
    for variant in variants_a:
        if variant not in pairs:
            continue
        other = pairs[variant]
        phases_b = [p for p in sb.phases if (other, p) in sb.seconds]
        for phase in sa.phases:
            secs_a = sa.seconds.get((variant, phase))
            if secs_a is None:
                continue
            secs_b = sb.seconds.get((other, phase))
            if secs_b is None:
                out.only_a.append(f"{variant} {phase}")
                continue
            verdict = compare(secs_a, secs_b, threshold=t)
            alias = other if other != variant else ""
            out.rows.append(CrossRow(variant, phase, secs_a, secs_b, verdict, alias))
        out.only_b += [
            f"{other} {p}"
            for p in phases_b
            if (variant, p) not in sa.seconds and f"{other} {p}" not in out.only_b
        ]
    # The rows are one table: one Holm family, so it holds 95 % as a whole.
    judged = judge_family({i: (r.a, r.b) for i, r in enumerate(out.rows)}, threshold=t)
    for i, row in enumerate(out.rows):
        row.verdict = judged[i]
    return out


def why_nothing_matched(cross: CrossRuns) -> str | None:
    """One sentence when the two runs share no variant and phase, else None."""
    if cross.rows:
        return None
    a, b = cross.a.profile, cross.b.profile
    if a.workload != b.workload:
        return (
            f"Runs {cross.a.id} ({a.name}) and {cross.b.id} ({b.name}) measure different "
            "experiments, so there is nothing to compare: pick two runs of one profile "
            "(`pgwx runs` lists them)."
        )
    return (
        f"Runs {cross.a.id} and {cross.b.id} share no variant (by name or by knobs) with a "
        "measured phase, so there is nothing to compare."
    )


def _median(values: list[float]) -> str:
    return f"{statistics.median(values):.3f}" if values else ""


def _run_line(tag: str, r: RunRecord) -> str:
    caps = r.server.capabilities
    return (
        f"- {tag}: run {r.id} · {markdown.cell(r.profile.name)} · PostgreSQL {caps.version} · "
        f"{markdown.cell(r.server.dsn_masked)} · scale {r.scale:g}" + markdown.cell(run_tags(r))
    )


def to_markdown(cross: CrossRuns) -> str:
    """The verdict table of run B against run A, and the names that did not match."""
    lines = [
        f"## {cross.b.id} against {cross.a.id}",
        "",
        _run_line("A", cross.a),
        _run_line("B", cross.b),
        "",
    ]
    header = ["variant", "phase", "n A", "median A s", "n B", "median B s"]
    lines += markdown.table(
        [*header, "verdict (B against A)"],
        (
            [r.label, r.phase, len(r.a), _median(r.a), len(r.b), _median(r.b), r.verdict.label()]
            for r in cross.rows
        ),
    )
    nothing = why_nothing_matched(cross)
    if nothing:
        lines += ["", nothing]
    lines += [
        "",
        f"verdict: the Hodges–Lehmann ratio B / A [interval], Holm-corrected across the "
        f"{len(cross.rows)} rows so the table holds 95 %; faster or slower when the interval "
        f"excludes 1 and the ratio is beyond ±{cross.threshold:.0%}; same when the interval "
        "lies inside that band; undecided otherwise. See How to read a verdict (docs/verdicts.md).",
    ]
    open_ = [markdown.cell(f"{r.variant} {r.phase}") for r in cross.rows if not settled(r.verdict)]
    if open_:
        lines.append("Undecided (more trials could change the word): " + ", ".join(open_) + ".")
    if cross.a.scale != cross.b.scale:
        lines.append(
            f"⚠ the runs used different scales ({cross.a.scale:g} and {cross.b.scale:g}): "
            "their durations are not comparable."
        )
    if cross.only_a:
        lines.append(
            "Only in A (not compared): " + ", ".join(map(markdown.cell, cross.only_a)) + "."
        )
    if cross.only_b:
        lines.append(
            "Only in B (not compared): " + ", ".join(map(markdown.cell, cross.only_b)) + "."
        )
    return printable("\n".join(lines) + "\n")  # names from two runs, text only


def to_json(cross: CrossRuns) -> str:
    """The same as `to_markdown`, for programs."""
    rows: list[dict[str, Any]] = [
        {
            "variant": r.variant,
            "variant_b": r.variant_b or r.variant,
            "phase": r.phase,
            "a_seconds": r.a,
            "b_seconds": r.b,
            "verdict": {**r.verdict.model_dump(), "label": r.verdict.label()},
        }
        for r in cross.rows
    ]
    data = {
        "a": cross.a.id,
        "b": cross.b.id,
        "threshold": cross.threshold,
        "rows": rows,
        "only_a": cross.only_a,
        "only_b": cross.only_b,
        "nothing_to_compare": why_nothing_matched(cross),
    }
    return json.dumps(data, indent=2) + "\n"
