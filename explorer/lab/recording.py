"""One run in one file: `pgwx export` writes it, `pgwx replay` plays it, `pgwx import` keeps it.

A recording is gzip'd JSON, self-contained and versioned: the run as the store keeps it (the
profile as it ran, the server and the settings in force, every trial's results), the
environment it ran in, and every event and sample with times rounded to the millisecond.
Stored runs already hold no password; `redact_host` also hides host names and socket paths.
Reading refuses a truncated, a foreign and a newer-format file with one sentence each.
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
import platform
import re
import zlib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from explorer.errors import PgwxError
from explorer.lab.results import ResultStore, write_private
from explorer.models import Event, RunRecord
from explorer.server.conninfo import parse_dsn

FORMAT = "pgwx-recording"
"""The `format` field every recording starts with."""
VERSION = 1
"""The recording format this pgwx writes and the newest it reads."""
SUFFIX = ".pgwx"
"""File name ending of recordings (`pgwx replay quick-demo` looks for quick-demo.pgwx)."""
HOST_MASK = "<host>"
"""What `redact_host` puts where a host name or socket path was."""
PATH_GUCS = ("data_directory", "unix_socket_directories", "listen_addresses", "config_file")
"""Settings whose values name the machine; masked with the host."""


class RecordingError(PgwxError, ValueError):
    """A file that cannot be played or imported; str() is one sentence."""


class Recording(BaseModel):
    """What a .pgwx file holds."""

    format: str = FORMAT
    """Always 'pgwx-recording': tells a recording from any other gzip'd JSON."""
    version: int = VERSION
    """Format version; a newer one than `VERSION` is refused with a sentence, not misread."""
    exported_at: dt.datetime
    """When the file was written (UTC)."""
    environment: dict[str, str] = {}
    """pgwx, Python and OS versions of the machine that ran it (no host name)."""
    run: RunRecord
    """The run as stored: profile as it ran, scale, server and settings, trials, status."""
    events: list[Event]
    """Every event of the run, in order; times (seconds since the run started) and samples
    rounded to the millisecond, results as measured."""


def _round(value: Any) -> Any:
    """Floats to three decimals (milliseconds for times), through dicts and lists."""
    if isinstance(value, float):
        return round(value, 3)
    if isinstance(value, dict):
        return {k: _round(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_round(v) for v in value]
    return value


def environment() -> dict[str, str]:
    """This machine as a recording describes it: versions, never names."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        pgwx = version("pgwx")
    except PackageNotFoundError:
        pgwx = "unknown"
    return {
        "pgwx": pgwx,
        "python": platform.python_version(),
        "os": f"{platform.system()} {platform.release()}",
        "machine": platform.machine(),
    }


def hosts_of(dsn_masked: str) -> list[str]:
    """Host names, addresses and socket paths a masked DSN or server label mentions."""
    found: list[str] = re.findall(r"/[\w.\-/]+", dsn_masked)  # socket paths, label or DSN
    try:
        params = parse_dsn(dsn_masked)
    except ValueError:
        params = {}
    for key in ("host", "hostaddr"):
        found += [h for h in params.get(key, "").split(",") if h]
    found = [h for h in found if h not in ("", "/")]
    # Longest first, so that a socket path is masked before a directory it contains.
    return sorted(set(found), key=len, reverse=True)


def redact(data: dict[str, Any], hosts: list[str]) -> dict[str, Any]:
    """The recording's JSON with every mention of `hosts` (and path settings) masked."""
    gucs = data["run"]["server"]["capabilities"].get("gucs", {})
    for name in PATH_GUCS:
        if name in gucs:
            gucs[name]["setting"] = HOST_MASK
    text = json.dumps(data)
    for host in hosts:
        text = text.replace(json.dumps(host)[1:-1], HOST_MASK)
    result: dict[str, Any] = json.loads(text)
    return result


def export_run(store: ResultStore, ref: str, *, redact_host: bool = False) -> dict[str, Any]:
    """A stored run as the JSON a recording holds (ready for `write_recording`)."""
    record = store.load(ref)
    events = list(store.events(record.id))
    rec = Recording(
        exported_at=dt.datetime.now(dt.UTC),
        environment=environment(),
        run=record,
        events=events,
    )
    data: dict[str, Any] = rec.model_dump(mode="json")
    # Times and samples to the millisecond (smaller files); measured results stay exact,
    # so a replayed or imported run reports the very same table.
    for event in data["events"]:
        event["at"] = round(event["at"], 3)
        if event["kind"] == "sample":
            event["sample"] = _round(event["sample"])
    if redact_host:
        hosts = hosts_of(record.server.dsn_masked)
        for event in events:
            server = getattr(event, "server", None)
            if server is not None:
                hosts += hosts_of(server.dsn_masked)
        data = redact(data, sorted(set(hosts), key=len, reverse=True))
    return data


def write_recording(data: dict[str, Any], path: Path) -> Path:
    """Write a recording, readable by its owner only (0600)."""
    raw = gzip.compress(json.dumps(data, separators=(",", ":")).encode(), mtime=0)
    return write_private(path, raw)


def read_recording(path: Path) -> Recording:
    """Read a .pgwx file.

    Raises:
        RecordingError: missing, truncated, foreign, newer-format or damaged file.
    """
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise RecordingError(f"Cannot read {path} ({exc.strerror or exc}).") from None
    if raw[:2] != b"\x1f\x8b":
        raise RecordingError(
            f"{path} is not a pgwx recording; make one with `pgwx export RUN --out FILE.pgwx`."
        )
    try:
        text = gzip.decompress(raw)
    except (EOFError, OSError, zlib.error):
        raise RecordingError(
            f"{path} is truncated or damaged (its compressed data ends early); "
            "copy or export it again."
        ) from None
    try:
        data = json.loads(text)
    except (ValueError, UnicodeDecodeError):
        data = None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise RecordingError(
            f"{path} is not a pgwx recording; make one with `pgwx export RUN --out FILE.pgwx`."
        )
    version = data.get("version")
    if not isinstance(version, int) or version > VERSION:
        raise RecordingError(
            f"{path} is a pgwx recording of format {version}, newer than this pgwx reads "
            f"({VERSION}); upgrade pgwx to play it."
        )
    try:
        return Recording.model_validate(data)
    except ValidationError as exc:
        where = ".".join(str(p) for p in exc.errors()[0]["loc"])
        raise RecordingError(
            f"{path} is a pgwx recording with damaged content (at {where}); export it again."
        ) from None


def import_recording(store: ResultStore, path: Path) -> RunRecord:
    """Add a recording's run to the store, so that `report` and `compare` see it.

    Raises:
        RecordingError: the file cannot be read, or the store already has that run.
    """
    rec = read_recording(path)
    if store.has_run(rec.run.id):
        raise RecordingError(
            f"Run {rec.run.id} is already in {store.path}; `pgwx report {rec.run.id}` shows it."
        )
    store.import_run(rec.run, rec.events)
    return rec.run
