"""Two stored runs side by side: `pgwx compare RUN_A RUN_B`.

Variants and phases are matched by name; run A is the baseline of every comparison, so a
verdict reads "in run B this variant's phase was … than in run A" (PG 15 against PG 18,
yesterday against today, a laptop against a server). The statistics are the same as within a
run (`explorer.analysis.verdict.compare`), on each run's measured trials (warm-ups left out).
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from typing import Any

from explorer.analysis.judge import samples, settled
from explorer.analysis.verdict import Verdict, compare
from explorer.models import RunRecord
from explorer.text import printable


@dataclass
class CrossRow:
    """One variant's phase in both runs."""

    variant: str
    phase: str
    a: list[float]
    """Seconds per measured trial in run A."""
    b: list[float]
    """Seconds per measured trial in run B."""
    verdict: Verdict
    """Run B against run A."""


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
    variants_a = list(dict.fromkeys(v for v, _ in sa.seconds))
    variants_b = list(dict.fromkeys(v for v, _ in sb.seconds))
    out.only_a = [v for v in variants_a if v not in variants_b]
    out.only_b = [v for v in variants_b if v not in variants_a]
    for variant in variants_a:
        if variant not in variants_b:
            continue
        phases_b = [p for p in sb.phases if (variant, p) in sb.seconds]
        for phase in sa.phases:
            secs_a = sa.seconds.get((variant, phase))
            if secs_a is None:
                continue
            secs_b = sb.seconds.get((variant, phase))
            if secs_b is None:
                out.only_a.append(f"{variant} {phase}")
                continue
            out.rows.append(
                CrossRow(variant, phase, secs_a, secs_b, compare(secs_a, secs_b, threshold=t))
            )
        out.only_b += [
            f"{variant} {p}"
            for p in phases_b
            if (variant, p) not in sa.seconds and f"{variant} {p}" not in out.only_b
        ]
    return out


def _median(values: list[float]) -> str:
    return f"{statistics.median(values):.3f}" if values else ""


def _run_line(tag: str, r: RunRecord) -> str:
    caps = r.server.capabilities
    return (
        f"- {tag}: run {r.id} · {r.profile.name} · PostgreSQL {caps.version} · "
        f"{r.server.dsn_masked} · scale {r.scale:g}"
    )


def to_markdown(cross: CrossRuns) -> str:
    """The verdict table of run B against run A, and the names that did not match."""
    lines = [
        f"## {cross.b.id} against {cross.a.id}",
        "",
        _run_line("A", cross.a),
        _run_line("B", cross.b),
        "",
        "| variant | phase | n A | median A s | n B | median B s | verdict (B against A) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in cross.rows:
        lines.append(
            f"| {r.variant} | {r.phase} | {len(r.a)} | {_median(r.a)} | {len(r.b)} | "
            f"{_median(r.b)} | {r.verdict.label()} |"
        )
    if not cross.rows:
        lines.append("| (no variant and phase in both runs) | | | | | | |")
    lines += [
        "",
        f"verdict: B's median / A's [95 % interval]; faster or slower only when the interval "
        f"excludes 1 and the change exceeds {cross.threshold:.0%}, otherwise ≈ (no detectable "
        "difference). See the README, How to read a verdict.",
    ]
    open_ = [f"{r.variant} {r.phase}" for r in cross.rows if not settled(r.verdict)]
    if open_:
        lines.append("Undecided (more trials could change the word): " + ", ".join(open_) + ".")
    if cross.a.scale != cross.b.scale:
        lines.append(
            f"⚠ the runs used different scales ({cross.a.scale:g} and {cross.b.scale:g}): "
            "their durations are not comparable."
        )
    if cross.only_a:
        lines.append("Only in A (not compared): " + ", ".join(cross.only_a) + ".")
    if cross.only_b:
        lines.append("Only in B (not compared): " + ", ".join(cross.only_b) + ".")
    return printable("\n".join(lines) + "\n")  # names from two runs, text only


def to_json(cross: CrossRuns) -> str:
    """The same as `to_markdown`, for programs."""
    rows: list[dict[str, Any]] = [
        {
            "variant": r.variant,
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
    }
    return json.dumps(data, indent=2) + "\n"
