"""Command line: `pgwx` opens the app; `pgwx run`, `runs`, `report`, `compare`, `replay`,
`profiles`, `server`.

Every error a user can cause ends here as one sentence on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import os
import platform
import signal
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from explorer import paths
from explorer.analysis import servers
from explorer.analysis.judge import judge
from explorer.analysis.report import EXIT_CODES, FORMATS, outcome, render
from explorer.analysis.selftest import self_test, self_test_profile
from explorer.analysis.selftest import to_text as selftest_text
from explorer.analysis.units import human_bytes
from explorer.errors import PgwxError, UsageError
from explorer.lab.profiles.catalog import ProfileError, ProfileShadowed, list_profiles, load_profile
from explorer.lab.run.axis import resolve_servers, run_on_servers
from explorer.lab.run.limits import MAX_BYTES, MAX_ROWS
from explorer.lab.run.owner import ServerBusy
from explorer.lab.run.request import RunRequest, swept, threshold_option
from explorer.lab.run.session import Session, restore_pending, start_repairing
from explorer.lab.run.signals import TerminatingSignals
from explorer.lab.run.undo import Undo, restore_command
from explorer.lab.store.results import ResultStore
from explorer.lab.view.stream import LEVEL_MARK, narrate, paced
from explorer.models import (
    Capabilities,
    Event,
    Notice,
    PhaseEnded,
    PhaseStarted,
    RunRecord,
    SampleTaken,
    TrialEnded,
)
from explorer.server import installs
from explorer.server.capabilities import probe
from explorer.server.connect import LIBPQ_ENV, Target
from explorer.server.embedded import LocalServer
from explorer.server.failures import log_traceback
from explorer.text import TextOnly, printable

__all__ = ["LIBPQ_ENV", "build_parser", "main"]

SELFTEST_REPEATS = 10
"""Measured rounds of `pgwx selftest` unless --repeats says otherwise."""


def _server_args(p: argparse.ArgumentParser, *, sub: bool = False) -> None:
    """--dsn, --data-dir, --pg, --pg-bin, --keep-server: before the command and after it.

    In a subcommand they default to SUPPRESS, so one given before the command (`pgwx --dsn
    URL run …`) is not overwritten by the subcommand's empty default.
    """
    given: dict[str, Any] = {"default": argparse.SUPPRESS} if sub else {}
    p.add_argument(
        "--dsn",
        action="append",
        help="connection string of your server (password is never shown); "
        "without it and without PGHOST/PGSERVICE…, pgwx starts its bundled PG 18; "
        "`pgwx run` and the app take several, to compare the servers",
        **given,
    )
    p.add_argument(
        "--data-dir", type=Path, help="cluster directory of the server pgwx owns", **given
    )
    _pg_args(p, given)
    p.add_argument(
        "--keep-server",
        action="store_true",
        help="leave the bundled server running when pgwx exits",
        **given,
    )


def _pg_args(p: argparse.ArgumentParser, given: dict[str, Any]) -> None:
    """--pg N and --pg-bin DIR: which installed PostgreSQL pgwx owns a cluster of."""
    p.add_argument(
        "--pg",
        type=int,
        action="append",
        metavar="N",
        help="own a cluster of the installed PostgreSQL N (`pgwx server list`); default: "
        "the bundled 18; `pgwx run --pg 15 --pg 18` runs on both, taking turns",
        **given,
    )
    p.add_argument(
        "--pg-bin",
        type=Path,
        metavar="DIR",
        help="own a cluster made with the PostgreSQL programs in DIR (`pg_config --bindir`)",
        **given,
    )


SEVERAL_SERVERS = (
    "Several servers (--pg or --dsn given more than once) are for `pgwx run` and the app; "
    "give one here."
)


@contextlib.contextmanager
def put_back_first(noted: Callable[[], None]) -> Iterator[None]:
    """Ctrl-C during the `with` calls `noted` instead of raising KeyboardInterrupt; Python's
    handler is back after it (from the main thread only; elsewhere nothing changes)."""
    try:
        previous = signal.signal(signal.SIGINT, lambda _signo, _frame: noted())
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def several_servers(args: argparse.Namespace) -> list[tuple[str | None, int | None]]:
    """The servers --dsn/--pg name, as (dsn, pg) pairs in the order given; `args.dsn` and
    `args.pg` become the single value every other command reads (or one sentence why not)."""
    dsns: list[str] = getattr(args, "dsn", None) or []
    pgs: list[int] = getattr(args, "pg", None) or []
    if "dsn" in args:
        args.dsn = dsns[-1] if dsns else None
    if "pg" in args:
        args.pg = pgs[-1] if pgs else None
    if len(dsns) <= 1 and len(pgs) <= 1:
        return [(args.dsn if "dsn" in args else None, args.pg if "pg" in args else None)]
    if getattr(args, "command", None) not in ("run", None):
        raise UsageError(SEVERAL_SERVERS)
    if dsns and (pgs or getattr(args, "pg_bin", None)):
        raise UsageError(
            "Several servers are either yours (--dsn, --dsn …) or ones pgwx owns (--pg 15 "
            "--pg 18), not both in one run."
        )
    if getattr(args, "pg_bin", None) is not None:
        raise UsageError("--pg-bin names one installation; with several --pg give only --pg N.")
    if getattr(args, "data_dir", None) is not None:
        raise UsageError(
            "--data-dir names one cluster; with several --pg each version uses its own "
            "directory under pgwx's data directory (PGWX_CLUSTER_HOME moves them all)."
        )
    named = dsns or pgs
    repeated = next((x for i, x in enumerate(named) if x in named[:i]), None)
    if repeated is not None:
        option = "--dsn" if dsns else f"--pg {repeated}"
        raise UsageError(f"{option} is given twice; name each server once.")
    return [(d, None) for d in dsns] if dsns else [(None, n) for n in pgs]


def owned_bindir(args: argparse.Namespace) -> Path | None:
    """The programs --pg/--pg-bin pick (None: the bundled 18), or one sentence why not."""
    pg, pg_bin = getattr(args, "pg", None), getattr(args, "pg_bin", None)
    if (pg is not None or pg_bin is not None) and getattr(args, "dsn", None):
        raise UsageError(
            "--dsn names your server and --pg/--pg-bin start one pgwx owns; give one of them."
        )
    install = installs.choose(pg, pg_bin)
    return None if install is None else install.bindir


def resolve_session(
    args: argparse.Namespace, store: ResultStore, say: Callable[[str], None]
) -> Session:
    """The session the server options name (--dsn, --pg, --pg-bin, --data-dir, --keep-server)."""
    return Session.resolve(
        store,
        dsn=args.dsn,
        data_dir=args.data_dir,
        keep_server=args.keep_server,
        say=say,
        bindir=owned_bindir(args),
    )


class _VersionAction(argparse.Action):
    """`pgwx --version`: pgwx, Python and the bundled PostgreSQL (found only when asked)."""

    def __call__(self, parser: argparse.ArgumentParser, *_args: Any, **_kw: Any) -> None:
        from explorer.lab.measure.environment import pgwx_version

        try:
            bundled = f"bundled PostgreSQL {installs.bundled().version}"
        except PgwxError:
            bundled = "bundled PostgreSQL unavailable"
        print(f"pgwx {pgwx_version()} (Python {platform.python_version()}, {bundled})")
        parser.exit()


def _run_args(p: argparse.ArgumentParser) -> None:
    """The options `pgwx run` and `pgwx selftest` share: server, size, repeats, threshold."""
    _server_args(p, sub=True)
    p.add_argument("--scale", type=float, default=1.0, help="multiply the profile's sizes")
    p.add_argument(
        "--repeats",
        type=int,
        help="a fixed number of measured trials per variant (default: the profile's, "
        "usually auto: until every verdict is decided)",
    )
    p.add_argument(
        "--warmup", type=int, help="warm-up rounds, run first and left out of the statistics"
    )
    p.add_argument(
        "--budget",
        help="with auto repeats: no new round after this much time (600, 90s, 10m, 1h)",
    )
    p.add_argument(
        "--threshold",
        help="noise threshold for faster/slower (5%% or 0.05; default the profile's, 3%%)",
    )
    p.add_argument(
        "--allow-risky",
        action="store_true",
        default=argparse.SUPPRESS,
        help="allow fsync/full_page_writes off on a server pgwx does not own",
    )
    p.add_argument(
        "--allow-large",
        action="store_true",
        help=f"run even when one trial is estimated over {MAX_ROWS:,} rows or "
        f"{human_bytes(MAX_BYTES)}",
    )
    p.add_argument(
        "--trust-sql",
        action="store_true",
        help="where pgwx cannot create the role that fences a profile's own SQL (no "
        "CREATEROLE), run that SQL unfenced as your own user",
    )
    p.add_argument("--no-sample", action="store_true", help="do not run the stats sampler")
    p.add_argument("--settle", type=float, help="seconds to pause after each CHECKPOINT")


def build_parser() -> argparse.ArgumentParser:
    """The whole command line, with help for every option."""
    parser = argparse.ArgumentParser(
        prog="pgwx",
        description="A terminal lab for the PostgreSQL write path. "
        "With no command, opens the interactive app.",
    )
    _server_args(parser)
    parser.add_argument(
        "--version",
        action=_VersionAction,
        nargs=0,
        help="print pgwx's, Python's and the bundled PostgreSQL's versions",
    )
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
    _present_arg(parser)
    parser.add_argument(
        "--results",
        metavar="STORE",
        help="where runs are kept: a SQLite file, or postgresql://… for a team's store "
        "(default $PGWX_RESULTS, else ~/.local/share/pgwx/results.sqlite)",
    )
    parser.add_argument(
        "--debug",
        action="store_true",
        help="on a programming error, print the traceback too (it is always logged)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    run = sub.add_parser("run", help="run a profile's matrix headless and print the table")
    run.add_argument("profile", help="a profile name (see `pgwx profiles`) or a .toml path")
    _run_args(run)
    run.add_argument(
        "--variant",
        action="append",
        dest="variants",
        metavar="NAME",
        help="run only this variant (repeatable)",
    )
    run.add_argument(
        "--sweep",
        metavar="NAME=V1,V2,…",
        help="one variant per value of one setting, the first the baseline (e.g. "
        "max_wal_size=256MB,1GB,4GB,16GB); the report draws them as a curve",
    )
    run.add_argument("--format", choices=sorted(FORMATS), default="md")
    selftest = sub.add_parser(
        "selftest",
        help="run a profile's baseline against itself: this machine's noise, false-finding "
        "rate and a threshold to use (run it once on a new machine)",
    )
    selftest.add_argument(
        "profile", nargs="?", default="quick-demo", help="the profile to test (quick-demo)"
    )
    _run_args(selftest)
    selftest.set_defaults(variants=None, format="md", selftest=True)

    sub.add_parser("runs", help="list stored runs")
    rep = sub.add_parser("report", help="print a stored run's table again")
    rep.add_argument("run", nargs="?", default="latest", help="run id, prefix, or 'latest'")
    rep.add_argument("--format", choices=sorted(FORMATS), default="md")
    rep.add_argument("--threshold", help="noise threshold (5%% or 0.05; default the run's)")
    cmp = sub.add_parser(
        "compare", help="verdicts of one stored run against another, by variant and phase"
    )
    cmp.add_argument("run_a", metavar="RUN_A", help="the reference run (id, prefix or 'latest')")
    cmp.add_argument("run_b", metavar="RUN_B", help="the run judged against it")
    cmp.add_argument("--format", choices=["md", "json"], default="md")
    cmp.add_argument("--threshold", help="noise threshold (5%% or 0.05; default RUN_A's)")
    rpl = sub.add_parser(
        "replay", help="play a run back without a server: a stored run, a .pgwx file, or a demo"
    )
    rpl.add_argument(
        "run",
        nargs="?",
        default="latest",
        help="run id or prefix, 'latest', a .pgwx file, or a shipped recording "
        "(quick-demo, fk-timing-restore)",
    )
    rpl.add_argument(
        "--speed",
        type=float,
        help="1 = recorded pace, 4 = four times faster (app default 1; headless default 0 = "
        "as fast as possible)",
    )
    rpl.add_argument("--headless", action="store_true", help="print instead of opening the app")
    _present_arg(rpl, sub=True)
    exp = sub.add_parser("export", help="write a stored run to one shareable .pgwx file")
    exp.add_argument("run", nargs="?", default="latest", help="run id, prefix, or 'latest'")
    exp.add_argument("--out", type=Path, required=True, help="the file to write (FILE.pgwx)")
    exp.add_argument(
        "--force", action="store_true", help="replace FILE if it exists (never through a link)"
    )
    exp.add_argument(
        "--redact-host",
        action="store_true",
        help="also mask host names and socket paths (passwords are never stored)",
    )
    imp = sub.add_parser("import", help="add a .pgwx recording to the local results store")
    imp.add_argument("file", type=Path)
    sub.add_parser("profiles", help="list the profiles: yours, then the shipped ones")
    # Your own load (issue 10): write a starting profile, check one against a server.
    new = sub.add_parser("new", help="write a commented starting profile for your own load")
    new.add_argument("name", help="profile name; writes NAME.toml in the current directory")
    new.add_argument(
        "--force", action="store_true", help="replace NAME.toml if it exists (never a link)"
    )
    chk = sub.add_parser("check", help="validate a profile against a server without running it")
    chk.add_argument("profile", help="a .toml path or a profile name")
    _server_args(chk, sub=True)
    rst = sub.add_parser(
        "restore",
        help="put back server settings an interrupted pgwx left changed (runs nothing else)",
    )
    _server_args(rst, sub=True)
    psh = sub.add_parser("push", help="copy stored runs into another store (the team's)")
    psh.add_argument("runs", nargs="+", metavar="RUN", help="run ids or prefixes, 'latest', 'all'")
    psh.add_argument(
        "--to", metavar="STORE", help="the store to copy into (default --results / PGWX_RESULTS)"
    )
    psh.add_argument(
        "--from",
        dest="source",
        metavar="STORE",
        help="the store to copy from (default the local file, ~/.local/share/pgwx/results.sqlite)",
    )
    hst = sub.add_parser("history", help="one profile's verdicts across stored runs")
    hst.add_argument("profile", help="the profile's name, as `pgwx runs` shows it")
    hst.add_argument("--variant", help="only this variant (default every one but the baseline)")
    hst.add_argument("--phase", help="only this phase (default the total)")
    hst.add_argument("--format", choices=["md", "json"], default="md")
    srv = sub.add_parser(
        "server",
        help="start, stop or show the server pgwx owns (--pg N for another installed "
        "PostgreSQL); `list` shows the installed ones",
    )
    srv.add_argument("action", choices=["start", "stop", "status", "list"])
    srv.add_argument("--data-dir", type=Path, default=argparse.SUPPRESS)
    _pg_args(srv, {"default": argparse.SUPPRESS})
    return parser


class Progress:
    """Prints the event stream to stderr as a person would want to read it."""

    def __init__(self, stream: Any = None) -> None:
        self.out = stream or sys.stderr
        self.live = self.out.isatty()
        self.phase = ""
        self._line = False
        self._tag = ""

    def tagged(self, tag: str) -> Callable[[Event], None]:
        """`self`, for the events of one server of several: its lines start with [tag]."""

        def emit(event: Event) -> None:
            self._tag = f"[{tag}] "
            try:
                self(event)
            finally:
                self._tag = ""

        return emit

    def _control(self, sequence: str) -> None:
        """Write pgwx's own terminal control (clear the live line): past the text filter."""
        getattr(self.out, "unfiltered", self.out).write(sequence)

    def _print(self, text: str) -> None:
        if self._line:
            self._control("\r\033[K")
            self._line = False
        print(printable(text), file=self.out, flush=True)

    def __call__(self, event: Event) -> None:
        if isinstance(event, PhaseStarted):
            self.phase = event.phase
        elif isinstance(event, SampleTaken):
            rate = event.sample.get("wal_bytes_per_s")
            if self.live and rate is not None:
                self._control("\r\033[K")
                self.out.write(printable(f"    {self.phase} … WAL {human_bytes(rate)}/s"))
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
            self._print(self._tag + line if self._tag else line)


