"""The command line's grammar: every command and option, with its help.

`parse_args` also reads which servers are named (`explorer.cli.choice`). Importing this module
loads no driver and no UI: `pgwx --version` and the stored-results commands stay light.
"""

from __future__ import annotations

import argparse
import platform
from pathlib import Path
from typing import Any

from explorer.analysis.formats import FORMATS
from explorer.analysis.gate import EXIT_REGRESSED, Gate, gate_from_args
from explorer.analysis.units import human_bytes
from explorer.cli.choice import several_servers
from explorer.errors import PgwxError
from explorer.lab.run.limits import MAX_BYTES, MAX_ROWS
from explorer.server import installs
from explorer.version import pgwx_version


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


class _VersionAction(argparse.Action):
    """`pgwx --version`: pgwx, Python and the bundled PostgreSQL (found only when asked)."""

    def __call__(self, parser: argparse.ArgumentParser, *_args: Any, **_kw: Any) -> None:
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
        "--allow-undecidable",
        action="store_true",
        help="run fixed --repeats even when they are too few to decide any comparison",
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
    p.add_argument(
        "--label",
        help="a free label kept with the run (what changed: 'kernel 6.8'), shown in runs, "
        "history, compare and the store's views",
    )
    p.add_argument("--ref", help="a git ref or version kept with the run, shown like --label")


def _gate_args(p: argparse.ArgumentParser) -> None:
    """--fail-on slower, narrowed by --fail-variant / --fail-phase (explorer.analysis.gate)."""
    p.add_argument(
        "--fail-on",
        metavar="WORD",
        help=f"exit {EXIT_REGRESSED} when a comparison is decided `slower` beyond the threshold "
        "(never on same, faster or undecided); WORD is `slower`",
    )
    p.add_argument(
        "--fail-variant",
        action="append",
        metavar="NAME",
        help="with --fail-on: watch only this variant (repeatable)",
    )
    p.add_argument(
        "--fail-phase",
        action="append",
        metavar="NAME",
        help="with --fail-on: watch only this phase, e.g. copy or total (repeatable)",
    )


def gate_arg(args: argparse.Namespace) -> Gate | None:
    """The gate --fail-on/--fail-variant/--fail-phase name (None without --fail-on)."""
    return gate_from_args(
        getattr(args, "fail_on", None),
        getattr(args, "fail_variant", None),
        getattr(args, "fail_phase", None),
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
    _gate_args(run)
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
    _gate_args(cmp)
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
        "--to",
        metavar="STORE",
        help="the store to copy into (default --results / PGWX_RESULTS; then name the store "
        "to copy from with --from)",
    )
    psh.add_argument(
        "--from",
        dest="source",
        metavar="STORE",
        help="the store to copy from (default the store in force: --results, PGWX_RESULTS, "
        "else ~/.local/share/pgwx/results.sqlite)",
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
    srv.add_argument(
        "--keep-server",
        action="store_true",
        default=argparse.SUPPRESS,
        help="accepted here too: `server start` always leaves the server running",
    )
    _pg_args(srv, {"default": argparse.SUPPRESS})
    return parser


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


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line, with `servers` (see `several_servers`) and one --dsn/--pg value."""
    args = build_parser().parse_args(argv)
    args.servers = several_servers(args)
    return args
