"""Which directories pgwx may use for its own cluster, and which pgwx is using one now.

pgwx only ever CREATES a data directory that does not exist, or USES one that holds a cluster
it made. A cluster pgwx made carries `pgwx-cluster.json` (written after a successful initdb).
A cluster made by an older pgwx, before the marker existed, is recognised by pgwx's own layout
and adopted (marked): `PG_VERSION`, a `sock/` directory beside the cluster files, and the
block pgwx appends to `postgresql.conf`; no other cluster has that block. Everything else — a
file, an empty or non-empty directory pgwx did not make, someone else's cluster — is refused
with one sentence and left exactly as it was: pgwx never changes the mode or owner of a
directory it did not create, nor of any parent.

Two pgwx on one directory: the pgwx that starts (or first takes up) the server holds an
exclusive `flock` on `pgwx.lock` and writes there who it is (pid, host, since). Another pgwx
attaches knowingly, with a shared lock on `pgwx-users.lock`; it may use the server but never
stop or restart it while the holder lives, and the holder leaves the server running while
anyone is attached. The kernel drops both locks when a process dies, however it dies.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import socket
import stat
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Literal

from explorer.errors import PgwxError

MARKER = "pgwx-cluster.json"
"""The file that says pgwx made this cluster."""
MARKER_FORMAT = 1
"""Format version of MARKER; a newer one is refused rather than guessed at."""
CONF_BLOCK = "# pgwx: unix socket only"
"""First line of what pgwx appends to postgresql.conf (also how older clusters are known)."""
LOCK = "pgwx.lock"
"""Held exclusively by the pgwx that owns the running server; holds its pid, host, since."""
USERS_LOCK = "pgwx-users.lock"
"""Held shared by every other pgwx attached to the server."""
AUTO_CONF = "postgresql.auto.conf"

_SETTING = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_.]*)\s*(?:=|\s)")


class ServerError(PgwxError, RuntimeError):
    """The bundled server could not be initialised, started or stopped. str() is one sentence."""


class PgCtlCutShort(ServerError):
    """pg_ctl was ended by a signal before it finished (not the server failing): the server
    may be half-way through a shutdown or a start-up."""


Kind = Literal["new", "ours", "legacy"]


def classify(data_dir: Path) -> Kind:
    """What `data_dir` is to pgwx, or ServerError (one sentence) when pgwx must not touch it.

    Returns:
        "new" (does not exist: pgwx may create it), "ours" (marked), or "legacy" (made by an
        older pgwx, to be marked).
    """
    where = "give a path that does not exist yet (pgwx creates it)"
    try:
        st = data_dir.stat()
    except FileNotFoundError:
        if data_dir.is_symlink():
            raise ServerError(f"{data_dir} is a dangling symbolic link; {where}.") from None
        return "new"
    except OSError as exc:
        raise ServerError(f"pgwx cannot look at {data_dir} ({exc.strerror}); {where}.") from None
    if not stat.S_ISDIR(st.st_mode):
        raise ServerError(f"{data_dir} is not a directory; {where}.")
    marker = data_dir / MARKER
    try:
        if marker.exists():
            found = json.loads(marker.read_text()).get("format")
            if not isinstance(found, int) or found > MARKER_FORMAT:
                raise ServerError(
                    f"{marker} has format {found!r}, which this pgwx does not know; use the "
                    "pgwx that made it, or another --data-dir."
                )
            return "ours"
        if _older_pgwx_layout(data_dir):
            return "legacy"
        entries = os.listdir(data_dir)
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or "unreadable marker"
        raise ServerError(f"pgwx cannot read {data_dir} ({reason}); {where}.") from None
    if not entries:
        raise ServerError(
            f"{data_dir} already exists and pgwx did not make it, so pgwx leaves it alone; "
            f"name a directory that does not exist yet, such as {data_dir / 'pgwx'}."
        )
    if "PG_VERSION" in entries:
        raise ServerError(
            f"{data_dir} holds a PostgreSQL cluster pgwx did not make, which pgwx leaves alone; "
            f"{where}, or use --dsn to reach that cluster's running server."
        )
    raise ServerError(
        f"{data_dir} is not empty and pgwx did not make it, so pgwx leaves it alone; {where}."
    )


def _older_pgwx_layout(data_dir: Path) -> bool:
    """A cluster from a pgwx before MARKER: PG_VERSION, sock/, and pgwx's postgresql.conf."""
    if not (data_dir / "PG_VERSION").is_file() or not (data_dir / "sock").is_dir():
        return False
    try:
        return CONF_BLOCK in (data_dir / "postgresql.conf").read_text(errors="replace")
    except OSError:
        return False


def write_marker(data_dir: Path, owner: tuple[int, int] | None = None) -> None:
    """Mark `data_dir` as a cluster pgwx made (written only after initdb succeeded).

    Args:
        data_dir: The cluster directory.
        owner: (uid, gid) to give the file, like the cluster's own files; None keeps ours.
    """
    body = {"format": MARKER_FORMAT, "made": datetime.now(UTC).isoformat(timespec="seconds")}
    path = data_dir / MARKER
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(body) + "\n")
    tmp.chmod(0o644)
    if owner is not None:
        os.chown(tmp, *owner)
    os.replace(tmp, path)