def threshold_arg(value: str | None) -> float | None:
    """--threshold as a fraction (of `report` and `compare`; `run` checks it in its request)."""
    return threshold_option(value)


def _present_arg(p: argparse.ArgumentParser, *, sub: bool = False) -> None:
    """--present, before the command or after `replay` (where it defaults to SUPPRESS, so
    one given before `replay` is not overwritten)."""
    given: dict[str, Any] = {"default": argparse.SUPPRESS} if sub else {}
    p.add_argument(
        "--present",
        action="store_true",
        help="in the app: the presenter layout (duration bars and one chart side by side, "
        "the verdict in large type); automatic from 100 columns at 30 rows or fewer",
        **given,
    )


def present_arg(args: argparse.Namespace) -> bool | None:
    """--present for the app: True when given, None to let the terminal's size decide."""
    return True if getattr(args, "present", False) else None


def ascii_arg(args: argparse.Namespace) -> bool | None:
    """--ascii for the app: True when given, None to let the locale decide."""
    return True if args.ascii else None


def cmd_run(args: argparse.Namespace) -> int:
    """`pgwx run PROFILE`: the matrix, progress on stderr, the table on stdout."""
    from explorer.lab.run.runner import Runner

    profile = load_profile(args.profile, lambda m: print(f"pgwx: {m}", file=sys.stderr))
    if getattr(args, "sweep", None):
        profile = swept(profile, args.sweep)
    original = profile
    testing = getattr(args, "selftest", False)
    if testing:
        profile = self_test_profile(profile)
        if args.repeats is None:
            args.repeats = SELFTEST_REPEATS
    request = RunRequest.build(
        profile,
        scale=args.scale,
        repeats=args.repeats,
        warmup=args.warmup,
        threshold=args.threshold,
        budget=args.budget,
        variants=args.variants,
        settle=args.settle,
        allow_large=args.allow_large,
        allow_risky=args.allow_risky,
        sample=not args.no_sample,
        trust_sql=args.trust_sql,
    )
    servers_named = getattr(args, "servers", None) or [(args.dsn, args.pg)]
    several = len(servers_named) > 1
    if several and testing:
        raise UsageError("pgwx selftest measures one server; give one --pg or --dsn.")
    say = Progress()
    if request.estimate.large:
        say._print(f"{profile.name} at --scale {args.scale:g}: {request.estimate.describe()}")
    store = ResultStore()
    runners: list[Runner] = []
    sessions: list[Session] = []
    interrupts: list[int] = []
    cancelled = False
    records: list[RunRecord] = []
    # SIGHUP and SIGTERM do what Ctrl-C does (cancel, undo, stop the server pgwx started),
    # then exit 128 + the signal; while the server starts or stops they are only counted.
    signals = TerminatingSignals()
    signals.install()
    try:
        sessions = resolve_sessions(args, servers_named, store, say._print)

        async def open_and_run() -> list[RunRecord]:
            main = asyncio.current_task()
            assert main is not None
            with signals.listening(lambda _signo: main.cancel()):

                def on_interrupt() -> None:
                    # Ctrl-C cancels the run once; again, it only says the undo is under way
                    # (asyncio's own second-Ctrl-C KeyboardInterrupt cut the undo short).
                    interrupts.append(signal.SIGINT)
                    if len(interrupts) == 1:
                        main.cancel()
                    else:
                        say._print("  ! still putting the server back; one moment")

                asyncio.get_running_loop().add_signal_handler(signal.SIGINT, on_interrupt)
                if signals.received:
                    raise asyncio.CancelledError  # it came while the server was starting
                if not several:
                    caps: Capabilities = await sessions[0].open(lambda m: say._print(f"  ! {m}"))
                    runner = Runner(sessions[0].target, profile, store, request.options, caps=caps)
                    runners.append(runner)
                    return [await runner.run(say)]
                return await run_on_servers(
                    sessions,
                    servers_named,
                    profile,
                    store,
                    request.options,
                    say._print,
                    say.tagged,
                    runners,
                )

        records = asyncio.run(open_and_run())
    except (KeyboardInterrupt, asyncio.CancelledError):
        cancelled = True  # said last, once the server is released
    finally:
        # Once asyncio.run has ended, Ctrl-C is Python's own again and would raise in the
        # middle of putting back and releasing the servers (a second Ctrl-C 50 ms after the
        # first did, when the undo was quick): until they are released it is only counted.
        with put_back_first(lambda: say._print("  ! still putting the server back; one moment")):
            for session in sessions:
                session.release(say._print)
            store.close()
            signals.uninstall()
    settings = _settings_clause(runners, sessions)
    ids = ", ".join(r.run_id for r in runners)
    first = runners[0].run_id if runners else ""
    if cancelled:
        if signals.received:
            done = f"run {ids} cancelled" if runners else "nothing ran"
            say._print(f"{signals.name}: {done}; {settings}")
            return signals.exit_status
        if not runners:
            say._print(f"cancelled before the run started; {settings}")
        else:
            say._print(
                f"cancelled: finished trials kept in run {ids} (`pgwx report {first}`); {settings}"
            )
        return 130
    if signals.received:  # it came while the server was being stopped: the run itself is stored
        say._print(f"{signals.name}: run {ids} is stored; {settings}")
        return signals.exit_status
    record = records[0]
    if testing:
        say._print("simulating this profile's verdicts at the noise just measured")
        print(selftest_text(self_test(record, original), original), end="")
    elif several:
        print(servers.render(records, args.format), end="")
    else:
        print(render(record, args.format), end="")
    how = f"`pgwx report {record.id} --format csv|json`"
    say._print(f"saved as run {ids}; {how}; {settings}")
    if any(not r.undo.complete for r in runners):
        return EXIT_CODES["failed"]  # something pgwx set is still set: said on the last line
    if several:
        ended = servers.outcome(servers.judge_servers(records))
        return EXIT_CODES.get(ended, EXIT_CODES["failed"])
    return run_exit_status(record, testing)


