"""`pgwx`: the entry point, the commands it dispatches to, and the exit statuses.

Every error a user can cause ends here as one sentence on stderr and exit status 2. Each
command's module is imported only when that command runs, so `pgwx report` never loads the
engine's driver and `pgwx run` never loads the UI.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from collections.abc import Callable
from typing import cast

from explorer.cli.choice import owned_bindir
from explorer.cli.parser import ascii_arg, parse_args, present_arg
from explorer.errors import PgwxError
from explorer.text import TextOnly

USAGE_ERROR = 2
"""Exit status when the user asked for something pgwx cannot do (one sentence said why)."""
CANCELLED = 130
"""Exit status after Ctrl-C (128 + SIGINT), as shells expect."""
INTERNAL_ERROR = 3
"""Exit status on a programming error (the traceback is logged)."""

COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("run", "cmd_run"),
    "selftest": ("run", "cmd_run"),
    "runs": ("stored", "cmd_runs"),
    "report": ("stored", "cmd_report"),
    "compare": ("stored", "cmd_compare"),
    "replay": ("stored", "cmd_replay"),
    "export": ("stored", "cmd_export"),
    "import": ("stored", "cmd_import"),
    "push": ("stored", "cmd_push"),
    "history": ("stored", "cmd_history"),
    "profiles": ("profiles", "cmd_profiles"),
    "new": ("profiles", "cmd_new"),
    "check": ("profiles", "cmd_check"),
    "server": ("server", "cmd_server"),
    "restore": ("server", "cmd_restore"),
}
"""Each command: its module under `explorer.cli` and its function, imported when it runs."""


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


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `pgwx` command.

    Whatever a command prints goes through `printable`: names, notes and messages come from
    profiles, recordings, the store and servers, and none may drive the terminal.
    """
    streams = sys.stdout, sys.stderr
    for stream in streams:
        # An ASCII-only stdout (PYTHONIOENCODING=ascii, a C locale) writes × and ± as escapes
        # instead of ending a command, whose results are already saved, in an internal error.
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(ValueError, OSError):
                reconfigure(errors="backslashreplace")
    sys.stdout, sys.stderr = TextOnly(sys.stdout), TextOnly(sys.stderr)
    try:
        return _main(argv)
    except KeyboardInterrupt:
        # Ctrl-C while the options were read or a command was still loading: nothing ran.
        print("pgwx: cancelled", file=sys.stderr)
        return CANCELLED
    finally:
        sys.stdout, sys.stderr = streams


def command(name: str) -> Callable[[argparse.Namespace], int]:
    """The function of the command `name` (its module imported now, not before)."""
    module, function = COMMANDS[name]
    found = getattr(importlib.import_module(f"explorer.cli.{module}"), function)
    return cast(Callable[[argparse.Namespace], int], found)


def open_app(args: argparse.Namespace) -> int:
    """`pgwx` with no command: the interactive app on the servers named."""
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
        results=args.results,
    )


def _main(argv: list[str] | None) -> int:
    try:
        args = parse_args(argv)
    except PgwxError as exc:
        print(f"pgwx: {exc}", file=sys.stderr)
        return USAGE_ERROR
    if args.results is not None:
        from explorer.lab.store.backends import store_kind

        try:
            store_kind(args.results)  # nothing is created from a string pgwx cannot read
        except PgwxError as exc:
            print(f"pgwx: {exc}", file=sys.stderr)
            return USAGE_ERROR
    from explorer.lab.store import hints
    from explorer.lab.store.results import ResultStore

    ResultStore.on_damage = lambda m: print(f"pgwx: {m}", file=sys.stderr)

    hints.remember(args.results)  # every command it suggests names the store it was given
    try:
        if args.command is None:
            return open_app(args)
        return command(args.command)(args)
    except PgwxError as exc:
        print(f"pgwx: {exc}", file=sys.stderr)
        return USAGE_ERROR
    except KeyboardInterrupt:
        # Ctrl-C before a command could take it over (say, while pgwx was starting up).
        print("pgwx: cancelled", file=sys.stderr)
        return CANCELLED
    except Exception as exc:
        # Not the user's doing: say so in one sentence, keep the traceback for the report.
        from explorer.server.failures import log_traceback

        path = log_traceback(exc)
        where = f"the traceback is in {path}" if path else "the traceback could not be logged"
        print(
            f"pgwx: internal error ({type(exc).__name__}); {where} — please report it.",
            file=sys.stderr,
        )
        if args.debug:
            import traceback

            traceback.print_exception(exc, file=sys.stderr)
        return INTERNAL_ERROR
