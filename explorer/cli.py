"""Command line: `pgwx` opens the app; `pgwx run`, `runs`, `report`, `replay`, `profiles`, `server`.

Every error a user can cause ends here as one sentence on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from explorer.lab.profiles import ProfileError, ProfileShadowed, list_profiles, load_profile
from explorer.lab.report import FORMATS, human_bytes, render
from explorer.lab.results import ResultStore, StoreError
from explorer.models import (
    Event,
    Notice,
    PhaseEnded,
    PhaseStarted,
    RunEnded,
    RunStarted,
    SampleTaken,
    TrialEnded,
    TrialStarted,
)
from explorer.server.connect import LIBPQ_ENV, ConnectError, Target
from explorer.server.embedded import LocalServer, ServerError

USER_ERRORS = (ConnectError, ProfileError, StoreError, ServerError, ValueError, OSError)


def _server_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--dsn",
        help="connection string of your server (password is never shown); "
        "without it and without PGHOST/PGSERVICE…, pgwx starts its bundled PG 18",
    )
    p.add_argument("--data-dir", type=Path, help="cluster directory of the bundled server")
    p.add_argument(
        "--keep-server",
        action="store_true",
        help="leave the bundled server running when pgwx exits",
    )


def build_parser() -> argparse.ArgumentParser:
    """The whole command line, with help for every option."""
    parser = argparse.ArgumentParser(
        prog="pgwx",
        description="A terminal lab for the PostgreSQL write path. "
        "With no command, opens the interactive app.",
    )
    _server_args(parser)
    parser.add_argument(
        "--allow-risky",
        action="store_true",
        help="in the app: allow fsync/full_page_writes off on a server pgwx does not own",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    run = sub.add_parser("run", help="run a profile's matrix headless and print the table")
    run.add_argument("profile", help="a profile name (see `pgwx profiles`) or a .toml path")
    _server_args(run)
    run.add_argument("--scale", type=float, default=1.0, help="multiply the profile's sizes")
    run.add_argument("--repeats", type=int, help="override the profile's repeats")
    run.add_argument(
        "--variant",
        action="append",
        dest="variants",
        metavar="NAME",
        help="run only this variant (repeatable)",
    )
    run.add_argument(
        "--allow-risky",
        action="store_true",
        help="allow fsync/full_page_writes off on a server pgwx does not own",
    )
    run.add_argument("--no-sample", action="store_true", help="do not run the stats sampler")
    run.add_argument("--settle", type=float, help="seconds to pause after each CHECKPOINT")
    run.add_argument("--format", choices=sorted(FORMATS), default="md")

    sub.add_parser("runs", help="list stored runs")
    rep = sub.add_parser("report", help="print a stored run's table again")
    rep.add_argument("run", nargs="?", default="latest", help="run id, prefix, or 'latest'")
    rep.add_argument("--format", choices=sorted(FORMATS), default="md")
    rpl = sub.add_parser("replay", help="play a stored run's events back, without a server")
    rpl.add_argument("run", nargs="?", default="latest")
    rpl.add_argument(
        "--speed", type=float, default=0.0, help="1 = real time, 0 = as fast as possible (headless)"
    )
    rpl.add_argument("--headless", action="store_true", help="print instead of opening the app")
    sub.add_parser("profiles", help="list the profiles: yours, then the shipped ones")
    # Your own load (issue 10): write a starting profile, check one against a server.
    new = sub.add_parser("new", help="write a commented starting profile for your own load")
    new.add_argument("name", help="profile name; writes NAME.toml in the current directory")
    chk = sub.add_parser("check", help="validate a profile against a server without running it")
    chk.add_argument("profile", help="a .toml path or a profile name")
    _server_args(chk)
    srv = sub.add_parser("server", help="start, stop or show the bundled server")
    srv.add_argument("action", choices=["start", "stop", "status"])
    srv.add_argument("--data-dir", type=Path)
    return parser


def make_target(args: argparse.Namespace, say: Callable[[str], None]) -> Target:
    """The user's server, or the bundled one started now."""
    if args.dsn or any(os.environ.get(v) for v in LIBPQ_ENV):
        return Target(dsn=args.dsn)
    server = LocalServer(args.data_dir)
    if not server.is_running():
        say(f"starting bundled PostgreSQL {server.version} in {server.data_dir} …")
    server.start()
    return Target(bundled=server)


