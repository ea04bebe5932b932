"""`pgwx push RUN…`: copy runs from one store into another (a laptop's file into the team's).

A run is copied whole — record, trials, events — in one transaction of the receiving store,
as `pgwx import` adds a recording, and its verdicts written beside it; a run the receiver
already holds is left as it is (only its verdict rows are written again when they were judged
by older rules), and a run still going in another terminal is refused until it ends.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from explorer.lab.store import verdicts
from explorer.lab.store.backends import is_postgres_url
from explorer.lab.store.results import ResultStore, StoreError
from explorer.paths import results_location


@dataclass
class Pushed:
    """What a push did, run by run."""

    copied: list[str] = field(default_factory=list)
    already: list[str] = field(default_factory=list)
    """Runs the receiving store held already (left unchanged)."""
    still_running: list[str] = field(default_factory=list)
    """Runs not ended yet (not copied)."""
    rejudged: list[str] = field(default_factory=list)
    """Runs the receiver held whose stored verdicts were missing or judged by older rules:
    their verdict rows were written again (nothing else of theirs was touched)."""


def push(source: ResultStore, target: ResultStore, refs: list[str]) -> Pushed:
    """Copy the runs `refs` name (ids, prefixes, 'latest' or 'all') from source to target."""
    if str(source.path) == str(target.path):
        raise StoreError(
            f"Both stores are {source.path}: name the store to push to with --to or "
            "PGWX_RESULTS, and the one to read with --from."
        )
    ids: list[str] = []
    for ref in refs:
        if ref == "all":
            ids += [r.id for r in reversed(source.list_runs(limit=100_000))]
        else:
            ids.append(source.choose(ref)[0])
    out = Pushed()
    for run_id in dict.fromkeys(ids):
        record = source.load(run_id)
        if record.status == "running":
            out.still_running.append(run_id)
        elif target.has_run(run_id):
            out.already.append(run_id)
            if verdicts.stale(target.sql, [run_id]):
                target.write_verdicts(target.load(run_id))
                out.rejudged.append(run_id)
        else:
            target.import_run(record, list(source.events(run_id)))
            out.copied.append(run_id)
    return out


def open_push_source(location: str | None) -> ResultStore:
    """The store `pgwx push` copies from: `--from`, else the store in force (--results /
    PGWX_RESULTS, else the local file). A SQLite file that does not exist is not created:
    one sentence says so instead (a push never succeeds by copying nothing)."""
    where = location or results_location()
    if not is_postgres_url(where) and not Path(where).exists():
        raise StoreError(f"copied 0 runs: {where} holds none (there is no store there).")
    return ResultStore(where)
