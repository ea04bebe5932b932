"""Every place pgwx reads or writes a file, computed here and nowhere else.

Data (`$XDG_DATA_HOME/pgwx`): the results store (or `$PGWX_RESULTS`, a file or a
`postgresql://` URL), and beside a local store the exported tables and screenshots; the
clusters pgwx owns, one per major version (`/var/lib/pgwx/pg18`, `…/pg15` for root, whose
home is private). State
(`$PGWX_STATE_DIR`, else `$XDG_STATE_HOME/pgwx`): the undo journal, one file per server, and
the log a programming error's traceback goes to. Configuration
(`$XDG_CONFIG_HOME/pgwx/profiles`): the user's profiles. Shipped with pgwx: the profiles and
the recordings (the repository's `profiles/`, or the wheel's copy).
"""

from __future__ import annotations

import os
from pathlib import Path

LOG_NAME = "pgwx.log"
"""File under the state directory where a programming error's traceback is written."""


def _xdg(variable: str, *fallback: str) -> Path:
    """$variable/pgwx, else ~/<fallback>/pgwx."""
    base = os.environ.get(variable) or str(Path.home().joinpath(*fallback))
    return Path(base) / "pgwx"


def data_home() -> Path:
    """$XDG_DATA_HOME/pgwx, else ~/.local/share/pgwx."""
    return _xdg("XDG_DATA_HOME", ".local", "share")


def state_dir() -> Path:
    """Where pgwx keeps its undo journal and log ($PGWX_STATE_DIR, else XDG state dir)."""
    if os.environ.get("PGWX_STATE_DIR"):
        return Path(os.environ["PGWX_STATE_DIR"])
    return _xdg("XDG_STATE_HOME", ".local", "state")


def log_path() -> Path:
    """The log a programming error's traceback is written to (~/.local/state/pgwx/pgwx.log)."""
    return state_dir() / LOG_NAME


def journal_path(system_identifier: str, directory: Path | None = None) -> Path:
    """The undo journal of one server (by its system identifier), in the state directory."""
    return (directory or state_dir()) / f"undo-{system_identifier}.json"


def local_results_path() -> Path:
    """The local results store: ~/.local/share/pgwx/results.sqlite."""
    return data_home() / "results.sqlite"


def results_location() -> str:
    """The results store: $PGWX_RESULTS (a file, or a postgresql:// URL), else the local one."""
    return os.environ.get("PGWX_RESULTS") or str(local_results_path())


def results_files_dir(store: Path | None) -> Path:
    """Where the app's exports and screenshots go: beside a local store file `store`, in the
    data directory for a store on a server (None)."""
    return data_home() if store is None else Path(store).parent


def exports_dir(files_dir: Path) -> Path:
    """Where the app writes a run's table (e), under the store's files directory."""
    return files_dir / "exports"


def screenshots_dir(files_dir: Path) -> Path:
    """Where the app saves its screenshots (s), under the store's files directory."""
    return files_dir / "screenshots"


def cluster_data_dir(major: int = 18) -> Path:
    """~/.local/share/pgwx/pgN, or /var/lib/pgwx/pgN for root (root's home is private).

    One directory per major version (`--pg N`): a cluster is bound to the version that made
    it; the bundled 18's is pg18.
    """
    if os.geteuid() == 0:
        return Path(f"/var/lib/pgwx/pg{major}")
    return data_home() / f"pg{major}"


def user_profiles_dir() -> Path:
    """$XDG_CONFIG_HOME/pgwx/profiles, else ~/.config/pgwx/profiles."""
    return _xdg("XDG_CONFIG_HOME", ".config") / "profiles"


def shipped_profiles_dir() -> Path:
    """The profiles shipped with pgwx (the repo's profiles/, or the wheel's copy)."""
    package = Path(__file__).resolve().parent  # explorer/
    here = package.parent / "profiles"
    if here.is_dir():
        return here
    return package / "_profiles"


def recordings_dir() -> Path:
    """The recordings shipped with pgwx (profiles/recordings)."""
    return shipped_profiles_dir() / "recordings"