def stop_if_ours(target: Target, keep: bool, say: Callable[[str], None]) -> None:
    """Stop the bundled server if this process started it and it is not to be kept."""
    server = target.bundled
    if server is not None and server.started_here and not keep:
        server.stop()
    elif server is not None and keep:
        say(f"bundled server left running in {server.data_dir} (`pgwx server stop`)")


def sampler_factory(interval: float) -> Callable[[Target, Any], Any] | None:
    """A Sampler builder, or None when the sampler module is not available."""
    try:
        from explorer.lab.sampler import Sampler
    except ImportError:
        return None
    return lambda target, caps: Sampler(target, caps, interval=interval)


class Progress:
    """Prints the event stream to stderr as a person would want to read it."""

    def __init__(self, stream: Any = None) -> None:
        self.out = stream or sys.stderr
        self.live = self.out.isatty()
        self.phase = ""
        self._line = False

    def _print(self, text: str) -> None:
        if self._line:
            self.out.write("\r\033[K")
            self._line = False
        print(text, file=self.out, flush=True)

    def __call__(self, event: Event) -> None:
        if isinstance(event, RunStarted):
            self._print(
                f"pgwx: {event.profile} on {event.server.dsn_masked} "
                f"(PostgreSQL {event.server.capabilities.version}), "
                f"{event.total_trials} trials"
            )
        elif isinstance(event, Notice):
            mark = {"info": "·", "warning": "!", "error": "✗"}[event.level]
            self._print(f"  {mark} {event.message}")
        elif isinstance(event, TrialStarted):
            self._print(f"[{event.index}/{event.total}] {event.variant} · rep {event.repeat}")
        elif isinstance(event, PhaseStarted):
            self.phase = event.phase
        elif isinstance(event, PhaseEnded):
            r = event.result
            rows = f" · {r.rows:,} rows" if r.rows is not None else ""
            self._print(f"    {r.name:<16} {r.seconds:8.3f} s{rows}")
        elif isinstance(event, SampleTaken) and self.live:
            rate = event.sample.get("wal_bytes_per_s")
            if rate is not None:
                self.out.write(f"\r\033[K    {self.phase} … WAL {human_bytes(rate)}/s")
                self.out.flush()
                self._line = True
        elif isinstance(event, TrialEnded) and event.result.status != "ok":
            self._print(f"    {event.result.status}: {event.result.reason}")
        elif isinstance(event, RunEnded):
            self._print(
                f"run {event.run_id} {event.status}" + (f": {event.reason}" if event.reason else "")
            )


def cmd_run(args: argparse.Namespace) -> int:
    """`pgwx run PROFILE`: the matrix, progress on stderr, the table on stdout."""
    from explorer.lab.runner import Runner, RunOptions, select_variants

    profile = load_profile(args.profile)
    select_variants(profile, args.variants)  # a bad --variant fails before any server work
    if args.scale <= 0:
        raise ValueError("--scale must be greater than 0")
    say = Progress()
    store = ResultStore()
    target = make_target(args, say._print)
    options = RunOptions(
        scale=args.scale,
        repeats=args.repeats,
        variants=args.variants,
        allow_risky=args.allow_risky,
        sample=not args.no_sample,
        settle_seconds=args.settle,
    )
    runner = Runner(
        target, profile, store, options, sampler_factory=sampler_factory(options.sample_interval)
    )
    try:
        record = asyncio.run(runner.run(say))
    except KeyboardInterrupt:
        say._print(
            f"cancelled: server settings restored, finished trials kept in run "
            f"{runner.run_id} (`pgwx report {runner.run_id}`)"
        )
        return 130
    finally:
        stop_if_ours(target, args.keep_server, say._print)
        store.close()
    print(render(record, args.format), end="")
    say._print(f"saved as run {record.id}; `pgwx report {record.id} --format csv|json`")
    return 0 if record.status == "finished" else 1


