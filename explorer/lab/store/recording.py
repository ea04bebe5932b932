"""One run in one file: `pgwx export` writes it, `pgwx replay` plays it, `pgwx import` keeps it.

A recording is gzip'd JSON, self-contained and versioned: the run as the store keeps it (the
profile as it ran, the server and the settings in force, every trial's results), the
environment it ran in, and every event and sample with times rounded to the millisecond.
Stored runs already hold no password; `redact_host` also hides host names and socket paths.
Reading refuses a truncated, a foreign and a newer-format file with one sentence each, and
holds every file to the ceilings and checks of `explorer.lab.store.bounds` (a recording is
made to be passed around: it is read as data an attacker could have written).
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
import platform
import re
import zlib
from array import array
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, overload

from pydantic import BaseModel, TypeAdapter, ValidationError

from explorer.lab.store.bounds import (
    MAX_DEPTH,
    CappedLines,
    Consistency,
    RecordingError,
    invalid,
    open_regular,
    too_deep,
)
from explorer.lab.store.results import ResultStore, write_private
from explorer.models import Event, PhaseStarted, RunRecord, SampleTaken
from explorer.server.conninfo import parse_dsn
from explorer.text import printable

FORMAT = "pgwx-recording"
"""The `format` field every recording starts with."""
VERSION = 1
"""The recording format this pgwx writes and the newest it reads."""
SUFFIX = ".pgwx"
"""File name ending of recordings (`pgwx replay quick-demo` looks for quick-demo.pgwx)."""
HOST_MASK = "<host>"
"""What `redact_host` puts where a host name or socket path was."""
PATH_MASK = "<path>"
"""What `redact_host` puts where the server programs' directory was."""
PROGRAMS_IN = re.compile(r" in /[^\"]*")
"""' in /usr/lib/postgresql/15/bin' in the JSON text: where the server's programs are."""
PATH_GUCS = ("data_directory", "unix_socket_directories", "listen_addresses", "config_file")
"""Settings whose values name the machine; masked with the host."""


_EVENT: TypeAdapter[Event] = TypeAdapter(Event)
EVENTS_KEY = b',"events":['
"""How the first line of a recording ends: one event per line follows."""


class Tape(Sequence[Event]):
    """A recording's events held compressed, one by one, and decoded when asked for.

    An hour of samples is ~60 MB as Python objects and ~5 MB here; what a replay looks up
    often (times, phase starts, which events are told in the log) is kept plain beside.
    """

    def __init__(self) -> None:
        self._raw: list[bytes] = []
        self.ats = array("d")
        """Each event's time (seconds since the run started)."""
        self.phase_starts: list[int] = []
        """Indices of PhaseStarted events."""
        self.told: list[int] = []
        """Indices of the events that are not samples (the ones a log may tell)."""

    def append(self, raw: bytes, event: Event) -> None:
        """Keep one event (its JSON, and the event it decodes to)."""
        index = len(self._raw)
        self._raw.append(zlib.compress(raw, 1))
        self.ats.append(event.at)
        if isinstance(event, PhaseStarted):
            self.phase_starts.append(index)
        if not isinstance(event, SampleTaken):
            self.told.append(index)

    def __len__(self) -> int:
        return len(self._raw)

    @overload
    def __getitem__(self, index: int) -> Event: ...
    @overload
    def __getitem__(self, index: slice) -> list[Event]: ...
    def __getitem__(self, index: int | slice) -> Event | list[Event]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        return _EVENT.validate_json(zlib.decompress(self._raw[index]))

    def __iter__(self) -> Iterator[Event]:
        for raw in self._raw:
            yield _EVENT.validate_json(zlib.decompress(raw))


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
    # The server programs' directory ('postgres (PostgreSQL) 18.6 in /home/me/…/bin') names
    # the machine's user and folders too.
    text = PROGRAMS_IN.sub(" in " + PATH_MASK, text)
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


def write_recording(data: dict[str, Any], path: Path, *, force: bool = False) -> Path:
    """Write a recording, readable by its owner only (0600), as a new file (`--force`:
    replacing a regular file; never through a link).

    Plain JSON, laid out one event per line after a first line that holds everything else,
    so that a reader can take the events one at a time (`read_recording(tape=True)`).
    """
    head = {k: v for k, v in data.items() if k != "events"}
    lines = [json.dumps(head, separators=(",", ":"))[:-1] + EVENTS_KEY.decode()]
    body = ",\n".join(json.dumps(e, separators=(",", ":")) for e in data["events"])
    text = "\n".join([*lines, body, "]}"]) + "\n"
    return write_private(path, gzip.compress(text.encode(), mtime=0), force=force)


