"""Are pgwx's phase durations the server's? Each phase against the server log's own duration.

Starts a private bundled PostgreSQL 18 in a temporary directory with
`log_min_duration_statement = 0` (every statement's duration in the server log, measured by
the backend in microseconds), runs pgwx's real phases through the Runner, and compares each
phase's duration with the logged duration of the statement(s) it timed:

- durability `copy` (bulk-write, asyncpg COPY) against that session's `COPY`;
- durability `update` against its `UPDATE`;
- fk-timing-restore `load` (the client's total of pg_restore minus its COMMIT) against
  pg_restore's `COPY` — the load also holds pg_restore's start and connection, which the
  server cannot see;
- fk-timing-restore `commit` against pg_restore's `COMMIT`: **circular** on a server pgwx
  owns, where pgwx reads this very line;
- fk-timing-restore `load + commit` (the client's total around pg_restore) against the sum of
  every statement pg_restore's session ran;
- fk-timing-restore `commit` on the same server reached as one pgwx does not own (so the
  watcher times the COMMIT from pg_stat_activity) against pg_restore's `COMMIT`;
- fk-timing-restore `add-fk` / `validate-fk` against the `ALTER TABLE`.

Because the owned-server COMMIT is the log's figure, its row only shows that pgwx took the
right line; the client's total and the polled COMMIT (the same server reached as if it were
not pgwx's, so the watcher times it from pg_stat_activity) are the independent checks.
Goal: within 1 % or 10 ms. The client's figures include what the server cannot see (the
round trip; for pg_restore, starting the process and connecting), which is where they differ.

    python benchmarks/timing_accuracy.py [--scale 1] [--repeats 2]
    python benchmarks/timing_accuracy.py --smoke   # tiny and few variants: does it still work?

A comparison that finds no pair (pgwx's phase without the log's line) fails the benchmark
(exit status 1): the log's lines are found by the run's application names, so a change to
how sessions are named shows here instead of as a silently empty row.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import tempfile
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from explorer.lab.profiles.catalog import load_profile
from explorer.lab.run.runner import Runner, RunOptions
from explorer.lab.scope import run_scope, work_app
from explorer.lab.store.results import ResultStore
from explorer.lab.workloads.restore import restore_app
from explorer.models import Event, PhaseEnded, PhaseStarted, RunRecord
from explorer.server.connect import Target
from explorer.server.embedded import LocalServer
from explorer.server.statement_log import StatementDuration, parse_durations

GOAL_SHARE = 0.01
GOAL_SECONDS = 0.010
NAME_BYTES = 63
"""The server keeps (and logs) the first 63 bytes of an application_name."""
RESTORE_VARIANTS = ["none", "immediate", "deferred", "after-load", "not-valid"]
POLLED_VARIANTS = ["immediate", "deferred"]
SMOKE = {"scale": 0.01, "repeats": 1}
"""`--smoke`: sizes and repeats small enough for CI; it still runs every kind of comparison."""
SMOKE_RESTORE_VARIANTS = ["after-load", "not-valid"]
SMOKE_POLLED_VARIANTS = ["deferred"]


@dataclass
class Window:
    """Where in the server log one phase's statements are."""

    start: int = 0
    end: int = 0


@dataclass
class Comparison:
    """pgwx's seconds against the log's, for one phase kind."""

    label: str
    circular: bool = False
    pairs: list[tuple[float, float]] = field(default_factory=list)


class LogWindows:
    """Records the log file's size at each phase start and end (from the event stream)."""

    def __init__(self, log: Path) -> None:
        self.log = log
        self.windows: dict[tuple[str, int, str], Window] = defaultdict(Window)

    def __call__(self, event: Event) -> None:
        size = self.log.stat().st_size
        if isinstance(event, PhaseStarted):
            self.windows[(event.variant, event.repeat, event.phase)].start = size
        elif isinstance(event, PhaseEnded):
            self.windows[(event.variant, event.repeat, event.result.name)].end = size

    def lines(self, start: int, end: int) -> list[StatementDuration]:
        with self.log.open("rb") as f:
            f.seek(start)
            return parse_durations(f.read(end - start).decode(errors="replace"))


