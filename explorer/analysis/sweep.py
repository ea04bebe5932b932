"""A sweep of one setting drawn as a curve: each value's ratio with its interval, and the
mechanism counters (checkpoints, full-page images, WAL) beside it.

Pure: it reads the judged summary rows of a run whose profile has a `sweep`, one row per value
in the sweep's order, for one phase (the whole trial by default). Every number comes from the
same verdicts and mechanism summaries as the table; nothing is recomputed here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from explorer.analysis.mechanism import MechanismSummary
from explorer.analysis.units import human_bytes
from explorer.analysis.verdict import Verdict
from explorer.models import RunRecord


class SummaryRow(Protocol):
    """What the sweep reads of a table row (the report's SummaryRow, which draws the sweep)."""

    variant: str
    phase: str
    baseline: bool
    verdict: Verdict | None
    mechanism: MechanismSummary | None

    @property
    def ratio(self) -> float | None: ...


BAR = 24
"""Characters of the longest ratio bar."""
UNKNOWN = "?"


@dataclass
class SweepPoint:
    """One value of the swept setting, as drawn."""

    value: str
    ratio: float | None
    """Median time ratio to the first value (1.0 there); None when not measured."""
    low: float | None
    high: float | None
    """The ratio's interval; None on the baseline or with too few trials."""
    word: str
    """The verdict's word (faster / slower / same / undecided), "baseline" on the first."""
    checkpoints: float | None
    fpi: float | None
    wal_bytes: float | None


def points(record: RunRecord, rows: Sequence[SummaryRow], phase: str = "total") -> list[SweepPoint]:
    """The sweep's values in order, each with its ratio, interval and counters (medians)."""
    sweep = record.profile.sweep
    if sweep is None:
        return []
    by_variant = {r.variant: r for r in rows if r.phase == phase}
    out = []
    for name, value in zip(sweep.names(), sweep.values, strict=True):
        row = by_variant.get(name)
        values = row.mechanism.values if row is not None and row.mechanism is not None else {}
        verdict = row.verdict if row is not None else None
        out.append(
            SweepPoint(
                value=value,
                ratio=row.ratio if row is not None else None,
                low=verdict.ci_low if verdict is not None else None,
                high=verdict.ci_high if verdict is not None else None,
                word="baseline" if row is not None and row.baseline else _word(row),
                checkpoints=values.get("checkpoints"),
                fpi=values.get("wal_fpi"),
                wal_bytes=values.get("wal_bytes"),
            )
        )
    return out


def _word(row: SummaryRow | None) -> str:
    if row is None or row.verdict is None:
        return "not run" if row is None else UNKNOWN
    return row.verdict.word


def _num(value: float | None) -> str:
    return UNKNOWN if value is None else f"{round(value):,}"


def chart(record: RunRecord, rows: Sequence[SummaryRow], phase: str = "total") -> list[str]:
    """The sweep as a text chart: one line per value, a bar as long as its time ratio (the
    interval marked with `[` `]` on the same scale), then checkpoints, FPI and WAL."""
    drawn = points(record, rows, phase)
    if not drawn or record.profile.sweep is None:
        return []
    scale_top = max([p.high or p.ratio or 0 for p in drawn] + [p.ratio or 0 for p in drawn] + [1.0])
    width = max(len(p.value) for p in drawn)
    setting = record.profile.sweep.setting
    lines = [
        f"Sweep of {setting} ({phase}: time ratio to {drawn[0].value} with its interval, "
        "bar to scale; checkpoints, full-page images and WAL per trial, medians):",
        "",
        f"  {'value':<{width}}  {'ratio':>5}  {'interval':<11}  {'':<{BAR + 1}}  "
        f"{'ckpts':>5}  {'FPI':>9}  {'WAL':>9}  verdict",
    ]
    for p in drawn:
        bar = _bar(p, scale_top)
        interval = f"{p.low:.2f}–{p.high:.2f}" if p.low is not None and p.high is not None else ""
        ratio = f"{p.ratio:.2f}" if p.ratio is not None else UNKNOWN
        wal = human_bytes(p.wal_bytes) if p.wal_bytes is not None else UNKNOWN
        lines.append(
            f"  {p.value:<{width}}  {ratio:>5}  {interval:<11}  {bar:<{BAR + 1}}  "
            f"{_num(p.checkpoints):>5}  {_num(p.fpi):>9}  {wal:>9}  {p.word}"
        )
    return lines


def _bar(p: SweepPoint, top: float) -> str:
    """`█████[██]` — the ratio as a bar, the interval's ends as brackets on the same scale."""
    if p.ratio is None or top <= 0:
        return ""
    cells = [" "] * (BAR + 1)
    end = max(1, round(p.ratio / top * BAR))
    for i in range(end):
        cells[i] = "█"
    if p.low is not None and p.high is not None:
        lo = min(BAR, max(0, round(p.low / top * BAR) - 1))
        hi = min(BAR, max(lo + 1, round(p.high / top * BAR)))
        cells[lo] = "["
        cells[hi] = "]"
    return "".join(cells).rstrip()


def as_json(
    record: RunRecord, rows: Sequence[SummaryRow], phase: str = "total"
) -> list[dict[str, Any]]:
    """The sweep's points for the JSON report (None where not measured)."""
    return [asdict(p) for p in points(record, rows, phase)]