def resolve_sessions(
    args: argparse.Namespace,
    named: list[tuple[str | None, int | None]],
    store: ResultStore,
    say: Callable[[str], None],
) -> list[Session]:
    """A session per server named (see `explorer.lab.run.axis.resolve_servers`)."""
    if len(named) == 1:
        return [resolve_session(args, store, say)]
    return resolve_servers(named, store, args.keep_server, say)


def _settings_clause(runners: list[Any], sessions: list[Session]) -> str:
    """What each server's settings are now, from what its undo (or recovery) did."""
    several = len(sessions) > 1
    parts = []
    for i, session in enumerate(sessions):
        runner = runners[i] if i < len(runners) else None
        clause = _one_settings_clause(runner, session)
        tag = runner.axis.label if runner is not None and runner.axis is not None else None
        parts.append(f"on {tag or session.target.label()}: {clause}" if several else clause)
    return "; ".join(parts) or "no server settings were changed"


def _one_settings_clause(runner: Any, session: Session | None) -> str:
    """What the server's settings are now, from what the undo (or the recovery) did."""
    if runner is not None:
        return runner.undo_outcome().sentence(restore_command(runner.target))
    if session is not None and session.recovered is not None:
        return session.recovered.sentence(restore_command(session.target))
    return "no server settings were changed"


