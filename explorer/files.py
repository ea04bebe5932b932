"""Files pgwx writes: created new, never through a link, with the modes the README states.

Every output (a recording, an exported table, a new profile, the log) is written here: to a
temporary name in the target's directory, opened with O_CREAT|O_EXCL|O_NOFOLLOW (so nothing
already there, a symbolic link least of all, is ever opened for writing), then put in place
with a rename. A symbolic link, a device or a directory where the file should go is refused
with one sentence; an existing regular file too, unless the caller was told to replace it
(`--force`). Directories pgwx creates for its own files are 0700.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import IO

from explorer.errors import UsageError

PRIVATE = 0o600
"""Mode of files only their owner may read: recordings, exported tables, the log."""
SHARED = 0o644
"""Mode of files meant to be read by others (a starting profile)."""


class FileRefused(UsageError):
    """pgwx will not write where it was asked; str() is one sentence saying what to do."""


def private_dir(path: Path) -> Path:
    """Make `path` a directory; if pgwx creates it, only its owner may enter it (0700).

    A directory that already exists is left exactly as it is: it may be the user's own.
    Missing ancestors are created with the default mode (they are not pgwx's).
    """
    if not path.is_dir():
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            path.mkdir(mode=0o700)
        except FileExistsError:
            return path
        path.chmod(0o700)  # the umask could have left it wider or narrower
    return path


def _check_target(path: Path, force: bool) -> None:
    """Refuse a link, anything but a regular file, and (without `force`) an existing file."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(st.st_mode):
        raise FileRefused(
            f"{path} is a symbolic link; pgwx never writes through a link: remove it or "
            "give the path of a new file."
        )
    if not stat.S_ISREG(st.st_mode):
        raise FileRefused(f"{path} exists and is not a regular file; give the path of a new file.")
    if not force:
        raise FileRefused(
            f"{path} exists already; pass --force to replace it, or pick another name."
        )


def write_new(path: Path, data: str | bytes, *, mode: int = PRIVATE, force: bool = False) -> Path:
    """Write `data` to `path` as a new file of `mode`, through a temporary name and a rename.

    Args:
        path: Where the file goes; its directory must exist.
        data: The whole content (text is written as UTF-8).
        mode: The file's permission bits, whatever the umask.
        force: Replace an existing regular file (never a link, a device or a directory).

    Raises:
        FileRefused: a link, a non-regular file, or (without `force`) any file is at `path`.
        OSError: the directory cannot be written.
    """
    path = Path(path)
    _check_target(path, force)
    payload = data.encode() if isinstance(data, str) else data
    tmp = path.with_name(f".{path.name}.{os.urandom(4).hex()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    try:
        with os.fdopen(fd, "wb") as out:
            os.fchmod(out.fileno(), mode)  # the umask filtered the mode os.open gave it
            out.write(payload)
            out.flush()
            os.fsync(out.fileno())
        if force:
            _check_target(path, force)  # a link put there meanwhile is still refused
            os.replace(tmp, path)  # a rename replaces the name, never what a link points to
        else:
            _link_new(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    return path


def _link_new(tmp: Path, path: Path) -> None:
    """Give `tmp` the name `path` only if nothing has that name (checked by the kernel)."""
    try:
        os.link(tmp, path, follow_symlinks=False)
    except FileExistsError:
        _check_target(path, force=False)  # says what is there
        raise
    except OSError:
        # A file system without hard links: the check just made is the best left.
        _check_target(path, force=False)
        os.rename(tmp, path)


def open_private_log(path: Path) -> IO[str]:
    """Open the log `path` for appending, 0600, in a 0700 directory; never through a link."""
    private_dir(path.parent)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, PRIVATE)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise FileRefused(f"{path} is not a regular file; remove it so pgwx can log there.")
        os.fchmod(fd, PRIVATE)  # a log an older pgwx left 0644
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "a", encoding="utf-8")


def input_problem(path: Path, max_bytes: int | None = None) -> str | None:
    """What stops pgwx reading `path` as an input file, as the end of a sentence ("does not
    exist", "is not a regular file (a FIFO)", "is not readable by this user", "is too large
    (3.0 GiB; at most 1.0 GiB)"); None when it can be read.

    A FIFO exists: calling it missing sent people looking for a file that was there.
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "does not exist"
    except PermissionError:
        return "cannot be reached by this user (a directory on the way is not searchable)"
    except OSError as exc:
        return f"cannot be looked at ({exc.strerror or exc})"
    if not stat.S_ISREG(st.st_mode):
        kind = next(
            (
                name
                for test, name in (
                    (stat.S_ISDIR, "a directory"),
                    (stat.S_ISFIFO, "a FIFO"),
                    (stat.S_ISSOCK, "a socket"),
                    (stat.S_ISCHR, "a character device"),
                    (stat.S_ISBLK, "a block device"),
                )
                if test(st.st_mode)
            ),
            "something else",
        )
        return f"is not a regular file ({kind})"
    if not os.access(path, os.R_OK):
        return "is not readable by this user"
    if max_bytes is not None and st.st_size > max_bytes:
        return f"is too large ({st.st_size:,} bytes; at most {max_bytes:,})"
    return None
