"""Command line: `pgwx` opens the app; `pgwx run`, `runs`, `report`, `compare`, `replay`,
`profiles`, `server` ….

One module per part: `entry` (main, the commands, exit statuses), `parser` (every option),
`choice` (which servers are named), `progress` (the event stream on stderr), `run` (run and
selftest: the engine), `stored` (the stored-results commands: no driver, no UI), `profiles`
and `server`. Importing this package loads neither the driver nor the UI.
"""

from __future__ import annotations

from typing import Any

from explorer.cli.choice import SEVERAL_SERVERS
from explorer.cli.entry import main
from explorer.cli.parser import build_parser, parse_args

__all__ = ["LIBPQ_ENV", "SEVERAL_SERVERS", "build_parser", "main", "parse_args"]


def __getattr__(name: str) -> Any:
    """`LIBPQ_ENV` (the libpq variables pgwx reads), from the driver's module when asked."""
    if name == "LIBPQ_ENV":
        from explorer.server.connect import LIBPQ_ENV

        return LIBPQ_ENV
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
