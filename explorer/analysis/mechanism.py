"""The mechanism behind each phase, summed over trials (the live probe is `lab.measure.probe`).

`MechanismSummary` is one table row's mechanism over the trials: medians per value, waits
pooled. A value that any trial could not measure is None — shown as `?` — and so is every
total that includes it (`explorer.analysis.verdict.total`).
"""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass, field
from typing import Literal

from explorer.analysis.units import human_bytes
from explorer.analysis.verdict import total
from explorer.models import WRITERS, PhaseMechanism, PhaseResult

LATE_FIELDS = ("wal_fpi", "wal_records", "work_wal_fpi", "work_wal_records")
"""pg_stat_wal counters a backend publishes only when its transaction has ended."""

IO_KINDS: tuple[Literal["written", "extended", "fsyncs", "evicted"], ...] = (
    "written",
    "extended",
    "fsyncs",
    "evicted",
)
"""The pg_stat_io quantities split by writer (`evicted`: pg_stat_io `evictions`)."""


def fold_late(into: PhaseMechanism, other: PhaseMechanism, into_name: str) -> None:
    """Move `other`'s late-published counters onto `into` (one transaction ran both phases).

    pg_restore --single-transaction publishes its FPI and pg_stat_io counts only when its
    transaction ends, so the load and COMMIT can be told apart for the WAL bytes (insert LSN),
    the waits and the background writers, but not for these: they go on `into`'s row and
    `other` says where they are (`late_in`).
    """
    for name in LATE_FIELDS:
        a, b = getattr(into, name), getattr(other, name)
        setattr(into, name, None if a is None or b is None else a + b)
        setattr(other, name, None)
    if into.writers is not None and other.writers is not None:
        mine, theirs = into.writers["workload"], other.writers.pop("workload")
        for kind in IO_KINDS:
            both = total([getattr(mine, kind), getattr(theirs, kind)])
            setattr(mine, kind, None if both is None else int(both))
    other.late_in = into_name


# --------------------------------------------------------------------------- summaries

Values = dict[str, float | None]
"""Quantity → value for one trial (None: not measured)."""

SUMMED = (
    "wal_bytes",
    "wal_fpi",
    "checkpoints",
    *IO_KINDS,
    *(f"{k}_{w}" for k in IO_KINDS for w in WRITERS),
    "work_wal_bytes",
    "work_wal_fpi",
    "wal_fpi_bytes",
)
"""Every quantity of a summary row, in column order (`work_wal_*`: the WAL of the workload's
own sessions, PostgreSQL 18+; unknown before)."""


def _folded(m: PhaseMechanism) -> set[str]:
    if m.late_in is None:
        return set()
    out = {*LATE_FIELDS, *(f"{k}_workload" for k in IO_KINDS)}
    return out


def phase_values(phase: PhaseResult) -> tuple[Values, set[str]]:
    """(quantity → value, quantities carried on another phase's row) of one trial's phase.

    Phases stored before pgwx measured mechanisms have only the WAL bytes and extended
    pages their workload read around them (PhaseResult.detail); the rest is unknown.
    """
    m = phase.mechanism
    if m is None:
        out: Values = dict.fromkeys(SUMMED)
        for key, name in (("wal_bytes", "wal_bytes"), ("extended_pages", "extended")):
            if isinstance(phase.detail.get(key), int | float):
                out[name] = phase.detail[key]
        return out, set()
    out = {
        "wal_bytes": m.wal_bytes,
        "wal_fpi": m.wal_fpi,
        "checkpoints": m.checkpoints,
        "work_wal_bytes": m.work_wal_bytes,
        "work_wal_fpi": m.work_wal_fpi,
        "wal_fpi_bytes": m.wal_fpi_bytes,
    }
    folded = _folded(m)
    for kind in IO_KINDS:
        for w in WRITERS:
            key = f"{kind}_{w}"
            io = None if m.writers is None else m.writers.get(w)
            out[key] = None if io is None else getattr(io, kind)
        parts = [out[f"{kind}_{w}"] for w in WRITERS if f"{kind}_{w}" not in folded]
        out[kind] = None if m.writers is None else total(parts)
    return out, folded


