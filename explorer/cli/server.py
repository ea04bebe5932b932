"""The server commands: `pgwx server start|stop|status|list` and `pgwx restore`."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable

from explorer import paths
from explorer.cli.choice import owned_bindir, results_store
from explorer.cli.run import resolve_session
from explorer.lab.run.session import restore_pending, start_repairing
from explorer.lab.safety.owner import ServerBusy
from explorer.lab.safety.undo import Undo, restore_command
from explorer.server import installs
from explorer.server.capabilities import probe
from explorer.server.connect import Target
from explorer.server.embedded import LocalServer


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
    store = results_store(args)
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
