"""`pgwx run` and `pgwx selftest`: a profile's matrix on one server or several, headless.

The engine commands: this module loads the driver (asyncpg); the stored-results commands
(`explorer.cli.stored`) never import it.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from collections.abc import Callable

from explorer.analysis import gate, servers
from explorer.analysis.formats import render, render_servers
from explorer.analysis.judge import Judgement, judge
from explorer.analysis.report import EXIT_CODES, outcome
from explorer.analysis.selftest import self_test, self_test_profile
from explorer.analysis.selftest import to_text as selftest_text
from explorer.cli.choice import owned_bindir, results_store
from explorer.cli.entry import CANCELLED
from explorer.cli.parser import gate_arg
from explorer.cli.progress import Progress
from explorer.errors import UsageError
from explorer.lab.profiles.catalog import load_profile
from explorer.lab.run.bench import Bench, ServerChoice, named_choices
from explorer.lab.run.request import RunOptions, RunRequest, run_plan, swept
from explorer.lab.run.session import Session
from explorer.lab.run.signals import TerminatingSignals
from explorer.lab.store.hints import hint
from explorer.lab.store.machine_noise import load_noise, save_noise
from explorer.lab.store.results import ResultStore
from explorer.models import Profile, RunRecord

SELFTEST_REPEATS = 10
"""Measured rounds of `pgwx selftest` unless --repeats says otherwise."""


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
        allow_undecidable=args.allow_undecidable,
        servers=len(getattr(args, "servers", None) or [None]),
        label=args.label,
        ref=args.ref,
    )
    watching = gate_arg(args)
    if watching is not None:
        gate.check_variants(watching, profile.baseline_name(), [v.name for v in request.variants])
    choices = server_choices(args)
    if len(choices) > 1 and testing:
        raise UsageError("pgwx selftest measures one server; give one --pg or --dsn.")
    say = Progress()
    if request.estimate.large:
        say._print(f"{profile.name} at --scale {args.scale:g}: {request.estimate.describe()}")
    store = results_store(args)
    bench = Bench(store, choices)
    # SIGHUP and SIGTERM do what Ctrl-C does (cancel, undo, stop the server pgwx started),
    # then exit 128 + the signal; while the server starts or stops they are only counted.
    signals = TerminatingSignals()
    # Said before the first trial, with this machine's noise if a self-test kept it.
    plan = run_plan(request, len(choices), load_noise(original.name))
    records = conduct(bench, signals, profile, request.options, say, plan)
    settings = bench.settings_sentence()
    if records is None or signals.received:
        return interrupted_ending(bench, signals, settings, say, cancelled=records is None)
    record = records[0]
    # judged once, as the run ended: the table, the exit status and the gate read the verdicts
    # the store keeps (`Runner.judged`)
    kept = bench.runners[0].judged if bench.runners else None
    judged = None if testing or bench.several else kept if kept is not None else judge(record)
    # on several servers the group is judged once too, each run's own verdicts its runner's
    group = servers_judged(bench, records) if bench.several and not testing else None
    if testing:
        say._print("simulating this profile's verdicts at the noise just measured")
        found = self_test(record, original)
        print(selftest_text(found, original), end="")
        worst = found.worst_noise()
        if worst is not None:
            save_noise(original.name, worst)
    elif bench.several:
        print(render_servers(records, args.format, judged=group), end="")
    else:
        print(render(record, args.format, judged=judged), end="")
    roles = "".join(f"; {r.disclosed}" for r in bench.runners if r.disclosed)
    lost = [r.store_lost for r in bench.runners if r.store_lost]
    if lost:
        # The store went away mid-run: where the run is now, and the settings, said last.
        say._print(f"pgwx: {'; '.join(lost)}; {settings}{roles}")
        return EXIT_CODES["failed"]
    how = f"`{hint(f'report {record.id} --format csv|json')}`"
    say._print(
        f"saved as run {', '.join(r.run_id for r in bench.runners)}; {how}; {settings}{roles}"
    )
    if any(not r.undo.complete for r in bench.runners):
        return EXIT_CODES["failed"]  # something pgwx set is still set: said on the last line
    if bench.several:
        assert group is not None
        ended = servers.outcome(group)
        status = EXIT_CODES.get(ended, EXIT_CODES["failed"])
    else:
        status = run_exit_status(record, judged, testing)
    if watching is None:
        return status
    tags = [servers.label(r) if bench.several else "" for r in records]
    cells = [
        c
        for r, tag in zip(records, tags, strict=True)
        for c in gate.comparisons_of(r, tag, own_judgement(r, record, judged, group))
    ]
    status, said = gate.apply(watching, cells, status)
    if said:
        say._print(f"pgwx: {said}")
    return status


def servers_judged(bench: Bench, records: list[RunRecord]) -> servers.ServerJudgement:
    """A run on several servers judged once: the verdicts between the servers, and each
    server's own, those its runner made as the run ended."""
    kept = {r.run_id: r.judged for r in bench.runners if r.judged is not None}
    return servers.judge_servers(records, kept=kept)


