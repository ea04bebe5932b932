"""`pgwx run` and `pgwx selftest`: a profile's matrix on one server or several, headless.

The engine commands: this module loads the driver (asyncpg); the stored-results commands
(`explorer.cli.stored`) never import it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from collections.abc import Callable, Iterator
from typing import Any

from explorer.analysis import servers
from explorer.analysis.judge import judge
from explorer.analysis.report import EXIT_CODES, outcome, render
from explorer.analysis.selftest import self_test, self_test_profile
from explorer.analysis.selftest import to_text as selftest_text
from explorer.cli.choice import owned_bindir
from explorer.cli.entry import CANCELLED
from explorer.cli.progress import Progress
from explorer.errors import UsageError
from explorer.lab.profiles.catalog import load_profile
from explorer.lab.run.axis import resolve_servers, run_on_servers
from explorer.lab.run.request import RunRequest, swept
from explorer.lab.run.session import Session
from explorer.lab.run.signals import TerminatingSignals
from explorer.lab.safety.undo import restore_command
from explorer.lab.store.results import ResultStore
from explorer.models import Capabilities, RunRecord

SELFTEST_REPEATS = 10
"""Measured rounds of `pgwx selftest` unless --repeats says otherwise."""


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
        return CANCELLED
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