@dataclass
class MechanismSummary:
    """One table row's mechanism: medians over its trials, waits pooled."""

    values: Values = field(default_factory=dict)
    """Quantity (SUMMED) → median over trials; None when any trial could not measure it."""
    folded: set[str] = field(default_factory=set)
    """Quantities shown on `late_in`'s row instead of this one."""
    late_in: str | None = None
    """The phase whose row carries this phase's late-published counters."""
    rows: int | None = None
    """Median rows of the phase (for WAL per row)."""
    waits: dict[str, int] | None = None
    """Wait → observations pooled over trials, most first; None when never sampled."""
    wait_samples: int = 0
    """Observations behind `waits`."""
    unknown: list[str] = field(default_factory=list)
    """Why values are missing, each reason once."""
    sources: list[str] = field(default_factory=list)
    """Where the work columns came from over the trials (`WorkSource` values, each once;
    "types" also for phases stored before pgwx said)."""

    @property
    def wal_per_row(self) -> float | None:
        """Median WAL bytes per row; None when either is unknown."""
        wal = self.values.get("wal_bytes")
        return None if wal is None or not self.rows else wal / self.rows

    def wait_shares(self) -> list[tuple[str, float]]:
        """(wait, share of the observations), most first."""
        if not self.waits or not self.wait_samples:
            return []
        return [(k, v / self.wait_samples) for k, v in self.waits.items()]


def _median(values: list[float | None]) -> float | None:
    if not values or any(v is None for v in values):
        return None
    return statistics.median(v for v in values if v is not None)


def summarize_phase(phases: list[PhaseResult], rows: int | None) -> MechanismSummary:
    """The mechanism of one variant's phase over its trials (one PhaseResult per trial)."""
    per = [phase_values(p) for p in phases]
    folded = set().union(*(f for _, f in per)) if per else set()
    out = MechanismSummary(rows=rows, folded=folded)
    out.values = {k: _median([v[k] for v, _ in per]) for k in SUMMED}
    late = {p.mechanism.late_in for p in phases if p.mechanism is not None}
    out.late_in = next(iter(late - {None}), None)
    _pool_waits(out, [p.mechanism for p in phases])
    return out


def trial_values(phases: list[PhaseResult]) -> Values:
    """One trial's whole: per quantity the sum over its phases (None when a phase could not
    measure it; a quantity a phase carries on another phase's row counts there only) — the
    per-trial figure behind a table's total row and the end card."""
    sums: Values = {}
    parts = [phase_values(p) for p in phases]
    for key in SUMMED:
        sums[key] = total(0.0 if key in f else v[key] for v, f in parts)
    return sums


def summarize_total(trials: list[list[PhaseResult]]) -> MechanismSummary:
    """The mechanism of whole trials: per trial the sum over its phases, then the median.

    A quantity one phase could not measure makes the trial's total unknown; a quantity a
    phase carries on another phase's row counts there only.
    """
    per_trial = [trial_values(phases) for phases in trials]
    out = MechanismSummary()
    out.values = {k: _median([t[k] for t in per_trial]) for k in SUMMED}
    _pool_waits(out, [p.mechanism for phases in trials for p in phases])
    return out


def _pool_waits(out: MechanismSummary, mechanisms: list[PhaseMechanism | None]) -> None:
    pooled: Counter[str] = Counter()
    seen = False
    reasons: list[str] = []
    sources: list[str] = []
    for m in mechanisms:
        if m is None:
            reasons.append("phases without a sampler (--no-sample, or stored by an older pgwx)")
            continue
        reasons.extend(m.unknown)
        if m.work_source is not None:
            sources.append(m.work_source)
        elif m.writers is not None or m.wal_fpi is not None:
            sources.append("types")
        if m.waits is not None:
            seen = True
            pooled.update(m.waits)
    out.waits = dict(pooled.most_common()) if seen else None
    out.wait_samples = sum(pooled.values())
    out.unknown = list(dict.fromkeys(reasons))
    out.sources = list(dict.fromkeys(sources))


# --------------------------------------------------------------------------- formatting

UNKNOWN = "?"
"""How a value pgwx could not measure is shown, everywhere."""


def top_waits(summary: MechanismSummary, limit: int = 3) -> str:
    """'IO:DataFileExtend 62% · CPU 30% (n=143)'; '?' when never sampled."""
    if summary.waits is None:
        return UNKNOWN
    if not summary.wait_samples:
        return "none seen (n=0)"
    shares = summary.wait_shares()[:limit]
    text = " · ".join(f"{w} {s:.0%}" for w, s in shares)
    return f"{text} (n={summary.wait_samples})"


WRITER_ABBR = {"workload": "work", "checkpointer": "ckpt", "bgwriter": "bgw", "other": "other"}
"""How each writer is named inside a table cell."""

MD_HEADERS = (
    "WAL",
    "WAL/row",
    "FPI",
    "written",
    "ext pages",
    "fsyncs",
    "evictions",
    "ckpts",
    "waits",
)
"""The mechanism's columns in the markdown table, in the order `md_cells` fills them."""

CSV_FIELDS = (
    "wal_bytes",
    "wal_per_row",
    *SUMMED[1:],
    "waits",
    "wait_samples",
    "carried_on",
)
"""The mechanism's CSV / JSON keys (`fields`)."""


def _count(value: float | None) -> str:
    return UNKNOWN if value is None else f"{round(value):,}"


def _bytes(value: float | None, suffix: str = "") -> str:
    if value is None:
        return UNKNOWN
    return human_bytes(value) + suffix