def run_exit_status(record: RunRecord, selftest: bool = False) -> int:
    """0 decided, 4 finished with comparisons undecided, 1 failed (README "For a team")."""
    if record.status != "finished":
        return EXIT_CODES["failed"]
    if selftest:  # a baseline against itself is meant to stay undecided
        return EXIT_CODES["decided"]
    return EXIT_CODES[outcome(record, judge(record))]


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
            + (f" · {r.axis.label} of {', '.join(r.axis.labels)}" if r.axis else "")
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
    store = ResultStore()
    run_id = chosen_run(store, args.run)
    record = store.load(run_id)
    group = store.group(record)
    if len(group) > 1:  # one server's share of a run on several: show them all
        print(servers.render(group, args.format, threshold), end="")
    else:
        print(render(record, args.format, threshold), end="")
    return 0


@quiet_on_broken_pipe
def cmd_compare(args: argparse.Namespace) -> int:
    from explorer.analysis import crossrun

    threshold = threshold_arg(args.threshold)
    store = ResultStore()
    a = store.load(chosen_run(store, args.run_a))
    b = store.load(chosen_run(store, args.run_b))
    cross = crossrun.compare_runs(a, b, threshold)
    render_cross = crossrun.to_json if args.format == "json" else crossrun.to_markdown
    print(render_cross(cross), end="")
    return 0


