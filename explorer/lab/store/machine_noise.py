"""The noise `pgwx selftest` measured, kept per machine and profile for the next run's plan.

A self-test measures this machine's trial-to-trial noise for one profile; the plan a run says
before its first trial (`explorer.analysis.plan`) can then tell how many rounds an effect
would need. Kept in the state directory as a small JSON file, keyed by the machine's host name
and the profile's name; what is read back is checked (a number in range), never trusted.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import socket
from pathlib import Path
from typing import Any

from explorer.paths import state_dir

FILE_NAME = "selftest-noise.json"
MAX_ENTRIES = 200
"""Machine × profile entries kept at most (the oldest go first)."""


def machine() -> str:
    """This machine's name as the file keys it (bounded, printable)."""
    name = socket.gethostname() or "unknown"
    return "".join(c for c in name if c.isprintable())[:100]


def _path(directory: Path | None) -> Path:
    return (directory or state_dir()) / FILE_NAME


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8")[:1_000_000])
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def save_noise(profile: str, noise: float, directory: Path | None = None) -> None:
    """Keep the trial-to-trial noise (0.12 = ±12 %) a self-test of `profile` measured here."""
    path = _path(directory)
    data = _read(path)
    key = f"{machine()}\t{profile[:100]}"
    data.pop(key, None)
    data[key] = {"noise": float(noise), "at": dt.datetime.now(dt.UTC).isoformat()}
    while len(data) > MAX_ENTRIES:
        data.pop(next(iter(data)))
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f)
        os.replace(tmp, path)


def load_noise(profile: str, directory: Path | None = None) -> float | None:
    """The noise the last self-test of `profile` on this machine measured; None without one."""
    entry = _read(_path(directory)).get(f"{machine()}\t{profile[:100]}")
    noise = entry.get("noise") if isinstance(entry, dict) else None
    if isinstance(noise, (int, float)) and 0 < noise < 5:
        return float(noise)
    return None
