"""One experiment across stored runs: `pgwx history PROFILE [--variant V] [--phase P]`.

Each run is judged on its own (its baseline against each variant, the same verdicts as its
report), so runs made on different machines, server versions or weeks apart are never compared
trial against trial — only their ratios are lined up. A run is flagged as a change point for a
variant when its ratio differs from the run before it (same variant and phase) by a two-sided
t test (Welch) on the two log ratios at α = 0.05 (`explorer.analysis.history_flags`: about 5 % false
flags per comparison where nothing changed): "did the new kernel or PostgreSQL minor change
this?" then has an answer to look at. Apache Otava reads the same series from the store's
verdict view for change points over the whole history (docs/team.md).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from explorer.analysis import history_flags, markdown
from explorer.analysis.judge import TOTAL, judge
from explorer.analysis.verdict import Verdict
from explorer.models import RunRecord


def run_tags(record: RunRecord) -> str:
    """' · label "kernel 6.8" · ref v1.2' for a run given --label/--ref, else ''."""
    tags = (("label", record.label), ("ref", record.ref))
    return "".join(f' · {name} "{value}"' for name, value in tags if value)


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
    change_p: float | None = None
    """The p-value of the change against the run before (None: nothing to compare with)."""
    run_label: str | None = None
    """The run's --label."""
    ref: str | None = None
    """The run's --ref."""


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
    previous: dict[tuple[str, str], tuple[HistoryRow, Verdict]] = {}
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
            row.run_label, row.ref = record.label, record.ref
            before = previous.get((name, ph))
            if before is not None:
                moved = history_flags.change(before[1], v)
                if moved is not None:
                    row.change_p = moved.p
                    row.change = _change(before[0], row) if moved.flagged else ""
            previous[(name, ph)] = (row, v)
            rows.append(row)
    return rows


def _change(before: HistoryRow, now: HistoryRow) -> str:
    """'moved from 0.48× to 0.71× (p = 0.003)': the change the t test found significant."""
    p = f"p = {now.change_p:.2g}" if now.change_p is not None else "p unknown"
    if now.ratio is None or before.ratio is None:
        return f"moved beyond the noise of both runs ({p})"
    return f"moved from {before.ratio:.2f}× to {now.ratio:.2f}× ({p})"


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
    header = ["run", "started", "server", "label · ref", "variant", "phase", "verdict", "change"]
    table = []
    for r in rows:
        mark = f"⚑ {r.change}" if r.change else ""
        table.append(
            [r.run_id, r.started_at, r.server, _tags(r), r.variant, r.phase, r.label, mark]
        )
    lines += markdown.table(header, table)
    changes = [r for r in rows if r.change]
    lines.append("")
    if changes:
        lines.append(
            "Change points (⚑): the ratio differs from the run before's beyond both runs' "
            "noise (two-sided t test on the log ratios, α = 0.05 per comparison); compare "
            "the two runs' environments with `pgwx compare RUN_A RUN_B`."
        )
    else:
        lines.append(
            "No change point: no ratio differs from the run before's beyond both runs' noise "
            "(α = 0.05 per comparison)."
        )
    series = f"{profile}/{rows[0].variant}/{rows[0].phase}"
    lines.append(
        "Change points over the whole series: Apache Otava reads the same ratios from the "
        f"store's view verdict_series — `otava analyze pgwx-ratio --config-file otava.yaml "
        f"--branch {markdown.cell(series)}` (docs/team.md)."
    )
    return "\n".join(lines) + "\n"


def _tags(row: HistoryRow) -> str:
    return " · ".join(t for t in (row.run_label, row.ref) if t) or "—"


def to_json(profile: str, rows: list[HistoryRow]) -> str:
    """The same rows, for programs."""
    return json.dumps({"profile": profile, "rows": [asdict(r) for r in rows]}, indent=2) + "\n"
