"""Where pgwx keeps its files: data (results, bundled cluster) and state (journal, log)."""

from __future__ import annotations

import os
from pathlib import Path


def data_home() -> Path:
    """$XDG_DATA_HOME/pgwx, else ~/.local/share/pgwx."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "pgwx"


def state_dir() -> Path:
    """Where pgwx keeps its undo journal and log ($PGWX_STATE_DIR, else XDG state dir)."""
    if os.environ.get("PGWX_STATE_DIR"):
        return Path(os.environ["PGWX_STATE_DIR"])
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "pgwx"
