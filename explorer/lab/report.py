"""The article's table from a stored run: min / median / max per phase, ratios, settings.

Markdown for people, CSV and JSON for anything else. A ratio whose min–max range overlaps
the baseline's is marked "≈": the repeats cannot tell the two apart.
"""

from __future__ import annotations

import csv
import io
import json
import statistics
from dataclasses import asdict, dataclass, field
from typing import Any

from explorer.lab.units import human_bytes
from explorer.models import RunRecord, TrialResult

PHASE_COUNTERS = {"wal_bytes": "wal_bytes", "extended_pages": "extends"}
"""Per-phase counter in PhaseResult.detail → the table column it fills."""

MIN_RATIO_BASE = 0.005
"""Seconds: below this baseline median no ratio is printed."""

STAT_COLUMNS = ("wal_bytes", "wal_fpi", "extends", "fsyncs", "top_wait")
"""Per-trial sampler summary columns shown beside the timings."""


@dataclass
class SummaryRow:
    """One line of the comparison table."""

    variant: str
    phase: str
    n: int
    min: float | None = None
    median: float | None = None
    max: float | None = None
    ratio: float | None = None
    """median / the baseline variant's median of the same phase."""
    within_noise: bool = False
    """The min–max ranges of this variant and the baseline overlap."""
    rows: int | None = None
    note: str = ""
    """Skip or failure reason, or the phase's extra facts (plan, sizes…)."""
    stats: dict[str, Any] = field(default_factory=dict)


def _stats_of(trial: TrialResult) -> dict[str, Any]:
    s = trial.stats
    if s is None:
        return {}
    return {
        "wal_bytes": s.wal_bytes,
        "wal_fpi": s.wal_fpi,
        # Pages, not pg_stat_io's extend operations (PG 18 extends many pages at once).
        "extends": s.extended_pages,
        "fsyncs": s.fsyncs,
        "top_wait": s.top_wait,
    }


