"""One error rate for everything a run prints: the tables of a run on several servers share α.

A run on S servers prints S tables (each server's variants against its baseline) and one
table between the servers. Each Holm-corrected alone holds 5 %, but together they made a
false faster/slower in 7.8–10.5 % of simulated two-server A/A runs (issue 33). Here the run's
α = 5 % is split equally over its S + 1 tables (Bonferroni across tables, Holm within each,
and each table's share split again over its planned looks): the chance of any false word
anywhere in the run stays at or under 5 % under any dependence between the tables — and they
are dependent, the between-servers table reuses every server's trials.

An equal split needs only S, which every server's run knows from its `ServerAxis`, so a
server's table judged alone (the app, `pgwx report` of one run) gives the same words as in the
whole run's report.
"""

from __future__ import annotations

from explorer.analysis.sequential import ALPHA
from explorer.models import RunRecord


def tables_for_servers(servers: int) -> int:
    """Tables a run on `servers` servers prints: one per server plus the one between them (a
    run on one server prints one)."""
    return servers + 1 if servers > 1 else 1


def tables_in_run(record: RunRecord) -> int:
    """Tables the run `record` belongs to prints (see `tables_for_servers`)."""
    axis = record.axis
    return tables_for_servers(len(axis.runs) if axis is not None else 1)


def table_alpha(tables: int) -> float:
    """Each table's share of the run's α."""
    return ALPHA / max(tables, 1)


def family_words(tables: int) -> str:
    """The legend's clause on what the words hold together ('' for a run of one table)."""
    if tables <= 1:
        return ""
    return (
        f" This run prints {tables} such tables (one per server and the one between them); "
        f"they share the 95 %: α 5 % is split equally between them ({ALPHA / tables * 100:.2g} "
        "% each), so no faster/slower anywhere in the run is false in more than 5 % of runs."
    )