async def run(target: Target, profile_name: str, variants: list[str], args, log: Path):
    profile = load_profile(profile_name)
    store = ResultStore(Path(os.environ["PGWX_STATE_DIR"]) / "results.sqlite")
    windows = LogWindows(log)
    options = RunOptions(
        scale=args.scale,
        repeats=args.repeats,
        warmup=0 if args.smoke else None,
        variants=variants,
        sample=False,
        settle_seconds=0 if args.smoke else 0.5,
    )
    try:
        record = await Runner(target, profile, store, options).run(windows)
    finally:
        store.close()
    return record, windows


def session_apps(record: RunRecord) -> tuple[str, str]:
    """application_name of the run's workload session and of its pg_restore, as logged.

    Each run tags its sessions with its own id (`explorer.lab.scope`), so the names are
    derived from the run, through the same functions the workloads use.
    """
    with run_scope(record.id):
        names = work_app("main"), restore_app()
    main, restore = (n.encode()[:NAME_BYTES].decode(errors="ignore") for n in names)
    return main, restore


def one(lines: list[StatementDuration], app: str, verb: str) -> StatementDuration | None:
    found = [d for d in lines if d.app == app and d.verb == verb]
    return found[-1] if found else None


def collect_bulk(record: RunRecord, w: LogWindows, out: dict[str, Comparison]) -> None:
    main_app, _ = session_apps(record)
    for trial in record.trials:
        for phase in trial.phases:
            if phase.name not in ("copy", "update"):
                continue
            win = w.windows[(trial.variant, trial.repeat, phase.name)]
            line = one(w.lines(win.start, win.end), main_app, phase.name.upper())
            if line:
                out[phase.name].pairs.append((phase.seconds, line.seconds))


def collect_restore(
    record: RunRecord, w: LogWindows, out: dict[str, Comparison], polled: bool
) -> None:
    main_app, restore_app_name = session_apps(record)
    for trial in record.trials:
        if trial.status != "ok":
            print(f"  {trial.variant} #{trial.repeat}: {trial.status} {trial.reason}")
            continue
        p = {ph.name: ph for ph in trial.phases}
        start = w.windows[(trial.variant, trial.repeat, "load")].start
        end = w.windows[(trial.variant, trial.repeat, "commit")].end
        lines = [d for d in w.lines(start, end) if d.app == restore_app_name]
        copy, commit = one(lines, restore_app_name, "COPY"), one(lines, restore_app_name, "COMMIT")
        if copy is None or commit is None:
            print(f"  {trial.variant} #{trial.repeat}: pg_restore's lines not in the log")
            continue
        if polled:
            out[f"commit-polled-{trial.variant}"].pairs.append(
                (p["commit"].seconds, commit.seconds)
            )
            continue
        out["load"].pairs.append((p["load"].seconds, copy.seconds))
        out["commit"].pairs.append((p["commit"].seconds, commit.seconds))
        logged_total = sum(d.seconds for d in lines)
        out["restore-total"].pairs.append((p["load"].seconds + p["commit"].seconds, logged_total))
        for name in ("add-fk", "validate-fk"):
            if name in p:
                win = w.windows[(trial.variant, trial.repeat, name)]
                line = one(w.lines(win.start, win.end), main_app, "ALTER")
                if line:
                    out[f"{name}-{trial.variant}"].pairs.append((p[name].seconds, line.seconds))


def report(out: dict[str, Comparison]) -> list[str]:
    """Print each comparison against the goal; the labels of those that found no pair."""
    print(
        f"\n{'phase':<48} {'n':>2} {'pgwx s':>9} {'log s':>9} {'ratio':>7} "
        f"{'max |diff|':>10}  goal (1 % or 10 ms)"
    )
    empty = []
    for comp in out.values():
        if not comp.pairs:
            print(f"{comp.label:<48}  no pairs")
            empty.append(comp.label)
            continue
        ratios = [a / b if b else float("inf") for a, b in comp.pairs]
        diffs = [abs(a - b) for a, b in comp.pairs]
        ok = all(
            d <= max(GOAL_SECONDS, GOAL_SHARE * b)
            for d, (_, b) in zip(diffs, comp.pairs, strict=True)
        )
        label = comp.label + (" (circular)" if comp.circular else "")
        print(
            f"{label:<48} {len(comp.pairs):>2} "
            f"{statistics.median(a for a, _ in comp.pairs):>9.4f} "
            f"{statistics.median(b for _, b in comp.pairs):>9.4f} "
            f"{statistics.median(ratios):>7.4f} {max(diffs) * 1000:>8.1f} ms  "
            f"{'met' if ok else 'NOT met'} (ratios {min(ratios):.4f}–{max(ratios):.4f})"
        )
    return empty


