"""The article's table from a stored run: min / median / max per phase, verdicts, settings.

Markdown for people, CSV and JSON for anything else. Each variant's phase carries a verdict
against the baseline's (`explorer.analysis.judge`): the ratio of medians with its 95 % interval and
one word, "faster" / "slower" only when the trials support it. Warm-up trials are counted
apart and left out of every figure. Beside each timing, what the server did in that phase
(`explorer.analysis.mechanism`).
"""

from __future__ import annotations

import csv
import io
import json
import statistics
from dataclasses import asdict, dataclass
from typing import Any

from explorer.analysis import conditions, mechanism, sweep
from explorer.analysis.card import card_lines, story
from explorer.analysis.gate import EXIT_REGRESSED
from explorer.analysis.judge import TOTAL, Judgement, judge, measured, samples, undecided_text
from explorer.analysis.markdown import cell as md_cell
from explorer.analysis.markdown import table
from explorer.analysis.mechanism import MechanismSummary
from explorer.analysis.paired import pairing_note
from explorer.analysis.rules import RULES
from explorer.analysis.run_family import family_words
from explorer.analysis.verdict import Verdict
from explorer.models import RunRecord, TrialResult
from explorer.text import printable


@dataclass
class SummaryRow:
    """One line of the comparison table."""

    variant: str
    phase: str
    n: int
    min: float | None = None
    median: float | None = None
    max: float | None = None
    verdict: Verdict | None = None
    """Against the baseline's same phase; None on the baseline's own rows."""
    baseline: bool = False
    """This row is the baseline variant's."""
    drift: bool = False
    """On a baseline row: the run's trend test (`explorer.analysis.drift`) found the machine
    drifted beyond the threshold, and this phase was part of the test."""
    rows: int | None = None
    note: str = ""
    """Skip or failure reason, or the phase's extra facts (plan, sizes…)."""
    mechanism: MechanismSummary | None = None
    """What the server did in this phase (WAL, writers, checkpoints, waits), over the trials."""

    @property
    def ratio(self) -> float | None:
        """The verdict's ratio of medians (1.0 on the baseline); None without one."""
        if self.baseline:
            return 1.0 if self.median is not None else None
        return self.verdict.ratio if self.verdict is not None else None

    def verdict_short(self) -> str:
        """The verdict cell of a narrow table: ``2.30× slower``; the interval goes elsewhere."""
        if self.baseline or self.verdict is None:
            return self.verdict_label()
        return self.verdict.short_label()

    def verdict_label(self) -> str:
        """The verdict cell: ``baseline``, ``0.54× [0.50–0.58] faster``, ``too few runs (n=3)``."""
        if self.baseline:
            return "baseline (drifted)" if self.drift else "baseline"
        return self.verdict.label() if self.verdict is not None else ""


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


def settled_early(verdict: Verdict | None, mine: list[float], baseline: list[float] | None) -> str:
    """'settled at round 5/10' when an auto run's verdict was settled at a planned look
    before the last round shown: the word and interval rest on that look's rounds, while n,
    min, median and max are over every round (the two may then seem to disagree)."""
    if verdict is None or verdict.look is None:
        return ""
    rounds = max(len(mine), len(baseline or ()))
    return f"settled at round {verdict.look}/{rounds}" if verdict.look < rounds else ""


def _join(*notes: str) -> str:
    return "; ".join(n for n in notes if n)


def summarize(record: RunRecord, judgement: Judgement | None = None) -> list[SummaryRow]:
    """Aggregate a run's trials into table rows, variants in profile order.

    Args:
        record: The run.
        judgement: Its verdicts, when the caller already has them (or wants another
            threshold); computed from the profile's threshold otherwise.
    """
    judged = judgement or judge(record)
    found_samples = samples(record.trials)
    phase_order = [p for p in found_samples.phases if p != TOTAL]
    multi = TOTAL in found_samples.phases
    names = [v.name for v in record.profile.variants]
    seconds = found_samples.seconds
    base = judged.baseline
    rows: list[SummaryRow] = []
    for name in names:
        mine = [t for t in record.trials if t.variant == name]
        good = measured(mine)
        if not good:
            bad = next((t for t in mine if t.reason), None)
            warm = found_samples.warmups.get(name, 0)
            if bad is None and warm:
                rows.append(SummaryRow(name, "—", 0, note=f"{warm} warm-up, not counted"))
            elif bad is not None or mine:
                rows.append(SummaryRow(name, "—", 0, note=(bad.reason if bad else "") or ""))
            continue
        for phase_name in [*phase_order, *([TOTAL] if multi else [])]:
            values = seconds.get((name, phase_name))
            if not values:
                continue
            row = SummaryRow(
                name, phase_name, len(values), min(values), statistics.median(values), max(values)
            )
            row.baseline = name == base
            row.drift = row.baseline and judged.drifted.get(phase_name, False)
            row.verdict = judged.verdicts.get((name, phase_name))
            if phase_name != "total":
                found = [p for t in good for p in t.phases if p.name == phase_name]
                counts = [p.rows for p in found if p.rows is not None]
                row.rows = int(statistics.median(counts)) if counts else None
                row.note = _note(found[-1].detail) if found else ""
            row.mechanism = phase_mechanism(good, phase_name, row.rows)
            row.note = _join(
                settled_early(row.verdict, values, seconds.get((base, phase_name))), row.note
            )
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