@quiet_on_broken_pipe
def cmd_replay(args: argparse.Namespace) -> int:
    from explorer.lab.store.replay import ReplaySource

    if args.speed is not None and not 0 <= args.speed < math.inf:
        raise UsageError("--speed must be a finite number, 0 (as fast as possible) or more.")
    store = ResultStore()
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

    store = ResultStore()
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

    store = ResultStore()
    try:
        record = import_recording(store, args.file)
    finally:
        store.close()
    print(f"run {record.id} ({record.profile.name}) imported; `pgwx report {record.id}` shows it")
    return 0


@quiet_on_broken_pipe
def cmd_profiles(_args: argparse.Namespace) -> int:
    """Every profile under a heading that says whose it is and where it lives."""
    from explorer.lab.profiles.catalog import profile_origin

    heading = None
    for path, prof in list_profiles():
        origin = profile_origin(path)
        if origin != heading:
            print(("\n" if heading else "") + origin)
            heading = origin
        if isinstance(prof, ProfileError):
            state = "(hidden)" if isinstance(prof, ProfileShadowed) else "(broken)"
            print(f"  {path.stem:<20} {state} {prof}")
        else:
            reps = (
                f"auto {prof.min_repeats}–{prof.max_repeats}"
                if prof.repeats == "auto"
                else prof.repeats
            )
            print(f"  {path.stem:<20} {prof.title}  [{len(prof.variants)} variants × {reps}]")
    return 0