def _median_stats(trials: list[TrialResult]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    per = [_stats_of(t) for t in trials if t.stats is not None]
    for key in STAT_COLUMNS:
        values = [p[key] for p in per if p.get(key) is not None]
        if not values:
            continue
        if all(isinstance(v, int | float) for v in values):
            out[key] = statistics.median(values)
        else:
            out[key] = max(set(values), key=values.count)
    return out


def _note(detail: dict[str, Any]) -> str:
    parts = []
    for key, value in detail.items():
        if key in ("wal_bytes", "extended_pages"):
            continue  # they have their own columns
        if isinstance(value, dict):
            value = " ".join(f"{k}:{v}" for k, v in value.items())
        parts.append(f"{key}={value}")
    return "; ".join(parts)


def summarize(record: RunRecord) -> list[SummaryRow]:
    """Aggregate a run's trials into table rows, variants in profile order."""
    ok = [t for t in record.trials if t.status == "ok"]
    phase_order: list[str] = []
    for trial in ok:
        for phase in trial.phases:
            if phase.name not in phase_order:
                phase_order.append(phase.name)
    multi = len(phase_order) > 1
    names = [v.name for v in record.profile.variants]
    seconds: dict[tuple[str, str], list[float]] = {}
    for trial in ok:
        for phase in trial.phases:
            seconds.setdefault((trial.variant, phase.name), []).append(phase.seconds)
        if multi:
            seconds.setdefault((trial.variant, "total"), []).append(
                sum(p.seconds for p in trial.phases)
            )
    base = record.profile.baseline_name()
    rows: list[SummaryRow] = []
    for name in names:
        mine = [t for t in record.trials if t.variant == name]
        good = [t for t in mine if t.status == "ok"]
        if not good:
            bad = next((t for t in mine if t.reason), None)
            if bad is not None or mine:
                rows.append(SummaryRow(name, "—", 0, note=(bad.reason if bad else "") or ""))
            continue
        for phase_name in [*phase_order, *(["total"] if multi else [])]:
            values = seconds.get((name, phase_name))
            if not values:
                continue
            row = SummaryRow(
                name, phase_name, len(values), min(values), statistics.median(values), max(values)
            )
            ref = seconds.get((base, phase_name))
            # A ratio against a near-zero baseline (an immediate COMMIT) says nothing.
            if ref and statistics.median(ref) >= MIN_RATIO_BASE:
                row.ratio = row.median / statistics.median(ref)  # type: ignore[operator]
                row.within_noise = name != base and not (
                    min(values) > max(ref) or max(values) < min(ref)
                )
            if phase_name != "total":
                found = [p for t in good for p in t.phases if p.name == phase_name]
                counts = [p.rows for p in found if p.rows is not None]
                row.rows = int(statistics.median(counts)) if counts else None
                row.note = _note(found[-1].detail) if found else ""
            for key, column in PHASE_COUNTERS.items():
                # Per trial: this phase's counter, or for "total" the sum over its phases.
                values = []
                for t in good:
                    counted = [
                        p.detail[key]
                        for p in t.phases
                        if key in p.detail and phase_name in ("total", p.name)
                    ]
                    if counted:
                        values.append(sum(counted))
                if values:
                    row.stats[column] = statistics.median(values)
            if phase_name == "total" or not multi:
                # The sampler's window also spans untimed steps between phases, so the
                # phases' own counters win where both exist.
                row.stats = {**_median_stats(good), **row.stats}
            rows.append(row)
        failed = [t for t in mine if t.status in ("failed", "cancelled")]
        if failed:
            rows.append(
                SummaryRow(
                    name,
                    "—",
                    len(failed),
                    note=f"{len(failed)} {failed[0].status}: {failed[0].reason}",
                )
            )
    return rows


def settings_table(record: RunRecord) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """(settings common to all variants, per-variant settings that differ)."""
    first: dict[str, dict[str, str]] = {}
    for trial in record.trials:
        if trial.status == "ok" and trial.variant not in first:
            first[trial.variant] = trial.settings
    if not first:
        return {}, {}
    keys = sorted({k for s in first.values() for k in s})
    common = {
        k: next(iter(first.values())).get(k, "")
        for k in keys
        if len({s.get(k) for s in first.values()}) == 1
    }
    differ = {v: {k: s.get(k, "") for k in keys if k not in common} for v, s in first.items()}
    return common, differ


def _fmt_s(value: float | None) -> str:
    return "" if value is None else f"{value:.3f}"


def _fmt_ratio(row: SummaryRow) -> str:
    if row.ratio is None:
        return ""
    return ("≈" if row.within_noise else "") + f"{row.ratio:.2f}"


def _fmt_stat(key: str, value: Any) -> str:
    if value is None:
        return ""
    if key == "wal_bytes":
        return human_bytes(value)
    if isinstance(value, float):
        return f"{value:.0f}"
    return str(value)


def to_markdown(record: RunRecord) -> str:
    """The table as an article would print it, plus the settings in force."""
    p = record.profile
    caps = record.server.capabilities
    lines = [
        f"## {p.title}",
        "",
        f"run {record.id} · {record.status} · PostgreSQL {caps.version} · "
        f"{record.server.dsn_masked} · scale {record.scale:g} · baseline "
        f"{p.baseline_name()}",
        "",
    ]
    header = [
        "variant",
        "phase",
        "n",
        "min s",
        "median s",
        "max s",
        "ratio",
        "rows",
        "WAL",
        "FPI",
        "ext pages",
        "fsyncs",
        "top wait",
        "notes",
    ]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "|".join("---" for _ in header) + "|")
    for r in summarize(record):
        cells = [
            r.variant,
            r.phase,
            str(r.n),
            _fmt_s(r.min),
            _fmt_s(r.median),
            _fmt_s(r.max),
            _fmt_ratio(r),
            "" if r.rows is None else str(r.rows),
            *(_fmt_stat(k, r.stats.get(k)) for k in STAT_COLUMNS),
            r.note.replace("|", "/"),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    common, differ = settings_table(record)
    lines += ["", "≈ marks a ratio within the spread of the repeats (the ranges overlap).", ""]
    if record.server.off_defaults:
        lines.append(
            "Off their defaults on this server, not set by pgwx: "
            + "; ".join(record.server.off_defaults)
        )
    if differ and any(differ.values()):
        lines.append("Settings in force that differ between variants:")
        for variant, values in differ.items():
            lines.append(f"- {variant}: " + ", ".join(f"{k}={v}" for k, v in values.items()))
    if common:
        lines.append(
            "Settings common to all variants: " + ", ".join(f"{k}={v}" for k, v in common.items())
        )
    return "\n".join(lines) + "\n"


def to_rows(record: RunRecord) -> list[dict[str, Any]]:
    """Flat dicts, one per table row, for CSV and JSON."""
    out = []
    for r in summarize(record):
        d = asdict(r)
        stats = d.pop("stats")
        for key in STAT_COLUMNS:
            d[key] = stats.get(key)
        out.append(d)
    return out


def to_csv(record: RunRecord) -> str:
    """One header line, one line per table row."""
    rows = to_rows(record)
    buf = io.StringIO()
    fields = [
        "variant",
        "phase",
        "n",
        "min",
        "median",
        "max",
        "ratio",
        "within_noise",
        "rows",
        *STAT_COLUMNS,
        "note",
    ]
    writer = csv.DictWriter(buf, fieldnames=fields, extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


def to_json(record: RunRecord) -> str:
    """The run's identity, the table rows and the settings."""
    common, differ = settings_table(record)
    return (
        json.dumps(
            {
                "run": record.id,
                "profile": record.profile.name,
                "status": record.status,
                "server_version": record.server.capabilities.version,
                "server": record.server.dsn_masked,
                "scale": record.scale,
                "baseline": record.profile.baseline_name(),
                "rows": to_rows(record),
                "settings_common": common,
                "settings_by_variant": differ,
            },
            indent=2,
            default=str,
        )
        + "\n"
    )


FORMATS = {"md": to_markdown, "csv": to_csv, "json": to_json}
"""--format value → renderer."""


def render(record: RunRecord, fmt: str = "md") -> str:
    """The table in one of FORMATS."""
    return FORMATS[fmt](record)