def check_reachable(data_dir: Path, uid: int | None, gid: int | None, user: str) -> None:
    """ServerError unless the server's user can enter every existing parent of `data_dir`.

    Args:
        data_dir: The data directory (it may not exist yet).
        uid: The server's user when it is not us (pgwx runs as root), else None.
        gid: Its group (the only one it runs with).
        user: Its name, for the sentence.
    """
    if uid is None:
        return
    for parent in reversed(data_dir.parents):
        try:
            st = parent.stat()
        except FileNotFoundError:
            return  # pgwx creates the rest, open to the server's user
        if st.st_uid == uid:
            ok = st.st_mode & stat.S_IXUSR
        elif st.st_gid == gid:
            ok = st.st_mode & stat.S_IXGRP
        else:
            ok = st.st_mode & stat.S_IXOTH
        if not ok:
            raise ServerError(
                f"The server runs as the user {user!r}, which cannot enter {parent} (mode "
                f"{stat.S_IMODE(st.st_mode):04o}), so it cannot use {data_dir}; "
                "choose a --data-dir under a directory others can enter (such as "
                f"/var/lib/pgwx), or open that directory to {user!r} yourself."
            )


# --------------------------------------------------------------------------- auto.conf


def auto_conf_settings(data_dir: Path) -> list[str]:
    """Names of the settings in postgresql.auto.conf, in file order (values stay unread)."""
    try:
        text = (data_dir / AUTO_CONF).read_text(errors="replace")
    except OSError:
        return []
    names = [m.group(1).lower() for m in map(_SETTING.match, text.splitlines()) if m]
    return list(dict.fromkeys(names))


def remove_auto_conf_settings(data_dir: Path, names: list[str]) -> list[str]:
    """Drop the lines that set `names` from postgresql.auto.conf; keep every other line as is.

    The file is replaced atomically with the same mode and owner. Returns the names removed.
    """
    path = data_dir / AUTO_CONF
    wanted = {n.lower() for n in names}
    st = path.stat()
    kept: list[str] = []
    removed: list[str] = []
    for line in path.read_text().splitlines(keepends=True):
        found = _SETTING.match(line)
        if found and found.group(1).lower() in wanted:
            removed.append(found.group(1).lower())
        else:
            kept.append(line)
    if removed:
        tmp = path.with_name(path.name + ".pgwx-tmp")
        tmp.write_text("".join(kept))
        os.chown(tmp, st.st_uid, st.st_gid)
        tmp.chmod(stat.S_IMODE(st.st_mode))
        os.replace(tmp, path)
    return list(dict.fromkeys(removed))


# --------------------------------------------------------------------------- who uses it


class DirLock:
    """The holder lock (exclusive, with who holds it) and the attached-users lock of one dir."""

    def __init__(self, data_dir: Path, owner: tuple[int, int] | None = None) -> None:
        self.data_dir = data_dir
        self.owner = owner
        """(uid, gid) for the lock files, like the cluster's own files; None keeps ours."""
        self._held: IO[str] | None = None
        self._attached: IO[str] | None = None

    @property
    def held(self) -> bool:
        """This object holds the directory."""
        return self._held is not None

    def try_hold(self) -> str | None:
        """Take the holder lock; None on success, else who holds it ("pgwx pid … since …")."""
        if self._held is not None:
            return None
        f = self._open(LOCK, "a+")
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            text = f.read()
            f.close()
            return describe(text)
        f.seek(0)
        f.truncate()
        since = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        f.write(json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "since": since}))
        f.flush()
        self._held = f
        self.detach()
        return None

    def attach(self) -> None:
        """Say this object uses the server another pgwx holds (a shared lock)."""
        if self._attached is None:
            f = self._open(USERS_LOCK, "a")
            fcntl.flock(f, fcntl.LOCK_SH)
            self._attached = f

    def detach(self) -> None:
        """Stop saying so."""
        f, self._attached = self._attached, None
        if f is not None:
            f.close()

    def others_attached(self) -> bool:
        """Another pgwx is attached to the server this object holds."""
        with self._open(USERS_LOCK, "a") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(f, fcntl.LOCK_UN)
            return False

    def _open(self, name: str, mode: str) -> IO[str]:
        f = open(self.data_dir / name, mode)
        if self.owner is not None:
            os.fchown(f.fileno(), *self.owner)
        return f

    def release(self) -> None:
        """Let go of both locks (closing the file releases the flock)."""
        self.detach()
        f, self._held = self._held, None
        if f is not None:
            with contextlib.suppress(OSError):
                f.seek(0)
                f.truncate()
            f.close()


def describe(text: str) -> str:
    """'pgwx pid 123 on host since 2026-…' from a lock file's content."""
    try:
        who = json.loads(text)
        return f"pgwx pid {who['pid']} on {who['host']} since {who['since']}"
    except (ValueError, KeyError, TypeError):
        return "another pgwx (it did not say who, or since when)"