def cmd_new(args: argparse.Namespace) -> int:
    """`pgwx new NAME`: a commented starting profile."""
    from explorer.lab.profiles.userprofile import write_new_profile

    path = write_new_profile(args.name, force=args.force)
    print(f"wrote {path}; edit it, then `pgwx check {path.name}` and `pgwx run {path.name}`")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    """`pgwx check FILE`: every problem as one sentence, or what each variant will do."""
    from explorer.lab.profiles.catalog import find_profile
    from explorer.lab.profiles.check import check_file, check_on_server

    path = find_profile(args.profile, lambda m: print(f"pgwx: {m}", file=sys.stderr))
    report = check_file(path)
    if report.ok:
        say = lambda m: print(m, file=sys.stderr)  # noqa: E731
        store = ResultStore()
        session = resolve_session(args, store, say)
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


async def _restore(target: Target, say: Callable[[str], None]) -> Undo:
    """Probe the server and put back what its journal holds (see `restore_pending`)."""
    conn = await target.connect("admin")
    try:
        caps = await probe(conn, owned=target.owned)
    finally:
        await conn.close()
    return await restore_pending(target, caps, say)


def _put_back(target: Target) -> bool:
    """Before `pgwx server start|stop` hands the server over: undo an interrupted run.

    Returns:
        Whether nothing pgwx set is left (False: what is left has been said).
    """
    try:
        undo = asyncio.run(_restore(target, lambda m: print(f"pgwx: {m}", file=sys.stderr)))
    except ServerBusy as exc:
        print(f"pgwx: {exc}", file=sys.stderr)
        return True
    if undo.put_back or not undo.complete:
        print(f"left by an interrupted run: {undo.sentence(restore_command(target))}")
    return undo.complete