CSV_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
"""A cell starting with one of these is a formula to a spreadsheet (CSV injection)."""


CSV_DIGITS = 7
"""Significant digits of a float in the CSV: a microsecond at a second, not 17 digits of noise."""


def csv_cell(value: Any) -> Any:
    """A text cell a spreadsheet reads as text: `'` before a leading = + - @ tab or CR,
    control characters as visible escapes.

    Floats keep `CSV_DIGITS` significant digits (a number, never prefixed).
    """
    if isinstance(value, float):
        return f"{value:.{CSV_DIGITS}g}"
    if not isinstance(value, str):
        return value
    value = printable(value)  # no control character from a name reaches a spreadsheet
    return "'" + value if value.startswith(CSV_FORMULA_START) else value


def footnotes(record: RunRecord, judged: Judgement) -> list[str]:
    """What the verdicts rest on: threshold, warm-ups, drift and what stayed undecided."""
    out = [verdict_legend(judged)]
    warm = samples(record.trials).warmups
    if warm:
        most = max(warm.values())
        out.append(
            f"{most} warm-up trial{'s' if most > 1 else ''} per variant ran first; "
            "kept in the store, left out of every figure."
        )
    if judged.drift is not None and judged.drift.flagged:
        out.append(judged.drift.sentence(judged.baseline))
    undecided = undecided_text(judged)
    if undecided:
        out.append(undecided)
    last = judged.looks[-1] if judged.looks else None
    if any(
        v.look is not None and last is not None and v.look < last for v in judged.verdicts.values()
    ):
        out.append(
            "settled at round N/M: that verdict was settled at the planned look after round N "
            "and rests on those rounds; n, min, median and max count every round."
        )
    pairing = pairing_note(judged.verdicts)
    if pairing:
        out.append(pairing)
    return out


def story_lines(record: RunRecord, judged: Judgement) -> list[str]:
    """The end card's lines, in its words: the run's story under the table (a matrix only)."""
    if len(record.profile.variants) < 2 or not measured(record.trials):
        return []
    lines = card_lines(record, judged)
    return [
        "In short (total per trial, median; the phase that moved most):",
        *(f"- {md_cell(story(line))}" for line in lines),
        "",
    ]


def p_cell(v: Verdict | None) -> str:
    """``0.0029 (0.017)``: the comparison's own p-value and, in brackets, after the table's
    correction (what faster/slower is decided on); empty without one."""
    if v is None or v.p_value is None:
        return ""
    adjusted = "" if v.p_adjusted is None else f" ({v.p_adjusted:.2g})"
    return f"{v.p_value:.2g}{adjusted}"


def verdict_legend(judged: Judgement) -> str:
    """How to read the verdict column: the estimate, the correction and the four words."""
    t = f"{judged.threshold * 100:g} %"
    n = judged.family_size
    if n == 0:
        # Only the baseline ran (`--variant` picked it alone): nothing was judged here.
        return (
            f"verdict: only the baseline {judged.baseline} ran, so this table compares "
            "nothing; run another variant beside it for a verdict."
        )
    looks = judged.looks
    family = (
        f"Holm-corrected across the table's {n} comparisons"
        if n > 1
        else "one comparison, no correction needed"
    )
    sequential = (
        f", judged at rounds {', '.join(str(x) for x in looks)} (α split over the planned looks)"
        if len(looks) > 1
        else ""
    )
    return (
        "verdict: the Hodges–Lehmann ratio variant / baseline [interval], "
        f"{family}{sequential}: the words are controlled for the whole table (any false "
        "faster/slower at most 5 %), and each interval is drawn at the level its comparison "
        f"was tested at; faster or slower when the interval excludes 1 and the ratio is beyond "
        f"±{t}; same within ±{t} when the whole interval lies inside it; undecided otherwise; "
        "a phase under its timing resolution on both sides (1 ms on pgwx's clock, 50 ms for "
        "an end pgwx polls for) gets the difference in ms against that band. "
        "p (adj.): the Mann–Whitney p of the comparison alone (after the correction). "
        "See How to read a verdict (docs/verdicts.md)." + family_words(judged.tables)
    )