def own_judgement(
    run: RunRecord,
    record: RunRecord,
    judged: Judgement | None,
    group: servers.ServerJudgement | None,
) -> Judgement | None:
    """The judgement already made of one of the runs (None: none yet)."""
    if group is not None:
        return group.within_of(run)
    return judged if run is record else None


def server_choices(args: argparse.Namespace) -> list[ServerChoice]:
    """The servers --dsn/--pg/--pg-bin/--data-dir name, as the bench takes them."""
    named = getattr(args, "servers", None) or [(args.dsn, args.pg)]
    if len(named) > 1:
        return named_choices(named, args.keep_server)
    return [ServerChoice.of(None, args.dsn, args.data_dir, args.keep_server, owned_bindir(args))]


def conduct(
    bench: Bench,
    signals: TerminatingSignals,
    profile: Profile,
    options: RunOptions,
    say: Progress,
    plan: str | None = None,
) -> list[RunRecord] | None:
    """Resolve, open and run on the bench, then put back and release however it ends;
    `plan` is said once the servers are open, before the first trial.

    Returns:
        The stored runs, one per server; None when the run was cancelled (Ctrl-C, SIGTERM,
        SIGHUP: the first cancels, later ones are only counted until the servers are released).
    """
    warn = lambda m: say._print(f"  ! {m}")  # noqa: E731

    async def open_and_run() -> list[RunRecord]:
        main = asyncio.current_task()
        assert main is not None

        def interrupt(*_signo: int) -> None:
            bench.interrupted(main.cancel, warn)

        with signals.listening(interrupt):
            asyncio.get_running_loop().add_signal_handler(signal.SIGINT, interrupt)
            if signals.received:  # it came while the server was starting
                interrupt()
                raise asyncio.CancelledError
            caps = await bench.open(lambda _index: warn)
            if plan:
                say._print(plan)
            if not bench.several:
                return [await bench.run_one(0, profile, options, say, caps[0])]
            on = range(len(bench.sessions))
            return await bench.take_turns(on, profile, options, say._print, say.tagged)

    signals.install()
    try:
        bench.resolve(say._print)
        return asyncio.run(open_and_run())
    except (KeyboardInterrupt, asyncio.CancelledError):
        return None  # said last, once the server is released
    finally:
        # Once asyncio.run has ended, Ctrl-C is Python's own again and would raise in the
        # middle of putting back and releasing the servers (a second Ctrl-C 50 ms after the
        # first did, when the undo was quick): until they are released it is only counted.
        with bench.holding_interrupts(warn):
            bench.release(say._print)
            bench.store.close()
            for runner in bench.runners:
                if runner.store is not None and runner.store is not bench.store:
                    runner.store.close()  # the local store a lost one's run went on in
            signals.uninstall()


def interrupted_ending(
    bench: Bench, signals: TerminatingSignals, settings: str, say: Progress, *, cancelled: bool
) -> int:
    """The last line and exit status of a run a signal or Ctrl-C ended (or cut short)."""
    ids = ", ".join(r.run_id for r in bench.runners)
    if cancelled and bench.runners and all(r.ended == "finished" for r in bench.runners):
        # It came while the finished run's settings were put back: nothing was cancelled.
        what = signals.name if signals.received else "Ctrl-C"
        first = bench.runners[0].run_id
        say._print(
            f"{what} came after run {ids} had finished; it is stored "
            f"(`{hint(f'report {first}')}`); {settings}"
        )
        return signals.exit_status if signals.received else CANCELLED
    if not signals.received:
        if not bench.runners:
            say._print(f"cancelled before the run started; {settings}")
        else:
            first = bench.runners[0].run_id
            say._print(
                f"cancelled: finished trials kept in run {ids} (`{hint(f'report {first}')}`); "
                f"{settings}"
            )
        return CANCELLED
    if cancelled:
        done = f"run {ids} cancelled" if bench.runners else "nothing ran"
        say._print(f"{signals.name}: {done}; {settings}")
    else:  # it came while the server was being stopped: the run itself is stored
        say._print(f"{signals.name}: run {ids} is stored; {settings}")
    return signals.exit_status


def run_exit_status(
    record: RunRecord, judged: Judgement | None = None, selftest: bool = False
) -> int:
    """0 decided, 4 finished with comparisons undecided, 1 failed (README "For a team")."""
    if record.status != "finished":
        return EXIT_CODES["failed"]
    if selftest:  # a baseline against itself is meant to stay undecided
        return EXIT_CODES["decided"]
    return EXIT_CODES[outcome(record, judged if judged is not None else judge(record))]