def cmd_restore(args: argparse.Namespace) -> int:
    """`pgwx restore`: put back what an interrupted run left changed, and nothing else.

    Exit status: 0 when nothing pgwx set is left (entries set aside are named), 1 when
    something is still set (named, with where), 2 when it could not look (one sentence).
    """
    say = lambda m: print(m, file=sys.stderr)  # noqa: E731
    store = ResultStore()
    session = resolve_session(args, store, say)
    target = session.target
    try:
        undo = asyncio.run(_restore(target, lambda m: print(f"pgwx: {m}", file=sys.stderr)))
    finally:
        session.release(say)
        store.close()
    if undo.put_back or not undo.complete or undo.set_aside:
        print(f"{target.label()}: {undo.sentence(restore_command(target))}")
    else:
        print(f"nothing to put back on {target.label()}")
    return 0 if undo.complete else 1


def cmd_push(args: argparse.Namespace) -> int:
    """`pgwx push RUN…`: copy runs from the local store into the team's."""
    from explorer.lab.store.push import push

    source = ResultStore(args.source or paths.local_results_path())
    target = ResultStore(args.to) if args.to else ResultStore()
    try:
        done = push(source, target, args.runs)
    finally:
        source.close()
        target.close()
    for run_id in done.copied:
        print(f"copied {run_id} to {target.path}")
    for run_id in done.already:
        print(f"{run_id} is already in {target.path}; left as it is")
    for run_id in done.still_running:
        print(f"pgwx: {run_id} is still running; push it when it has ended", file=sys.stderr)
    return 1 if done.still_running else 0


