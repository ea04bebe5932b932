"""What the command line names: the servers (--dsn and --pg given once or several times,
--pg-bin) and the results store (--results)."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from explorer.errors import UsageError
from explorer.server import installs

if TYPE_CHECKING:
    from explorer.lab.store.results import ResultStore

SEVERAL_SERVERS = (
    "Several servers (--pg or --dsn given more than once) are for `pgwx run` and the app; "
    "give one here."
)


def several_servers(args: argparse.Namespace) -> list[tuple[str | None, int | None]]:
    """The servers --dsn/--pg name, as (dsn, pg) pairs in the order given; `args.dsn` and
    `args.pg` become the single value every other command reads (or one sentence why not)."""
    dsns: list[str] = getattr(args, "dsn", None) or []
    pgs: list[int] = getattr(args, "pg", None) or []
    if any(not dsn.strip() for dsn in dsns):
        # An empty --dsn (an unset variable in a script) must not quietly mean the bundled server.
        raise UsageError(
            "--dsn is empty; give a connection string, or leave --dsn out to use the server "
            "pgwx starts itself."
        )
    if "dsn" in args:
        args.dsn = dsns[-1] if dsns else None
    if "pg" in args:
        args.pg = pgs[-1] if pgs else None
    if len(dsns) <= 1 and len(pgs) <= 1:
        return [(args.dsn if "dsn" in args else None, args.pg if "pg" in args else None)]
    if getattr(args, "command", None) == "restore":
        raise UsageError(restore_each(dsns, pgs))
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


def restore_each(dsns: list[str], pgs: list[int]) -> str:
    """`pgwx restore` on several servers: the one command for each, to run one after another
    (a DSN shown masked: its password is the user's to add back)."""
    from explorer.server.conninfo import mask_secrets

    named = [f"--dsn {shlex.quote(mask_secrets(d))}" for d in dsns] + [f"--pg {n}" for n in pgs]
    commands = [f"`pgwx {option} restore`" for option in named]
    return "`pgwx restore` puts back one server at a time; run " + ", then ".join(commands) + "."


def owned_bindir(args: argparse.Namespace) -> Path | None:
    """The programs --pg/--pg-bin pick (None: the bundled 18), or one sentence why not."""
    pg, pg_bin = getattr(args, "pg", None), getattr(args, "pg_bin", None)
    if (pg is not None or pg_bin is not None) and getattr(args, "dsn", None):
        raise UsageError(
            "--dsn names your server and --pg/--pg-bin start one pgwx owns; give one of them."
        )
    install = installs.choose(pg, pg_bin)
    return None if install is None else install.bindir


def results_store(args: argparse.Namespace) -> ResultStore:
    """The results store --results names (default $PGWX_RESULTS, else the local file)."""
    from explorer.lab.store.results import ResultStore

    return ResultStore(getattr(args, "results", None))
