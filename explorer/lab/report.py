"""The article's table from a stored run: min / median / max per phase, ratios, settings.

Markdown for people, CSV and JSON for anything else. A ratio whose min–max range overlaps
the baseline's is marked "≈": the repeats cannot tell the two apart.
"""

from __future__ import annotations

import csv
import io
import json
import statistics
from dataclasses import asdict, dataclass
from typing import Any

from explorer.lab import environment, mechanism
from explorer.lab.mechanism import MechanismSummary
from explorer.models import RunRecord, TrialResult

MIN_RATIO_BASE = 0.005
"""Seconds: below this baseline median no ratio is printed."""


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
    mechanism: MechanismSummary | None = None
    """What the server did in this phase (WAL, writers, checkpoints, waits), over the trials."""


def phase_mechanism(good: list[TrialResult], phase_name: str, rows: int | None) -> MechanismSummary:
    """The mechanism of one variant's phase, or of its whole trials for "total"."""
    if phase_name == "total":
        return mechanism.summarize_total([t.phases for t in good])
    found = [p for t in good for p in t.phases if p.name == phase_name]
    return mechanism.summarize_phase(found, rows)


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
            row.mechanism = phase_mechanism(good, phase_name, row.rows)
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


def md_cell(text: object) -> str:
    """Run data as literal text in a markdown table cell: `\\` and `|` escaped, one line."""
    out = str(text).replace("\\", "\\\\").replace("|", "\\|")
    return " ".join(out.splitlines())


CSV_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
"""A cell starting with one of these is a formula to a spreadsheet (CSV injection)."""


def csv_cell(value: Any) -> Any:
    """A text cell a spreadsheet reads as text: `'` before a leading = + - @ tab or CR."""
    if isinstance(value, str) and value.startswith(CSV_FORMULA_START):
        return "'" + value
    return value


def to_markdown(record: RunRecord) -> str:
    """The table as an article would print it, plus the settings in force."""
    p = record.profile
    caps = record.server.capabilities
    lines = [
        f"## {md_cell(p.title)}",
        "",
        f"run {record.id} · {record.status} · PostgreSQL {caps.version} · "
        f"{md_cell(record.server.dsn_masked)} · scale {record.scale:g} · baseline "
        f"{md_cell(p.baseline_name())}",
        "",
        *environment_lines(record),
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
        *mechanism.MD_HEADERS,
        "notes",
    ]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "|".join("---" for _ in header) + "|")
    for r in summarize(record):
        cells = [
            md_cell(r.variant),
            md_cell(r.phase),
            str(r.n),
            _fmt_s(r.min),
            _fmt_s(r.median),
            _fmt_s(r.max),
            _fmt_ratio(r),
            "" if r.rows is None else str(r.rows),
            *(md_cell(c) for c in mechanism.md_cells(r.mechanism)),
            md_cell(r.note),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    common, differ = settings_table(record)
    lines += ["", "≈ marks a ratio within the spread of the repeats (the ranges overlap).", ""]
    if record.server.off_defaults:
        lines.append(
            "Off their defaults on this server, not set by pgwx: "
            + "; ".join(record.server.off_defaults)
        )
    lines += [MECHANISM_LEGEND, ""]
    lines += unknown_lines(summarize(record))
    if differ and any(differ.values()):
        lines.append("Settings in force that differ between variants:")
        for variant, values in differ.items():
            lines.append(
                f"- {md_cell(variant)}: " + ", ".join(f"{k}={v}" for k, v in values.items())
            )
    if common:
        lines.append(
            "Settings common to all variants: " + ", ".join(f"{k}={v}" for k, v in common.items())
        )
    return "\n".join(lines) + "\n"


MECHANISM_LEGEND = (
    "WAL is the insert position's advance; WAL/row divides it by the rows; FPI full-page "
    "images; written / ext pages / fsyncs come from pg_stat_io, split by writer (work: the "
    "workload's sessions incl. pg_restore and pgbench, ckpt: checkpointer, bgw: background "
    "writer); ckpts completed during the phase; waits: share of the workload's active "
    "backends in each wait event over n observations. `?` = not measured (and any total "
    "that includes it); medians over the trials."
)
"""What the mechanism columns mean, printed under the markdown table."""


def environment_lines(record: RunRecord) -> list[str]:
    """The environment block of the markdown report (a note for runs stored without one)."""
    env = record.environment
    if env is None:
        return ["Environment: not recorded (run stored before pgwx kept it).", ""]
    return [*environment.describe(env), ""]


def unknown_lines(rows: list[SummaryRow]) -> list[str]:
    """Why some mechanism values are `?`, each reason once (nothing when all were measured)."""
    reasons = list(dict.fromkeys(u for r in rows if r.mechanism for u in r.mechanism.unknown))
    return ["Not measured in this run: " + "; ".join(reasons) + ".", ""] if reasons else []


def _mechanism_fields(r: SummaryRow, unknown: object) -> dict[str, Any]:
    return mechanism.fields(r.mechanism, unknown=unknown)


def to_rows(record: RunRecord, *, unknown: object = mechanism.UNKNOWN) -> list[dict[str, Any]]:
    """Flat dicts, one per table row, for CSV and JSON (`unknown` for what was not measured)."""
    out = []
    for r in summarize(record):
        d = asdict(r)
        d.pop("mechanism")
        d.update(_mechanism_fields(r, unknown))
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
        *mechanism.CSV_FIELDS,
        "note",
    ]
    writer = csv.DictWriter(buf, fieldnames=fields, extrasaction="ignore")
    writer.writeheader()
    for row in rows:
        if isinstance(row.get("waits"), dict):
            row["waits"] = " ".join(f"{w}={s:.3f}" for w, s in row["waits"].items())
        writer.writerow({k: csv_cell(v) for k, v in row.items()})
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
                "rows": to_rows(record, unknown=None),
                "unknown_is": "null: pgwx could not measure it (nor any total that includes it)",
                "environment": (
                    None if record.environment is None else record.environment.model_dump()
                ),
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
