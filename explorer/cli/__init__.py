"""Command line: `pgwx` opens the app; `pgwx run`, `runs`, `report`, `compare`, `replay`,
`profiles`, `server` ….

One module per part: `entry` (main, the commands, exit statuses), `parser` (every option),
`choice` (which servers are named), `progress` (the event stream on stderr), `run` (run and
selftest: the engine), `stored` (the stored-results commands: no driver, no UI), `profiles`
and `server`. Importing this package loads neither the driver nor the UI, nor yet the
parser: `main` loads the rest, so that a Ctrl-C while it does is one line, not a traceback.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["LIBPQ_ENV", "SEVERAL_SERVERS", "build_parser", "main", "parse_args"]

_CANCELLED = 130
"""`explorer.cli.entry.CANCELLED`, known before that module is loaded."""


def main(argv: list[str] | None = None) -> int:
    """The `pgwx` command (`explorer.cli.entry.main`), loaded now.

    Ctrl-C while pgwx is still loading (a second or two on a busy machine) ends it with one
    line and the exit status of a cancel: nothing has started yet, so nothing is left.
    """
    try:
        from explorer.cli.entry import main as entry_main
    except KeyboardInterrupt:
        print("pgwx: cancelled", file=sys.stderr)
        return _CANCELLED
    return entry_main(argv)


def __getattr__(name: str) -> Any:
    """The parser's functions and constants, loaded when asked for; `LIBPQ_ENV` (the libpq
    variables pgwx reads) from the driver's module."""
    if name == "LIBPQ_ENV":
        from explorer.server.connect import LIBPQ_ENV

        return LIBPQ_ENV
    if name == "SEVERAL_SERVERS":
        from explorer.cli.choice import SEVERAL_SERVERS

        return SEVERAL_SERVERS
    if name in ("build_parser", "parse_args"):
        from explorer.cli import parser

        return getattr(parser, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
