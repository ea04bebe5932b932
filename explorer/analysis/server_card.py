"""The end card of a run on several servers (`--pg 15 --pg 18`): the biggest verdict between
the servers, then each server's own card lines.

A run on one server ends on a card (`explorer.analysis.card`); on several it ended on the
table alone, with the verdicts between the servers in one log line. This gives the card the
same story: which variant changed most from the reference server to another
(`unlogged total on 18 vs 15: 0.93× faster`, decided before undecided, the total phase when
the run has several), and per server each variant's line as its own card gives it. The
verdicts are `explorer.analysis.servers.judge_servers`' (those the table shows); the lines
are `card_lines` of each server's run. No new statistics here: only which to tell first.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from explorer.analysis.card import CardLine, card_lines
from explorer.analysis.judge import TOTAL
from explorer.analysis.servers import ServerJudgement, ServerRow, judge_servers, label, ordered
from explorer.models import RunRecord


@dataclass
class ServerCard:
    """What a several-server run's card tells."""

    judged: ServerJudgement
    """The verdicts between the servers (the table's)."""
    biggest: ServerRow | None
    """The server pair's verdict told first (None: none has a number)."""
    servers: list[tuple[str, list[CardLine]]]
    """Per server, the reference first: its label and its run's card lines."""


def biggest_row(judged: ServerJudgement) -> ServerRow | None:
    """The verdict between servers to tell first: decided before undecided, then the ratio
    furthest from 1; the total phase when the run has one (else every phase); None when no
    comparison has a ratio (too few runs)."""
    rows = [r for r in judged.rows if r.verdict.ratio is not None and r.verdict.ratio > 0]
    totals = [r for r in rows if r.phase == TOTAL]
    pool = totals or rows
    if not pool:
        return None

    def size(row: ServerRow) -> tuple[bool, float]:
        ratio = row.verdict.ratio
        assert ratio is not None
        return (row.verdict.decided, abs(math.log(ratio)))

    return max(pool, key=size)


def server_card(
    group: Sequence[RunRecord], judged: ServerJudgement | None = None
) -> ServerCard | None:
    """The card of a run on several servers; None for fewer than two servers' runs.

    Args:
        group: The servers' stored runs.
        judged: Their judgement, when the caller made it (the table's): nothing is judged
            again here; else judged here once.
    """
    runs = ordered(group)
    if len(runs) < 2:
        return None
    judged = judged if judged is not None else judge_servers(runs)
    return ServerCard(
        judged=judged,
        biggest=biggest_row(judged),
        servers=[(label(run), card_lines(run, judged.within_of(run))) for run in judged.runs],
    )
