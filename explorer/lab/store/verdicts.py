"""Verdicts kept in the store, so that SQL, Grafana and Apache Otava read what pgwx concluded.

The judge (`explorer.analysis.judge`) stays the one place verdicts come from; this module
writes what it returns for a run — one row per variant × phase, the run's server and version
beside it — into a table `verdicts` of the same store (a SQLite file or the team's
PostgreSQL, where it lives in `pgwx_results`), and a view `verdict_series` over it: one row per
run × variant × phase × server, oldest first by `run_started_at`, the shape a chart or a
change-point detector reads (docs/team.md).

The rows are written when a run ends (or is found interrupted), when it is imported, and when
it is pushed into another store. Each row says which rules judged it (`rules`, bumped with every
change to how verdicts are judged) and which pgwx (`judged_by`): a run judged under older rules
is judged again whenever its verdicts are written again (`stale` says which), so the rows keep
in step with what `pgwx report` prints. The table is created by the first write, never on
opening, so a reader with read-only rights reads a store as it is.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from explorer.analysis.judge import Judgement, judge
from explorer.analysis.rules import RULES
from explorer.lab.store.backends import MEASUREMENTS_VIEW, PG_SCHEMA, PostgresBackend, SqlBackend
from explorer.models import RunRecord
from explorer.version import pgwx_version

COLUMNS = (
    ("run_id", "text NOT NULL"),
    ("started_at", "text NOT NULL"),
    ("profile", "text NOT NULL"),
    ("status", "text NOT NULL"),
    ("variant", "text NOT NULL"),
    ("phase", "text NOT NULL"),
    ("baseline", "text NOT NULL"),
    ("server", "text NOT NULL"),
    ("server_version", "text NOT NULL"),
    ("label", "text"),
    ("ref", "text"),
    ("measure", "text"),
    ("value", "double precision"),
    ("ci_low", "double precision"),
    ("ci_high", "double precision"),
    ("confidence", "double precision"),
    ("p_value", "double precision"),
    ("p_adjusted", "double precision"),
    ("word", "text NOT NULL"),
    ("verdict", "text NOT NULL"),
    ("look", "integer"),
    ("n_baseline", "integer NOT NULL"),
    ("n_candidate", "integer NOT NULL"),
    ("median_baseline", "double precision"),
    ("median_candidate", "double precision"),
    ("threshold", "double precision NOT NULL"),
    ("judged_by", "text NOT NULL"),
    ("rules", "integer NOT NULL"),
)
"""The verdict table's columns. `measure` says what `value` and its interval are: `ratio`
(variant / baseline) or `difference_seconds` (a phase below the timer floor); `verdict` is the
word as the report prints it; `look` the measured round it settled at (auto repeats)."""

NAMES = tuple(name for name, _ in COLUMNS)


def _table(sql: SqlBackend) -> str:
    return f"{PG_SCHEMA}.verdicts" if isinstance(sql, PostgresBackend) else "verdicts"


def _create(sql: SqlBackend) -> list[str]:
    """The table and the view, for this backend (each statement idempotent)."""
    pg = isinstance(sql, PostgresBackend)
    table = _table(sql)
    cols = ",\n    ".join(
        f"{name} {kind if pg else kind.replace('double precision', 'REAL')}"
        for name, kind in COLUMNS
    )
    started = "started_at::timestamptz" if pg else "started_at"
    view = f"{PG_SCHEMA}.verdict_series" if pg else "verdict_series"
    statements = [
        f"CREATE TABLE IF NOT EXISTS {table} (\n    {cols},\n"
        "    PRIMARY KEY (run_id, variant, phase))",
        f"CREATE {'OR REPLACE VIEW' if pg else 'VIEW IF NOT EXISTS'} {view} AS\n"
        f"SELECT run_id, {started} AS run_started_at, profile, variant, phase, server, "
        "server_version, label, ref, status, measure, "
        "CASE WHEN measure = 'ratio' THEN value END AS ratio, "
        "CASE WHEN measure = 'difference_seconds' THEN value END AS difference_seconds, "
        "ci_low, ci_high, p_value, p_adjusted, word, verdict, look, n_baseline, "
        f"n_candidate, threshold, judged_by, rules\nFROM {table}",
    ]
    if pg:
        statements.append(
            f"COMMENT ON VIEW {view} IS 'pgwx: one row per run, variant, phase and server: "
            "the verdict against the baseline (ratio or difference, interval, p, word)'"
        )
    return statements


def exists(sql: SqlBackend) -> bool:
    """Whether the store has a verdict table yet (it is made by the first write)."""
    if isinstance(sql, PostgresBackend):
        row = sql.one("SELECT to_regclass(?) IS NOT NULL", (f"{PG_SCHEMA}.verdicts",))
        return bool(row and row[0])
    row = sql.one("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'verdicts'")
    return row is not None


def rows(record: RunRecord, judged: Judgement | None = None) -> list[tuple[Any, ...]]:
    """The run's verdict rows, as the judge gives them now (column order of `COLUMNS`);
    `judged`: the run's judgement already made (else it is judged here)."""
    judged = judged if judged is not None else judge(record)
    caps = record.server.capabilities
    label = getattr(record, "label", None)
    ref = getattr(record, "ref", None)
    out: list[tuple[Any, ...]] = []
    for (variant, phase), v in judged.verdicts.items():
        if v.ratio is not None:
            measure, value, low, high = "ratio", v.ratio, v.ci_low, v.ci_high
        elif v.difference_seconds is not None:
            measure, value = "difference_seconds", v.difference_seconds
            low, high = v.diff_ci_low, v.diff_ci_high
        else:
            measure, value, low, high = None, None, None, None
        out.append(
            (
                record.id,
                record.started_at.isoformat(),
                record.profile.name,
                record.status,
                variant,
                phase,
                judged.baseline,
                record.server.dsn_masked,
                caps.version,
                label,
                ref,
                measure,
                value,
                low,
                high,
                v.confidence,
                v.p_value,
                v.p_adjusted,
                v.word,
                v.label(),
                v.look,
                v.n_baseline,
                v.n_candidate,
                v.median_baseline,
                v.median_candidate,
                v.threshold,
                pgwx_version(),
                RULES,
            )
        )
    return out


