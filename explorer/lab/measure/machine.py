"""What this machine is, as peers record it (HammerDB's system table, Conbench's machine
info): OS and kernel, memory, the filesystem and device under the server's data directory,
and a cloud instance type where the machine says it.

Everything is read from local files (/etc/os-release, /proc, /sys) and never from a network
metadata service; what cannot be read is None (unknown), never a guess. The data directory is
looked up only when the server runs on this machine and lets pgwx read `data_directory`.
"""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass
from pathlib import Path

ROOT = Path("/")
"""Where /etc, /proc and /sys are read (a test may point it elsewhere)."""

FIELD_MAX = 200
"""Longest text kept from any of these files (they are the machine's, but still bounded)."""


def _read(rel: str) -> str | None:
    try:
        text = (ROOT / rel).read_text(errors="replace").strip()
    except OSError:
        return None
    return text[:FIELD_MAX] or None


def os_name() -> str | None:
    """'Debian GNU/Linux 12 (bookworm)' from os-release, else the platform's system name."""
    text = _read("etc/os-release")
    for line in (text or "").splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.split("=", 1)[1].strip().strip('"')[:FIELD_MAX] or None
    return platform.system() or None


def kernel() -> str | None:
    """The kernel release ('6.1.0-18-amd64')."""
    return platform.release() or None


def memory_bytes() -> int | None:
    """Total memory from /proc/meminfo."""
    for line in (_read("proc/meminfo") or "").splitlines():
        if line.startswith("MemTotal:"):
            parts = line.split()
            if len(parts) >= 2 and parts[1].isdigit():
                return int(parts[1]) * 1024
    return None


@dataclass(frozen=True)
class Mount:
    """The mount a path lives on."""

    point: str
    device: str
    fs: str


def _unescape(field: str) -> str:
    """/proc/mounts writes a space as \\040 (and tab, newline, backslash likewise)."""
    for code, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        field = field.replace(code, char)
    return field


def mount_of(path: str) -> Mount | None:
    """The mount with the longest mount point that contains `path` (/proc/self/mounts)."""
    try:
        lines = (ROOT / "proc/self/mounts").read_text(errors="replace").splitlines()
    except OSError:
        return None
    try:
        resolved = os.path.realpath(path)
    except OSError:
        resolved = path
    best: Mount | None = None
    for line in lines:
        fields = line.split()
        if len(fields) < 3:
            continue
        device, point, fs = _unescape(fields[0]), _unescape(fields[1]), fields[2]
        inside = resolved == point or resolved.startswith(point.rstrip("/") + "/")
        if inside and (best is None or len(point) > len(best.point)):
            best = Mount(point[:FIELD_MAX], device[:FIELD_MAX], fs[:FIELD_MAX])
    return best


def machine_model() -> str | None:
    """'Amazon EC2 m5.large', 'Google Compute Engine', 'QEMU Standard PC …' (DMI)."""
    vendor, product = _read("sys/class/dmi/id/sys_vendor"), _read("sys/class/dmi/id/product_name")
    parts = [p for p in (vendor, product) if p]
    return " ".join(parts)[:FIELD_MAX] or None


def instance_type() -> str | None:
    """The cloud instance type, where the machine itself says it: on EC2 the DMI product name
    is the type ('m5.large'). Other clouds do not write theirs locally: None."""
    if (_read("sys/class/dmi/id/sys_vendor") or "") == "Amazon EC2":
        return _read("sys/class/dmi/id/product_name")
    return None