@quiet_on_broken_pipe
def cmd_history(args: argparse.Namespace) -> int:
    """`pgwx history PROFILE`: the profile's verdicts run by run, change points flagged."""
    from explorer.analysis import history

    store = ResultStore()
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


def cmd_server(args: argparse.Namespace) -> int:
    """`pgwx server start|stop|status|list`: the server pgwx owns, or what is installed."""
    if args.action == "list":
        return _list_installs()
    server = LocalServer(args.data_dir, owned_bindir(args))
    if args.action == "start":
        start_repairing(server, lambda m: print(f"pgwx: {m}", file=sys.stderr))
        undone = _put_back(Target(bundled=server))
        print(f"{server.label()} running in {server.data_dir}")
        return 0 if undone else 1
    elif args.action == "stop":
        undone = True
        if server.is_running():
            undone = _put_back(Target(bundled=server))
        server.stop()
        print(f"stopped {server.data_dir}")
        return 0 if undone else 1
    else:
        print(
            f"{server.label()}: {'running' if server.is_running() else 'stopped'} "
            f"({server.data_dir})"
        )
    return 0


def _list_installs() -> int:
    """`pgwx server list`: each installed PostgreSQL, what it supports, its data directory."""
    found = installs.discover()
    print("PostgreSQL installed on this machine (pgwx owns a cluster of any of them):")
    for install in found:
        print()
        print("\n".join(install.describe()))
        data_dir = paths.cluster_data_dir(install.major)  # only looked at: no LocalServer
        made = "made" if (data_dir / "PG_VERSION").exists() else "made on first use"
        print(f"  data dir    {data_dir} ({made})")
    lz4 = installs.lz4_elsewhere()
    if lz4 is None:
        print(
            "\nNone of them is built with lz4; "
            f"`{installs.LZ4_EXTRA}` brings PostgreSQL 17 with lz4 and zstd (or Debian's "
            "postgresql-15)."
        )
    return 0


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line, with `servers` (see `several_servers`) and one --dsn/--pg value."""
    args = build_parser().parse_args(argv)
    args.servers = several_servers(args)
    return args


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `pgwx` command.

    Whatever a command prints goes through `printable`: names, notes and messages come from
    profiles, recordings, the store and servers, and none may drive the terminal.
    """
    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = TextOnly(sys.stdout), TextOnly(sys.stderr)
    try:
        return _main(argv)
    finally:
        sys.stdout, sys.stderr = streams


def _main(argv: list[str] | None) -> int:
    try:
        args = parse_args(argv)
    except PgwxError as exc:
        print(f"pgwx: {exc}", file=sys.stderr)
        return 2
    if args.results:
        # every store this process opens (run, runs, report, the app …) is this one
        os.environ["PGWX_RESULTS"] = args.results
    commands: dict[str, Callable[[argparse.Namespace], int]] = {
        "run": cmd_run,
        "selftest": cmd_run,
        "runs": cmd_runs,
        "report": cmd_report,
        "compare": cmd_compare,
        "replay": cmd_replay,
        "export": cmd_export,
        "import": cmd_import,
        "profiles": cmd_profiles,
        "server": cmd_server,
        "new": cmd_new,
        "check": cmd_check,
        "restore": cmd_restore,
        "push": cmd_push,
        "history": cmd_history,
    }
    try:
        if args.command is None:
            from explorer.tui.app import run_app

            several = len(args.servers) > 1
            return run_app(
                dsn=args.dsn,
                data_dir=args.data_dir,
                bindir=None if several else owned_bindir(args),
                servers=args.servers if several else None,
                keep_server=args.keep_server,
                allow_risky=args.allow_risky,
                ascii=ascii_arg(args),
                present=present_arg(args),
            )
        return commands[args.command](args)
    except PgwxError as exc:
        print(f"pgwx: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        # Ctrl-C before a command could take it over (say, while pgwx was starting up).
        print("pgwx: cancelled", file=sys.stderr)
        return 130
    except Exception as exc:
        # Not the user's doing: say so in one sentence, keep the traceback for the report.
        path = log_traceback(exc)
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
