"""Command line: `pgwx` opens the app; `pgwx run`, `runs`, `report`, `replay`, `profiles`, `server`.

Every error a user can cause ends here as one sentence on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from explorer import paths
from explorer.errors import PgwxError, UsageError
from explorer.lab.profiles import ProfileError, ProfileShadowed, list_profiles, load_profile
from explorer.lab.report import FORMATS, render
from explorer.lab.results import ResultStore
from explorer.lab.session import Session
from explorer.lab.stream import LEVEL_MARK, narrate, paced
from explorer.lab.units import human_bytes
from explorer.models import (
    Capabilities,
    Event,
    Notice,
    PhaseEnded,
    PhaseStarted,
    SampleTaken,
    TrialEnded,
)
from explorer.server.connect import LIBPQ_ENV
from explorer.server.embedded import LocalServer

__all__ = ["LIBPQ_ENV", "build_parser", "main"]

LOG_NAME = "pgwx.log"
"""File under the state directory where a programming error's traceback is written."""

log = logging.getLogger("explorer")


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
    parser.add_argument(
        "--ascii",
        action="store_true",
        help="in the app: draw ASCII only (automatic when the locale is not UTF-8)",
    )
    parser.add_argument(
        "--debug",
        action="store_true",
        help="on a programming error, print the traceback too (it is always logged)",
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
        if isinstance(event, PhaseStarted):
            self.phase = event.phase
        elif isinstance(event, SampleTaken):
            rate = event.sample.get("wal_bytes_per_s")
            if self.live and rate is not None:
                self.out.write(f"\r\033[K    {self.phase} … WAL {human_bytes(rate)}/s")
                self.out.flush()
                self._line = True
        else:
            line = narrate(event)
            if line is None:
                return
            if isinstance(event, Notice):
                line = f"  {LEVEL_MARK[event.level]} {line}"
            elif isinstance(event, PhaseEnded | TrialEnded):
                line = f"    {line}"
            self._print(line)


def cmd_run(args: argparse.Namespace) -> int:
    """`pgwx run PROFILE`: the matrix, progress on stderr, the table on stdout."""
    from explorer.lab.runner import Runner, RunOptions, select_variants

    profile = load_profile(args.profile)
    select_variants(profile, args.variants)  # a bad --variant fails before any server work
    if args.scale <= 0:
        raise UsageError("--scale must be greater than 0.")
    if args.repeats is not None and args.repeats < 1:
        raise UsageError("--repeats must be 1 or more.")
    say = Progress()
    store = ResultStore()
    options = RunOptions(
        scale=args.scale,
        repeats=args.repeats,
        variants=args.variants,
        allow_risky=args.allow_risky,
        sample=not args.no_sample,
        settle_seconds=args.settle,
    )
    runner: Runner | None = None
    session: Session | None = None
    try:
        session = Session.resolve(
            store,
            dsn=args.dsn,
            data_dir=args.data_dir,
            keep_server=args.keep_server,
            say=say._print,
        )

        async def open_and_run(session: Session) -> Any:
            nonlocal runner
            caps: Capabilities = await session.open(lambda m: say._print(f"  ! {m}"))
            runner = Runner(
                session.target,
                profile,
                store,
                options,
                caps=caps,
            )
            return await runner.run(say)

        record = asyncio.run(open_and_run(session))
    except KeyboardInterrupt:
        if runner is None:
            say._print("cancelled before the run started")
        else:
            say._print(
                f"cancelled: server settings restored, finished trials kept in run "
                f"{runner.run_id} (`pgwx report {runner.run_id}`)"
            )
        return 130
    finally:
        if session is not None:
            session.release(say._print)
        store.close()
    print(render(record, args.format), end="")
    say._print(f"saved as run {record.id}; `pgwx report {record.id} --format csv|json`")
    return 0 if record.status == "finished" else 1


def quiet_on_broken_pipe(command: Callable[[argparse.Namespace], int]) -> Callable[..., int]:
    """Let `pgwx runs | head` end quietly when the reader stops reading."""

    def wrapped(args: argparse.Namespace) -> int:
        try:
            status = command(args)
            sys.stdout.flush()  # a short listing is still in the buffer: fail here, not at exit
            return status
        except BrokenPipeError:
            # Python flushes stdout again at exit; point it at /dev/null so that is quiet too.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 0

    return wrapped


@quiet_on_broken_pipe
def cmd_runs(_args: argparse.Namespace) -> int:
    # Listing never writes: another pgwx may be in the middle of a run.
    store = ResultStore()
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


def chosen_run(store: ResultStore, ref: str) -> str:
    """The run `ref` names; when pgwx chose it (`latest`), say which on stderr."""
    run_id, chosen = store.choose(ref)
    if chosen:
        print(chosen, file=sys.stderr)
    return run_id


@quiet_on_broken_pipe
def cmd_report(args: argparse.Namespace) -> int:
    store = ResultStore()
    run_id = chosen_run(store, args.run)
    print(render(store.load(run_id), args.format), end="")
    return 0


@quiet_on_broken_pipe
def cmd_replay(args: argparse.Namespace) -> int:
    store = ResultStore()
    run_id = chosen_run(store, args.run)
    if not args.headless:
        from explorer.tui.app import run_app

        return run_app(replay=run_id)
    progress = Progress()
    for wait, event in paced(store.events(run_id), args.speed):
        if wait:
            time.sleep(wait)
        progress(event)
    print(render(store.load(run_id), "md"), end="")
    return 0


@quiet_on_broken_pipe
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
        say = lambda m: print(m, file=sys.stderr)  # noqa: E731
        store = ResultStore()
        session = Session.resolve(
            store, dsn=args.dsn, data_dir=args.data_dir, keep_server=args.keep_server, say=say
        )
        try:
            asyncio.run(check_on_server(session.target, path, report))
        finally:
            session.release(say)
            store.close()
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


def _log_programming_error(exc: BaseException) -> Path | None:
    """Write the traceback to the log under the state directory; its path, or None."""
    try:
        folder = paths.state_dir()
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / LOG_NAME
        handler = logging.FileHandler(path, encoding="utf-8")
    except OSError:
        return None
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    log.addHandler(handler)
    try:
        log.error("programming error: %s", exc, exc_info=exc)
    finally:
        log.removeHandler(handler)
        handler.close()
    return path


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `pgwx` command."""
    args = build_parser().parse_args(argv)
    if args.ascii:
        # Read by the app however it is opened (`pgwx --ascii`, `pgwx --ascii replay …`).
        os.environ["PGWX_ASCII"] = "1"
    commands: dict[str, Callable[[argparse.Namespace], int]] = {
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
    except PgwxError as exc:
        print(f"pgwx: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:
        # Not the user's doing: say so in one sentence, keep the traceback for the report.
        path = _log_programming_error(exc)
        where = f"the traceback is in {path}" if path else "the traceback could not be logged"
        print(
            f"pgwx: internal error ({type(exc).__name__}); {where} — please report it.",
            file=sys.stderr,
        )
        if args.debug:
            import traceback

            traceback.print_exception(exc, file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