def comparisons(restore: list[str], polled: list[str]) -> dict[str, Comparison]:
    """The comparisons the chosen variants make, by key."""
    out = {
        "copy": Comparison("durability copy (asyncpg COPY) vs COPY"),
        "update": Comparison("durability update vs UPDATE"),
        "load": Comparison("restore load (client - COMMIT) vs COPY"),
        "commit": Comparison("restore commit vs COMMIT", circular=True),
        "restore-total": Comparison("restore client total vs pg_restore's stmts"),
    }
    for variant in polled:
        out[f"commit-polled-{variant}"] = Comparison(
            f"{variant} commit, polled (not owned) vs COMMIT"
        )
    if "after-load" in restore:
        out["add-fk-after-load"] = Comparison("after-load add-fk vs ALTER … ADD FOREIGN KEY")
    if "not-valid" in restore:
        out["add-fk-not-valid"] = Comparison("not-valid add-fk vs ALTER … NOT VALID")
        out["validate-fk-not-valid"] = Comparison("not-valid validate-fk vs ALTER … VALIDATE")
    return out


async def measure(server: LocalServer, args: argparse.Namespace) -> list[str]:
    """Run the profiles on the owned server and as a foreign one; the comparisons left empty."""
    owned = Target(bundled=server)
    external = Target(overrides=server.connect_kwargs())
    restore = SMOKE_RESTORE_VARIANTS if args.smoke else RESTORE_VARIANTS
    polled = SMOKE_POLLED_VARIANTS if args.smoke else POLLED_VARIANTS
    out = comparisons(restore, polled)
    print("durability (defaults) …", flush=True)
    record, w = await run(owned, "durability", ["defaults"], args, server.log_file)
    collect_bulk(record, w, out)
    print("fk-timing-restore on the owned server (COMMIT from the log) …", flush=True)
    record, w = await run(owned, "fk-timing-restore", restore, args, server.log_file)
    collect_restore(record, w, out, polled=False)
    print("fk-timing-restore as a server pgwx does not own (COMMIT polled) …", flush=True)
    record, w = await run(external, "fk-timing-restore", polled, args, server.log_file)
    collect_restore(record, w, out, polled=True)
    for trial in record.trials:
        if trial.status == "ok":
            c = next(ph for ph in trial.phases if ph.name == "commit")
            print(f"  polled {trial.variant}: commit_resolution={c.detail['commit_resolution']}")
    empty = report(out)
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    return empty


def main(args: argparse.Namespace) -> int:
    """Start a private server that logs every statement, measure, and remove it; the exit
    status (1: a comparison found no pair)."""
    base = Path(tempfile.mkdtemp(prefix="pgwx-bench-", dir="/tmp"))
    base.chmod(0o755)  # the server's own user must reach its directory below
    os.environ["PGWX_STATE_DIR"] = str(base / "state")
    server = LocalServer(base / "pg18")
    try:
        server.init()
        with (server.data_dir / "postgresql.conf").open("a") as conf:
            conf.write("log_min_duration_statement = 0\n")
        server.start()
        empty = asyncio.run(measure(server, args))
    finally:
        server.stop()
        shutil.rmtree(base, ignore_errors=True)
    if empty:
        print(f"no pair found for: {', '.join(empty)}")
        return 1
    return 0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line flags."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    add: Callable[..., object] = parser.add_argument
    add("--scale", type=float, default=1.0, help="size of the profiles (default 1: 10^6 rows)")
    add("--repeats", type=int, default=2, help="trials per variant (default 2)")
    add("--smoke", action="store_true", help="a few seconds' check that it still works (CI)")
    args = parser.parse_args(argv)
    if args.smoke:
        vars(args).update(SMOKE)
    return args


if __name__ == "__main__":
    raise SystemExit(main(parse_args()))
