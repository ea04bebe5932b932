"""The stored-results commands: runs, report, compare, history, replay, export, import, push.

They read and write the results store and print; none imports the engine's driver or the UI at
the top (`pgwx report` starts without asyncpg or textual; a test keeps it so). `replay` opens
the app, and `push` to a team's PostgreSQL store loads the driver, only when asked.
"""

from __future__ import annotations

import argparse
import math
import sys
import time

from explorer.analysis import gate, servers
from explorer.analysis.formats import render, render_servers
from explorer.analysis.history import run_tags
from explorer.analysis.report import EXIT_CODES
from explorer.analysis.units import human_bytes
from explorer.cli.choice import results_store
from explorer.cli.entry import quiet_on_broken_pipe
from explorer.cli.parser import ascii_arg, gate_arg, present_arg
from explorer.cli.progress import Progress
from explorer.errors import UsageError
from explorer.lab.run.request import threshold_option
from explorer.lab.store.hints import hint
from explorer.lab.store.results import ResultStore
from explorer.lab.view.stream import paced


def threshold_arg(value: str | None) -> float | None:
    """--threshold as a fraction (of `report` and `compare`; `run` checks it in its request)."""
    return threshold_option(value)


@quiet_on_broken_pipe
def cmd_runs(args: argparse.Namespace) -> int:
    # Listing never writes: another pgwx may be in the middle of a run.
    store = results_store(args)
    runs = store.list_runs()
    if not runs:
        print(f"no runs yet; try `{hint('run quick-demo')}`")
        return 0
    print(f"{'run':<22} {'profile':<20} {'status':<11} {'trials':<18} server")
    for r in runs:
        counts = store.trial_counts(r.id)
        trials = " ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "-"
        print(
            f"{r.id:<22} {r.profile.name:<20} {r.status:<11} {trials:<18} "
            f"PG {r.server.capabilities.version} {r.server.dsn_masked}"
            + (f" · {r.axis.label} of {', '.join(r.axis.labels)}" if r.axis else "")
            + run_tags(r)
        )
    return 0


def chosen_run(store: ResultStore, ref: str) -> str:
    """The run `ref` names; when pgwx chose it (`latest`), say which on stderr."""
    run_id, chosen = store.choose(ref)
    if chosen:
        print(chosen, file=sys.stderr)
    return run_id


@quiet_on_broken_pipe
def cmd_report(args: argparse.Namespace) -> int:
    threshold = threshold_arg(args.threshold)
    store = results_store(args)
    run_id = chosen_run(store, args.run)
    record = store.load(run_id)
    group = store.group(record)
    if len(group) > 1:  # one server's share of a run on several: show them all
        print(render_servers(group, args.format, threshold), end="")
    else:
        print(render(record, args.format, threshold), end="")
    return 0


@quiet_on_broken_pipe
def cmd_compare(args: argparse.Namespace) -> int:
    from explorer.analysis import crossrun

    threshold = threshold_arg(args.threshold)
    store = results_store(args)
    a = store.load(chosen_run(store, args.run_a))
    b = store.load(chosen_run(store, args.run_b))
    cross = crossrun.compare_runs(a, b, threshold)
    render_cross = crossrun.to_json if args.format == "json" else crossrun.to_markdown
    watching = gate_arg(args)
    print(render_cross(cross), end="")
    if watching is None:
        return 0
    cells = [gate.Comparison(r.variant, r.phase, r.verdict) for r in cross.rows]
    undecided = any(not c.verdict.settled for c in cells if watching.watches(c.variant, c.phase))
    status, said = gate.apply(watching, cells, EXIT_CODES["undecided" if undecided else "decided"])
    if said:
        print(f"pgwx: {said}", file=sys.stderr)
    return status


@quiet_on_broken_pipe
def cmd_replay(args: argparse.Namespace) -> int:
    from explorer.lab.store.replay import ReplaySource

    if args.speed is not None and not 0 <= args.speed < math.inf:
        raise UsageError("--speed must be a finite number, 0 (as fast as possible) or more.")
    store = results_store(args)
    ref = args.run
    if ref == "latest":
        ref = chosen_run(store, ref)
    if not args.headless:
        from explorer.tui.app import run_app

        store.close()
        return run_app(
            replay=ref,
            speed=1.0 if args.speed is None else args.speed,
            ascii=ascii_arg(args),
            present=present_arg(args),
            results=args.results,
        )
    source = ReplaySource.find(store, ref, args.speed or 0.0)
    progress = Progress()
    for wait, event in paced(source.events, source.speed):
        if wait:
            time.sleep(wait)
        progress(event)
    if source.record is not None and source.record.axis is not None:
        others = source.record.axis.runs
        if all(store.has_run(run_id) for run_id in others):
            print(servers.render(store.group(source.record), "md"), end="")
            return 0
        print(f"(this is {servers.label(source.record)}'s share of a run on several servers)")
    if source.record is not None:
        print(render(source.record, "md"), end="")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    """`pgwx export RUN --out FILE`: one self-contained recording of a stored run."""
    from explorer.lab.store.recording import export_run, write_recording

    store = results_store(args)
    try:
        run_id = chosen_run(store, args.run)
        data = export_run(store, run_id, redact_host=args.redact_host)
    finally:
        store.close()
    try:
        path = write_recording(data, args.out, force=args.force)
    except OSError as exc:
        raise UsageError(f"Cannot write {args.out} ({exc.strerror or exc}).") from None
    size = human_bytes(path.stat().st_size)
    print(f"run {run_id} written to {path} ({size}); play it with `pgwx replay {path}`")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    """`pgwx import FILE`: add a recording's run to the local store."""
    from explorer.lab.store.recording import import_recording

    store = results_store(args)
    try:
        record = import_recording(store, args.file)
    finally:
        store.close()
    again = hint(f"report {record.id}")
    print(f"run {record.id} ({record.profile.name}) imported; `{again}` shows it")
    return 0


def cmd_push(args: argparse.Namespace) -> int:
    """`pgwx push RUN…`: copy runs from the local store into the team's."""
    from explorer.lab.store.push import open_push_source, push

    source = open_push_source(args.source)
    target = ResultStore(args.to) if args.to else results_store(args)
    try:
        done = push(source, target, args.runs)
    finally:
        source.close()
        target.close()
    if not (done.copied or done.already or done.still_running):
        print(f"pgwx: copied 0 runs: {source.path} holds none", file=sys.stderr)
        return 1
    for run_id in done.copied:
        print(f"copied {run_id} to {target.path}")
    for run_id in done.already:
        again = (
            " (its verdicts judged again by this pgwx's rules)" if run_id in done.rejudged else ""
        )
        print(f"{run_id} is already in {target.path}; left as it is{again}")
    for run_id in done.still_running:
        print(f"pgwx: {run_id} is still running; push it when it has ended", file=sys.stderr)
    return 1 if done.still_running else 0


@quiet_on_broken_pipe
def cmd_history(args: argparse.Namespace) -> int:
    """`pgwx history PROFILE`: the profile's verdicts run by run, change points flagged."""
    from explorer.analysis import history

    store = results_store(args)
    try:
        runs = [
            store.load(r.id)
            for r in store.list_runs(limit=100_000)
            if r.profile.name == args.profile and r.status != "running"
        ]
    finally:
        store.close()
    rows = history.history(runs, variant=args.variant, phase=args.phase)
    render_history = history.to_json if args.format == "json" else history.to_markdown
    print(render_history(args.profile, rows), end="")
    return 0
