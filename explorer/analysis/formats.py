"""Every `--format` of `pgwx run` and `report`: the table's own (md, csv, json) and the
formats built on them (bmf), for one run or a run on several servers.

Its own module so the renderers built on `report` and `servers` (`explorer.analysis.bmf`)
are listed beside theirs without either importing them back.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from explorer.analysis import bmf, report, servers
from explorer.analysis.judge import Judgement
from explorer.models import RunRecord

FORMATS: dict[str, Callable[[RunRecord, float | None], str]] = {
    **report.FORMATS,
    "bmf": bmf.to_bmf,
}
"""--format value → renderer of one run."""

SERVER_FORMATS: dict[str, Callable[[Sequence[RunRecord], float | None], str]] = {
    **servers.FORMATS,
    "bmf": bmf.several_to_bmf,
}
"""--format value → renderer of a run on several servers."""


def render(
    record: RunRecord,
    fmt: str = "md",
    threshold: float | None = None,
    *,
    judged: Judgement | None = None,
) -> str:
    """One run in one of FORMATS; `judged`, the run's judgement when the caller has it (the
    table's own formats then do not judge it again)."""
    if judged is not None and fmt in report.FORMATS:
        return report.render(record, fmt, threshold, judged=judged)
    return FORMATS[fmt](record, threshold)


def render_servers(
    runs: Sequence[RunRecord],
    fmt: str = "md",
    threshold: float | None = None,
    *,
    judged: servers.ServerJudgement | None = None,
) -> str:
    """A run on several servers in one of SERVER_FORMATS; `judged`, the group's judgement
    when the caller has it (each run and the servers' table are then not judged again)."""
    if judged is not None and fmt in servers.FORMATS:
        return servers.render(runs, fmt, threshold, judged=judged)
    if judged is not None and fmt == "bmf":
        return bmf.several_to_bmf(runs, threshold, judged=judged)
    return SERVER_FORMATS[fmt](runs, threshold)