def cmd_runs(_args: argparse.Namespace) -> int:
    store = ResultStore()
    store.mark_interrupted()
    runs = store.list_runs()
    if not runs:
        print("no runs yet; try `pgwx run quick-demo`")
        return 0
    print(f"{'run':<22} {'profile':<20} {'status':<11} {'trials':<18} server")
    for r in runs:
        counts = store.trial_counts(r.id)
        trials = " ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "-"
        print(
            f"{r.id:<22} {r.profile.name:<20} {r.status:<11} {trials:<18} "
            f"PG {r.server.capabilities.version} {r.server.dsn_masked}"
        )
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    store = ResultStore()
    print(render(store.load(args.run), args.format), end="")
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    store = ResultStore()
    run_id = store.resolve(args.run)
    if not args.headless:
        from explorer.tui.app import run_app

        return run_app(replay=run_id)
    progress = Progress()
    last = 0.0
    import time

    for event in store.events(run_id):
        if args.speed > 0 and event.at > last:
            time.sleep((event.at - last) / args.speed)
        last = max(last, event.at)
        progress(event)
    print(render(store.load(run_id), "md"), end="")
    return 0


def cmd_profiles(_args: argparse.Namespace) -> int:
    for path, prof in list_profiles():
        if isinstance(prof, ProfileError):
            state = "(hidden)" if isinstance(prof, ProfileShadowed) else "(broken)"
            print(f"{path.stem:<20} {state} {prof}")
        else:
            print(f"{path.stem:<20} {prof.title}  [{len(prof.variants)} variants × {prof.repeats}]")
    return 0


def cmd_new(args: argparse.Namespace) -> int:
    """`pgwx new NAME`: a commented starting profile."""
    from explorer.lab.userprofile import write_new_profile

    path = write_new_profile(args.name)
    print(f"wrote {path}; edit it, then `pgwx check {path.name}` and `pgwx run {path.name}`")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    """`pgwx check FILE`: every problem as one sentence, or what each variant will do."""
    from explorer.lab.check import check_file, check_on_server
    from explorer.lab.profiles import find_profile

    path = find_profile(args.profile)
    report = check_file(path)
    if report.ok:
        target = make_target(args, lambda m: print(m, file=sys.stderr))
        try:
            asyncio.run(check_on_server(target, path, report))
        finally:
            stop_if_ours(target, args.keep_server, lambda m: print(m, file=sys.stderr))
    for line in report.skipped:
        print(line)
    for line in report.problems:
        print(line)
    if report.ok:
        for variant, steps in report.plan.items():
            print(f"{variant}:")
            print("\n".join(f"  {step}" for step in steps))
        print(f"{path}: ok")
    return 0 if report.ok else 1


def cmd_server(args: argparse.Namespace) -> int:
    server = LocalServer(args.data_dir)
    if args.action == "start":
        server.start()
        print(f"{server.label()} running in {server.data_dir}")
    elif args.action == "stop":
        server.stop()
        print(f"stopped {server.data_dir}")
    else:
        print(
            f"{server.label()}: {'running' if server.is_running() else 'stopped'} "
            f"({server.data_dir})"
        )
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `pgwx` command."""
    args = build_parser().parse_args(argv)
    commands = {
        "run": cmd_run,
        "runs": cmd_runs,
        "report": cmd_report,
        "replay": cmd_replay,
        "profiles": cmd_profiles,
        "server": cmd_server,
        "new": cmd_new,
        "check": cmd_check,
    }
    try:
        if args.command is None:
            from explorer.tui.app import run_app

            return run_app(
                dsn=args.dsn,
                data_dir=args.data_dir,
                keep_server=args.keep_server,
                allow_risky=args.allow_risky,
            )
        return commands[args.command](args)
    except USER_ERRORS as exc:
        print(f"pgwx: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