def not_a_recording(path: Path) -> RecordingError:
    """The sentence for a file that is not a recording at all (`import` and `replay` alike)."""
    return RecordingError(
        f"{path} is not a pgwx recording; make one with `pgwx export RUN --out FILE.pgwx`."
    )


def _check_head(path: Path, data: Any) -> None:
    """A recording's format and version, before anything else is believed."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise not_a_recording(path)
    version = data.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise RecordingError(
            f"{path} says it is a pgwx recording of format {printable(repr(version)[:20])}, "
            "which no pgwx writes; it is damaged, export it again."
        )
    if version > VERSION:
        raise RecordingError(
            f"{path} is a pgwx recording of format {version}, newer than this pgwx reads "
            f"({VERSION}); upgrade pgwx to play it."
        )


def _damaged(
    path: Path, exc: ValidationError, prefix: tuple[str | int, ...] = ()
) -> RecordingError:
    where = ".".join(str(p) for p in (*prefix, *exc.errors()[0]["loc"]))
    return invalid(path, f"damaged content at {printable(where[:80])}")


def read_recording(path: Path, *, tape: bool = False) -> Recording:
    """Read a .pgwx file, within the ceilings of `explorer.lab.store.bounds`.

    The file is read twice, streaming: once to measure it (sizes, line lengths, number of
    events), without decoding anything, and once to decode and check every field. So a file
    too large is refused before any of it is kept, and memory follows the events kept.

    Args:
        path: The file.
        tape: Keep the events compressed in a `Tape` (a replay of a long run, an import),
            not as a list.

    Raises:
        RecordingError: missing, not a regular file, too large, truncated, foreign,
            newer-format, damaged or inconsistent file (one sentence each).
    """
    with open_regular(path) as raw:
        if raw.read(2) != b"\x1f\x8b":
            raise not_a_recording(path)
        raw.seek(0)
        with CappedLines(path, raw) as lines:
            lines.survey(EVENTS_KEY)
        raw.seek(0)
        with CappedLines(path, raw) as lines:
            return _read(path, lines, tape)


def _read(path: Path, lines: CappedLines, tape: bool) -> Recording:
    first = lines.head()
    if not first.rstrip().endswith(EVENTS_KEY):
        # Not laid out by pgwx (or not a recording at all): read it whole.
        return _whole(path, first + lines.rest())
    head = _json(path, first.rstrip()[: -len(EVENTS_KEY)] + b"}")
    _check_head(path, head)
    try:
        rec = Recording.model_validate({**head, "events": []})
    except ValidationError as exc:
        raise _damaged(path, exc) from None
    checker = Consistency(path, rec.run)
    events: Tape | list[Event] = Tape() if tape else []
    ended = False
    for n, line in enumerate(lines):
        line = line.rstrip().removesuffix(b",")
        if line == b"]}":
            ended = True
            continue
        try:
            event = _EVENT.validate_json(line)
        except ValidationError as exc:
            raise _damaged(path, exc, ("events", n)) from None
        checker.event(n, event)
        if isinstance(events, Tape):
            events.append(line, event)
        else:
            events.append(event)
    if not ended:
        raise RecordingError(f"{path} is truncated (its events stop early); copy it again.")
    rec.events = events  # type: ignore[assignment]
    return rec


def _json(path: Path, text: bytes) -> Any:
    """JSON of a recording's text; one sentence when it is not JSON or nests too deep."""
    try:
        data = json.loads(text)
        deep = too_deep(data)
    except (ValueError, UnicodeDecodeError):
        raise not_a_recording(path) from None
    except RecursionError:
        deep = True
    if deep:
        raise invalid(path, f"values nested more than {MAX_DEPTH} deep, unlike any recording")
    return data


def _whole(path: Path, text: bytes) -> Recording:
    """A recording read in one piece (any JSON layout)."""
    data = _json(path, text)
    _check_head(path, data)
    try:
        rec = Recording.model_validate(data)
    except ValidationError as exc:
        raise _damaged(path, exc) from None
    checker = Consistency(path, rec.run)
    for n, event in enumerate(rec.events):
        checker.event(n, event)
    return rec


def import_recording(store: ResultStore, path: Path) -> RunRecord:
    """Add a recording's run to the store, so that `report` and `compare` see it.

    Raises:
        RecordingError: the file cannot be read, or the store already has that run.
    """
    rec = read_recording(path, tape=True)  # events kept compressed until stored
    if store.has_run(rec.run.id):
        raise RecordingError(
            f"Run {rec.run.id} is already in {store.path}; `pgwx report {rec.run.id}` shows it."
        )
    store.import_run(rec.run, rec.events)
    return rec.run
