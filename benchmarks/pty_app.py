"""The real app in a pseudo-terminal of a given size: what terminal_bytes.py and
terminal_latency.py both start (one place for the pty, its window size and the child)."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import termios
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def spawn(
    argv: list[str], env: dict[str, str], cols: int, rows: int
) -> tuple[subprocess.Popen[bytes], int]:
    """Start `argv` on a new pty of `cols`x`rows` (TIOCSWINSZ before the child starts, so
    its first layout is at that size), in a session of its own; the master end returned."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    proc = subprocess.Popen(
        argv,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        cwd=ROOT,
        start_new_session=True,
    )
    os.close(slave)
    return proc, master
