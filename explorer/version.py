"""pgwx's own version, as installed (light: `pgwx --version` loads nothing else)."""

from __future__ import annotations

from importlib import metadata


def pgwx_version() -> str:
    """The installed package's version, or 'unknown' when run from a bare checkout."""
    try:
        return metadata.version("pgwx")
    except metadata.PackageNotFoundError:
        return "unknown"