def write(sql: SqlBackend, record: RunRecord, judged: Judgement | None = None) -> int:
    """Replace the run's verdict rows with the judge's (`judged`, when the caller has judged
    the run already), inside the caller's transaction.

    Returns:
        How many rows were written.
    """
    _ensure(sql)
    table = _table(sql)
    sql.run(f"DELETE FROM {table} WHERE run_id = ?", (record.id,))
    written = rows(record, judged)
    marks = ", ".join("?" for _ in NAMES)
    sql.many(f"INSERT INTO {table} ({', '.join(NAMES)}) VALUES ({marks})", written)
    return len(written)


def _ensure(sql: SqlBackend) -> None:
    """Make the verdict table and view on the first write; on PostgreSQL also bring an older
    store's long view up to date (its mechanism metrics, label and ref)."""
    if isinstance(sql, PostgresBackend):
        row = sql.one(
            "SELECT count(*) FROM information_schema.columns WHERE table_schema = ? "
            "AND table_name = 'measurements' AND column_name = 'ref'",
            (PG_SCHEMA,),
        )
        if exists(sql) and row and row[0]:
            return
        # one creator at a time: CREATE … IF NOT EXISTS races in PostgreSQL's catalogs
        sql.run("SELECT pg_advisory_xact_lock(hashtext('pgwx_results'))")
        sql.run(MEASUREMENTS_VIEW)
    elif exists(sql):
        return
    for statement in _create(sql):
        sql.run(statement)


def stale(sql: SqlBackend, run_ids: Sequence[str]) -> list[str]:
    """Of `run_ids`, those whose stored verdicts are missing or were judged by older rules."""
    if not run_ids:
        return []
    if not exists(sql):
        return list(run_ids)
    table = _table(sql)
    out = []
    for run_id in run_ids:
        row = sql.one(f"SELECT min(rules), count(*) FROM {table} WHERE run_id = ?", (run_id,))
        if row is None or not row[1] or int(row[0]) < RULES:
            out.append(run_id)
    return out


def read(sql: SqlBackend, run_id: str) -> list[dict[str, Any]]:
    """The run's stored verdict rows as dicts (empty when none were written)."""
    if not exists(sql):
        return []
    found = sql.all(
        f"SELECT {', '.join(NAMES)} FROM {_table(sql)} WHERE run_id = ? ORDER BY variant, phase",
        (run_id,),
    )
    return [dict(zip(NAMES, r, strict=True)) for r in found]
