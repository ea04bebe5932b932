"""`--format bmf`: a run in Bencher Metric Format, what teams already feed their dashboards.

Bencher's published format (bencher.dev/docs/reference/bencher-metric-format) is one JSON
object: benchmark name → measure name → ``{"value", "lower_value", "upper_value"}``, with
`value` required and the bounds optional. pgwx writes one benchmark per variant and phase,
``PROFILE/VARIANT/PHASE`` (with ``@SERVER`` in a run on several servers), and these measures:

- ``ratio``: the verdict's Hodges–Lehmann ratio variant / baseline, bounded by its interval
  (not on the baseline's own rows, nor where the phase is below the timer floor and the
  verdict is a difference in seconds: then ``difference-seconds`` with its interval);
- ``seconds``: the median duration, bounded by the fastest and slowest trial;
- ``wal-bytes``: the median WAL bytes of the phase.

A number pgwx could not measure is left out, never written as 0 (BMF has no null). Names are
cut to Bencher's limits (a benchmark name 1,024 characters, a measure 64) — pgwx's are far
shorter: a variant name is at most 40 characters.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from explorer.analysis.judge import Judgement, judge
from explorer.analysis.report import summarize
from explorer.analysis.servers import ServerJudgement, label
from explorer.models import RunRecord

BENCHMARK_MAX = 1024
"""Longest benchmark name Bencher accepts."""


def _metric(value: float | None, low: float | None = None, high: float | None = None) -> Any:
    """One BMF metric, or None when the value is unknown (bounds only when both are known)."""
    if value is None or not math.isfinite(value):
        return None
    out: dict[str, float] = {"value": value}
    if low is not None and high is not None and math.isfinite(low) and math.isfinite(high):
        out["lower_value"], out["upper_value"] = low, high
    return out


def benchmarks(
    record: RunRecord, server: str | None = None, judged: Judgement | None = None
) -> dict[str, dict[str, Any]]:
    """The run's rows as BMF benchmarks (see the module's docstring); `judged`, the run's
    judgement at its profile's threshold when the caller has it."""
    out: dict[str, dict[str, Any]] = {}
    for row in summarize(record, judged if judged is not None else judge(record)):
        if row.phase == "—" or row.median is None:
            continue
        name = f"{record.profile.name}/{row.variant}/{row.phase}"
        if server:
            name += f"@{server}"
        measures: dict[str, Any] = {}
        v = row.verdict
        if v is not None and not row.baseline:
            if v.ratio is not None:
                measures["ratio"] = _metric(v.ratio, v.ci_low, v.ci_high)
            elif v.difference_seconds is not None:
                measures["difference-seconds"] = _metric(
                    v.difference_seconds, v.diff_ci_low, v.diff_ci_high
                )
        measures["seconds"] = _metric(row.median, row.min, row.max)
        wal = row.mechanism.values.get("wal_bytes") if row.mechanism else None
        measures["wal-bytes"] = _metric(wal)
        kept = {k: m for k, m in measures.items() if m is not None}
        if kept:
            out[name[:BENCHMARK_MAX]] = kept
    return out


def to_bmf(record: RunRecord, threshold: float | None = None) -> str:
    """A run as one BMF document (`threshold` is accepted for the renderers' signature; the
    ratio and its interval do not depend on it)."""
    return json.dumps(benchmarks(record), indent=2) + "\n"


def several_to_bmf(
    records: Sequence[RunRecord],
    threshold: float | None = None,
    *,
    judged: ServerJudgement | None = None,
) -> str:
    """A run on several servers: each server's rows, the server in the benchmark's name
    (`judged`: the group's judgement; a run's own is reused when made at its profile's
    threshold, as BMF's rows are)."""
    out: dict[str, dict[str, Any]] = {}
    for record in records:
        own = judged.within_of(record) if judged is not None else None
        if own is not None and own.threshold != record.profile.threshold:
            own = None
        out.update(benchmarks(record, label(record), own))
    return json.dumps(out, indent=2) + "\n"
