"""One experiment across stored runs: `pgwx history PROFILE [--variant V] [--phase P]`.

Each run is judged on its own (its baseline against each variant, the same verdicts as its
report), so runs made on different machines, server versions or weeks apart are never compared
trial against trial — only their ratios are lined up. A run is flagged as a change point for a
variant when its ratio lies outside the interval of the run before it (of the same variant and
phase): "did the new kernel or PostgreSQL minor change this?" then has an answer to look at.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from explorer.analysis import markdown
from explorer.analysis.judge import TOTAL, judge
from explorer.models import RunRecord


@dataclass
class HistoryRow:
    """One run's verdict for one variant and phase."""

    run_id: str
    started_at: str
    server: str
    """The server's version and masked address."""
    variant: str
    phase: str
    ratio: float | None
    ci_low: float | None
    ci_high: float | None
    label: str
    """The verdict as the run's report prints it."""
    change: str = ""
    """Why this run is a change point against the run before it, else empty."""


def _phase_of(record: RunRecord, wanted: str | None) -> str | None:
    """The phase to follow: the one asked for, else the total, else the only phase."""
    names = [p.name for t in record.trials for p in t.phases]
    if wanted:
        return wanted if wanted in names or wanted == TOTAL else None
    distinct = list(dict.fromkeys(names))
    return TOTAL if len(distinct) > 1 else (distinct[0] if distinct else None)


def history(
    runs: list[RunRecord], *, variant: str | None = None, phase: str | None = None
) -> list[HistoryRow]:
    """The verdicts of each run, oldest first, with change points flagged.

    Args:
        runs: Runs of one profile, with their trials.
        variant: Only this variant (default: every variant but the baseline).
        phase: Only this phase (default: the total, or the only phase).
    """
    rows: list[HistoryRow] = []
    previous: dict[tuple[str, str], HistoryRow] = {}
    for record in sorted(runs, key=lambda r: (r.started_at, r.id)):
        wanted = _phase_of(record, phase)
        if wanted is None:
            continue
        judged = judge(record)
        caps = record.server.capabilities
        for (name, ph), v in judged.verdicts.items():
            if ph != wanted or (variant is not None and name != variant):
                continue
            row = HistoryRow(
                run_id=record.id,
                started_at=record.started_at.strftime("%Y-%m-%d %H:%M"),
                server=f"PostgreSQL {caps.version} · {record.server.dsn_masked}",
                variant=name,
                phase=ph,
                ratio=v.ratio,
                ci_low=v.ci_low,
                ci_high=v.ci_high,
                label=v.label(),
            )
            before = previous.get((name, ph))
            if before is not None:
                row.change = _change(before, row)
            previous[(name, ph)] = row
            rows.append(row)
    return rows


def _change(before: HistoryRow, now: HistoryRow) -> str:
    """'moved from 0.48× to 0.71×, outside 0.45–0.52' when the ratio left the last interval."""
    if now.ratio is None or before.ci_low is None or before.ci_high is None:
        return ""
    if before.ci_low <= now.ratio <= before.ci_high:
        return ""
    was = f"{before.ratio:.2f}×" if before.ratio is not None else "?"
    return (
        f"moved from {was} to {now.ratio:.2f}×, outside the last run's "
        f"{before.ci_low:.2f}–{before.ci_high:.2f}"
    )


def to_markdown(profile: str, rows: list[HistoryRow]) -> str:
    """The history table, then the change points in words."""
    if not rows:
        return (
            f"No stored run of {profile} has a verdict to show (`pgwx runs` lists the "
            "runs; a verdict needs a baseline and five measured trials a side).\n"
        )
    lines = [
        f"## {profile}: verdicts across runs (oldest first)",
        "",
    ]
    header = ["run", "started", "server", "variant", "phase", "verdict", "change"]
    table = []
    for r in rows:
        mark = f"⚑ {r.change}" if r.change else ""
        table.append([r.run_id, r.started_at, r.server, r.variant, r.phase, r.label, mark])
    lines += markdown.table(header, table)
    changes = [r for r in rows if r.change]
    lines.append("")
    if changes:
        lines.append(
            "Change points (⚑): the ratio left the interval of the run before; compare the "
            "two runs' environments with `pgwx compare RUN_A RUN_B`."
        )
    else:
        lines.append("No change point: every ratio stayed inside the interval of the run before.")
    return "\n".join(lines) + "\n"


def to_json(profile: str, rows: list[HistoryRow]) -> str:
    """The same rows, for programs."""
    return json.dumps({"profile": profile, "rows": [asdict(r) for r in rows]}, indent=2) + "\n"