def to_markdown(
    record: RunRecord, threshold: float | None = None, *, judged: Judgement | None = None
) -> str:
    """The table as an article would print it, plus the settings in force (`judged`: the
    run's judgement when the caller has it, so it is not judged again)."""
    judged = judged if judged is not None else judge(record, threshold=threshold)
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
        "verdict",
        "p (adj.)",
        "rows",
        *mechanism.MD_HEADERS,
        "notes",
    ]
    summary = summarize(record, judged)
    lines += table(
        header,
        (
            [
                r.variant,
                r.phase,
                r.n,
                _fmt_s(r.min),
                _fmt_s(r.median),
                _fmt_s(r.max),
                r.verdict_label(),
                p_cell(r.verdict),
                "" if r.rows is None else r.rows,
                *mechanism.md_cells(r.mechanism),
                r.note,
            ]
            for r in summary
        ),
    )
    common, differ = settings_table(record)
    if record.profile.sweep is not None:
        lines += ["", "```", *sweep.chart(record, summary), "```"]
    # names run through the footnotes too: a line break in one must not start a row
    notes = [md_cell(line) for line in footnotes(record, judged)]
    lines += ["", *story_lines(record, judged), *notes, ""]
    if record.server.off_defaults:
        lines.append(
            "Off their defaults on this server, not set by pgwx: "
            + "; ".join(record.server.off_defaults)
        )
    lines += [MECHANISM_LEGEND, ""]
    lines += source_lines(summary)
    lines += unknown_lines(summary)
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
    return printable("\n".join(lines) + "\n")  # names from a profile or a recording


MECHANISM_LEGEND = (
    "WAL is the insert position's advance; WAL/row divides it by the rows; FPI full-page "
    "images; written / ext pages / fsyncs come from pg_stat_io, split by writer (work: the "
    "workload's sessions incl. pg_restore and pgbench, ckpt: checkpointer, bgw: background "
    "writer); evictions: buffers a writer evicted to make room (pg_stat_io, the sign of "
    "shared_buffers pressure); ckpts completed during the phase; waits: share of the "
    "workload's active backends in each wait event over n observations. `?` = not "
    "measured (and any total that includes it); medians over the trials."
)
"""What the mechanism columns mean, printed under the markdown table."""


def environment_lines(record: RunRecord) -> list[str]:
    """The environment block of the markdown report (a note for runs stored without one)."""
    env = record.environment
    if env is None:
        return ["Environment: not recorded (run stored before pgwx kept it).", ""]
    return [*conditions.describe(env), ""]


WORK_SOURCES = {
    "sessions": "the workload sessions' own statistics (pg_stat_get_backend_io / "
    "pg_stat_get_backend_wal, read while each session lived); other client backends are "
    "under other",
    "types": "pg_stat_io summed per backend type (every client backend, an unrelated "
    "session's I/O included; WAL and FPI are the server's) — this server has no "
    "per-session statistics (PostgreSQL 18+)",
    "types: a session came or went": "pg_stat_io summed per backend type where a workload "
    "session ended or another connected during the phase (its own counts vanish with it)",
}
"""What each work source means, for the line under the table."""


def source_lines(rows: list[SummaryRow]) -> list[str]:
    """Which source the work columns came from, each source once (nothing when unmeasured)."""
    seen = list(dict.fromkeys(s for r in rows if r.mechanism for s in r.mechanism.sources))
    if not seen:
        return []
    words = "; ".join(WORK_SOURCES.get(s, s) for s in seen)
    return [f"Work columns from: {words}.", ""]


def unknown_lines(rows: list[SummaryRow]) -> list[str]:
    """Why some mechanism values are `?`, each reason once (nothing when all were measured)."""
    reasons = list(dict.fromkeys(u for r in rows if r.mechanism for u in r.mechanism.unknown))
    return ["Not measured in this run: " + "; ".join(reasons) + ".", ""] if reasons else []


def _mechanism_fields(r: SummaryRow, unknown: object) -> dict[str, Any]:
    return mechanism.fields(r.mechanism, unknown=unknown)


VERDICT_FIELDS = (
    "word",
    "ratio",
    "ci_low",
    "ci_high",
    "difference_seconds",
    "diff_ci_low",
    "diff_ci_high",
    "p_value",
    "p_adjusted",
    "p_method",
    "n_baseline",
    "n_candidate",
    "confidence",
    "threshold",
    "look",
    "pairing",
    "futile",
)
"""Verdict fields in the CSV (flat) and JSON (under "verdict") exports."""


