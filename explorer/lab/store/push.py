"""`pgwx push RUN…`: copy runs from one store into another (a laptop's file into the team's).

A run is copied whole — record, trials, events — in one transaction of the receiving store,
as `pgwx import` adds a recording; a run the receiver already holds is left as it is, and a
run still going in another terminal is refused until it ends.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from explorer.lab.store.results import DamagedRecord, ResultStore, StoreError


@dataclass
class Pushed:
    """What a push did, run by run."""

    copied: list[str] = field(default_factory=list)
    already: list[str] = field(default_factory=list)
    """Runs the receiving store held already (left unchanged)."""
    still_running: list[str] = field(default_factory=list)
    """Runs not ended yet (not copied)."""


def push(source: ResultStore, target: ResultStore, refs: list[str]) -> Pushed:
    """Copy the runs `refs` name (ids, prefixes, 'latest' or 'all') from source to target.

    A damaged run (its record does not validate) is not copied; `source.damage` says which.
    """
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
        try:
            record = source.load(run_id)
        except DamagedRecord as exc:
            source.note(str(exc).rstrip("."))  # the others are still copied
            continue
        if record.status == "running":
            out.still_running.append(run_id)
        elif target.has_run(run_id):
            out.already.append(run_id)
        else:
            target.import_run(record, list(source.events(run_id)))
            out.copied.append(run_id)
    return out