def io_cell(summary: MechanismSummary, kind: str) -> str:
    """'1,204 (ckpt 1,180 · work 24)': the total, then each writer that did any.

    Unknown is '?'; a workload share carried on another phase's row says where it is.
    """
    v = summary.values
    whole = v.get(kind)
    if whole is None:
        return UNKNOWN
    moved = f"{kind}_workload" in summary.folded and summary.late_in
    parts = [
        f"{WRITER_ABBR[w]} {_count(v.get(f'{kind}_{w}'))}"
        for w in WRITERS
        if f"{kind}_{w}" not in summary.folded and round(v.get(f"{kind}_{w}") or 0)
    ]
    if moved:
        parts.append(f"work in {summary.late_in}")
    if not parts or (len(parts) == 1 and parts[0].startswith("work ") and not moved):
        return _count(whole)
    return f"{_count(whole)} ({' · '.join(parts)})"


def _with_work(whole: str, work: str | None) -> str:
    """'12 MiB (work 9.8 MiB)': the server's figure, then the workload sessions' own."""
    return whole if work is None or whole == UNKNOWN else f"{whole} (work {work})"


def md_cells(summary: MechanismSummary | None) -> list[str]:
    """The cells under MD_HEADERS; all empty for a row without trials."""
    if summary is None:
        return [""] * len(MD_HEADERS)
    v = summary.values
    fpi = f"in {summary.late_in}" if "wal_fpi" in summary.folded else _count(v.get("wal_fpi"))
    fpi_bytes = v.get("wal_fpi_bytes")  # 19+ only: unknown before, and then not shown
    if fpi_bytes is not None and fpi != UNKNOWN and "wal_fpi" not in summary.folded:
        fpi = f"{fpi} · {human_bytes(fpi_bytes)}"
    work_fpi = v.get("work_wal_fpi")
    if work_fpi is not None and "wal_fpi" not in summary.folded:
        fpi = _with_work(fpi, _count(work_fpi))
    work_wal = v.get("work_wal_bytes")
    per_row = summary.wal_per_row
    return [
        _with_work(_bytes(v.get("wal_bytes")), None if work_wal is None else _bytes(work_wal)),
        "" if summary.rows is None else _bytes(per_row),
        fpi,
        io_cell(summary, "written"),
        io_cell(summary, "extended"),
        io_cell(summary, "fsyncs"),
        io_cell(summary, "evicted"),
        _count(v.get("checkpoints")),
        top_waits(summary),
    ]


def _plain(value: float) -> float | int:
    """A median of counts that is whole, as an int (52119776, not 52119776.0)."""
    return int(value) if float(value).is_integer() else value


def fields(summary: MechanismSummary | None, *, unknown: object = UNKNOWN) -> dict[str, object]:
    """CSV_FIELDS → value: numbers, `unknown` where not measured, None where not applicable.

    Args:
        summary: The row's mechanism (None for a row without trials).
        unknown: What stands for a value pgwx could not measure ('?' in CSV, None in JSON).
    """
    if summary is None:
        return dict.fromkeys(CSV_FIELDS)
    out: dict[str, object] = {}
    for key in ("wal_bytes", *SUMMED[1:]):
        value = summary.values.get(key)
        if key in summary.folded:
            out[key] = None  # on the `carried_on` row
        else:
            out[key] = unknown if value is None else _plain(value)
    per_row = summary.wal_per_row
    out["wal_per_row"] = None if summary.rows is None else (unknown if per_row is None else per_row)
    shares = summary.wait_shares()
    out["waits"] = unknown if summary.waits is None else {w: round(s, 4) for w, s in shares}
    out["wait_samples"] = summary.wait_samples
    out["carried_on"] = summary.late_in
    return out


def detail_lines(summary: MechanismSummary | None) -> tuple[str, str]:
    """Two lines for a selected table row: the WAL and writers, then the waits."""
    if summary is None:
        return "no trial finished this phase", ""
    cells = dict(zip(MD_HEADERS, md_cells(summary), strict=True))
    wal = f"WAL {cells['WAL']}"
    if cells["WAL/row"]:
        wal += f" ({cells['WAL/row']}/row)"
    first = (
        f"{wal} · FPI {cells['FPI']} · written {cells['written']} · "
        f"extended {cells['ext pages']} · fsyncs {cells['fsyncs']} · "
        f"evictions {cells['evictions']} · checkpoints {cells['ckpts']}"
    )
    if summary.waits is None:
        second = "waits: ? (not sampled)"
    elif not summary.wait_samples:
        second = "waits: no active workload backend seen (n=0)"
    else:
        shares = " · ".join(f"{w} {s:.0%}" for w, s in summary.wait_shares()[:5])
        second = f"waits (n={summary.wait_samples}): {shares}"
    return first, second