def verdict_dict(row: SummaryRow) -> dict[str, Any] | None:
    """The row's verdict for an export: the fields above plus its table label."""
    if row.baseline:
        return {"word": "baseline", "label": row.verdict_label(), "drift": row.drift}
    if row.verdict is None:
        return None
    d = row.verdict.model_dump(include=set(VERDICT_FIELDS))
    d["label"] = row.verdict.label()
    return d


def to_rows(
    record: RunRecord,
    threshold: float | None = None,
    *,
    unknown: object = mechanism.UNKNOWN,
    judged: Judgement | None = None,
) -> list[dict[str, Any]]:
    """Dicts, one per table row, for CSV and JSON: the verdict nested under "verdict", `unknown`
    for what was not measured."""
    out = []
    if judged is None:
        judged = judge(record, threshold=threshold)
    for r in summarize(record, judged):
        d = asdict(r)
        d.pop("mechanism")
        d["ratio"] = r.ratio
        d["verdict"] = verdict_dict(r)
        d.update(_mechanism_fields(r, unknown))
        out.append(d)
    return out


def to_csv(
    record: RunRecord, threshold: float | None = None, *, judged: Judgement | None = None
) -> str:
    """One header line, one line per table row; the verdict's fields flattened."""
    rows = []
    for d in to_rows(record, threshold, judged=judged):
        v = d.pop("verdict") or {}
        d["verdict"] = v.get("label", "")
        d.update({k: v.get(k) for k in VERDICT_FIELDS if k not in ("word", "ratio")})
        d["word"] = v.get("word")
        rows.append(d)
    buf = io.StringIO()
    fields = [
        "variant",
        "phase",
        "n",
        "min",
        "median",
        "max",
        "verdict",
        "word",
        "ratio",
        *(k for k in VERDICT_FIELDS if k not in ("word", "ratio")),
        "drift",
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


JSON_FORMAT, JSON_VERSION = "pgwx-run", 1
"""The `--format json` document: `explorer/schemas/run-v1.schema.json` describes version 1."""

EXIT_CODES = {
    "decided": 0,
    "failed": 1,
    "refused": 2,
    "internal error": 3,
    "undecided": 4,
    "regressed": EXIT_REGRESSED,
    "cancelled": 130,
}
"""`pgwx run`'s exit status by outcome (a signal N exits 128 + N; `regressed` only with
`--fail-on`); docs/team.md."""


def outcome(record: RunRecord, judged: Judgement) -> str:
    """How a run ended, for a program: decided, undecided, or the run's own status."""
    if record.status != "finished":
        return record.status
    return "undecided" if judged.undecided else "decided"


def to_json(
    record: RunRecord, threshold: float | None = None, *, judged: Judgement | None = None
) -> str:
    """The run's identity, the table rows with their verdicts, and the settings."""
    common, differ = settings_table(record)
    judged = judged if judged is not None else judge(record, threshold=threshold)
    return (
        json.dumps(
            {
                "format": JSON_FORMAT,
                "version": JSON_VERSION,
                "outcome": outcome(record, judged),
                "run": record.id,
                "profile": record.profile.name,
                "status": record.status,
                "server_version": record.server.capabilities.version,
                "server": record.server.dsn_masked,
                "scale": record.scale,
                "baseline": record.profile.baseline_name(),
                "threshold": judged.threshold,
                "rules": RULES,
                "label": record.label,
                "ref": record.ref,
                "warmups": samples(record.trials).warmups,
                "baseline_drift": judged.drifted,
                "undecided": [list(k) for k in judged.undecided],
                "correction": {
                    "method": "holm",
                    "comparisons": judged.family_size,
                    "looks": judged.looks,
                    "alpha": 0.05,
                },
                "rows": to_rows(record, threshold, unknown=None, judged=judged),
                "unknown_is": "null: pgwx could not measure it (nor any total that includes it)",
                "environment": (
                    None if record.environment is None else record.environment.model_dump()
                ),
                "settings_common": common,
                "settings_by_variant": differ,
                **(
                    {"sweep": sweep.as_json(record, summarize(record, judged))}
                    if record.profile.sweep is not None
                    else {}
                ),
            },
            indent=2,
            default=str,
        )
        + "\n"
    )


FORMATS = {"md": to_markdown, "csv": to_csv, "json": to_json}
"""--format value → renderer."""


def render(
    record: RunRecord,
    fmt: str = "md",
    threshold: float | None = None,
    *,
    judged: Judgement | None = None,
) -> str:
    """The table in one of FORMATS; `threshold` overrides the profile's noise threshold;
    `judged`, the run's judgement when the caller has it (judged once, not per format)."""
    return FORMATS[fmt](record, threshold, judged=judged)
