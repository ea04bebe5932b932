"""A run's scratch directory, and the ones killed runs left behind.

A run keeps its prepared data there (generated rows, the rows of the user's own SQL, a
pg_dump of the restore workload): private (0700), in the system's temp directory, removed
however the run ends. A pgwx killed outright (SIGKILL, the OOM killer, a power cut of the
process) cannot remove it, so each directory holds an exclusive `flock` on a file inside it
for as long as its run lives, and every run starts by removing this user's directories whose
lock is free. A lock, not a pid: it is released by the kernel when the process dies, and is
right across pid namespaces and pid reuse.

A directory is made under a name the sweep does not look at and renamed once its lock is
held, so a sweep never sees a directory between its making and its locking.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

PREFIX = "pgwx-run-"
"""What a live or orphaned scratch directory's name starts with."""
MAKING = "pgwx-making-"
"""The name a directory has before its lock is held."""
LOCK = ".pgwx-run.lock"
"""The file inside a scratch directory whose flock says its run is alive."""


@contextlib.contextmanager
def scratch_dir() -> Iterator[Path]:
    """A private scratch directory, locked while the `with` lasts, removed after it."""
    sweep()
    made = Path(tempfile.mkdtemp(prefix=MAKING))
    lock = None
    try:
        lock = open(made / LOCK, "w")
        fcntl.flock(lock, fcntl.LOCK_EX)
        path = made.with_name(PREFIX + made.name.removeprefix(MAKING))
        os.rename(made, path)
        made = path
        yield path
    finally:
        # the directory first, then the lock: a sweep never sees it unlocked and present
        shutil.rmtree(made, ignore_errors=True)
        if lock is not None:
            lock.close()


def sweep() -> list[Path]:
    """Remove this user's scratch directories whose run is gone; returns what it removed.

    Directories of other users, without a lock file (made by pgwx before 0.2) or whose lock
    is held are left alone; a directory that cannot be removed is skipped, never an error.
    """
    removed: list[Path] = []
    for path in sorted(Path(tempfile.gettempdir()).glob(PREFIX + "*")):
        if _run_is_gone(path):
            shutil.rmtree(path, ignore_errors=True)
            if not path.exists():
                removed.append(path)
    return removed


def _run_is_gone(path: Path) -> bool:
    """`path` is this user's scratch directory (not a link) and its lock is free."""
    try:
        if path.is_symlink() or not path.is_dir() or path.stat().st_uid != os.getuid():
            return False
        fd = os.open(path / LOCK, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False  # held: its run is alive
    finally:
        os.close(fd)
    return True
