"""The durable store of runs, trials and events (SQLite, standard library).

Every finished trial is committed before the next one starts; the whole event stream is
kept so `pgwx replay` can play a run back without a server. Several pgwx processes share
one store: writes are short transactions with a busy timeout, reading never writes, and a
run still marked "running" is reported as incomplete only once its owner process is gone.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import socket
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

from pydantic import TypeAdapter, ValidationError

from explorer.files import PRIVATE, private_dir, write_new
from explorer.lab.store.backends import (
    BUSY_TIMEOUT,
    LostBackend,
    PostgresBackend,
    SqlBackend,
    SqliteBackend,
    StoreError,
    StoreLost,
    store_kind,
)
from explorer.lab.store.textbound import stored_json
from explorer.models import Environment, Event, RunRecord, RunStatus, TrialResult
from explorer.paths import results_files_dir, results_location
from explorer.text import printable

if TYPE_CHECKING:
    from explorer.analysis.judge import Judgement

__all__ = ["BUSY_TIMEOUT", "DamagedRun", "ResultStore", "StoreError", "StoreLost", "new_run_id"]

_EVENT: TypeAdapter[Event] = TypeAdapter(Event)

INTERRUPTED = "pgwx stopped before the run ended"


RUN_ID = re.compile(r"\d{8}-\d{6}-[0-9a-f]{6}")
"""What `new_run_id` makes; a recording's run id must look like it (`%` or 100,000
characters are not run ids, and a prefix lookup must not match every run)."""


def new_run_id(now: dt.datetime | None = None) -> str:
    """Sortable, readable id: 20261122-030405-ab12cd (24 random bits: runs in one second differ)."""
    now = now or dt.datetime.now()
    return now.strftime("%Y%m%d-%H%M%S-") + os.urandom(3).hex()


# --------------------------------------------------------------------------- damaged rows


class DamagedRecord(StoreError):
    """A stored run, trial or event does not validate; str() is one sentence naming it."""


class DamagedRun(NamedTuple):
    """A run row whose record does not validate: listed as damaged, never loaded."""

    id: str
    """The row's id, printable (a planted id may hold control characters)."""
    why: str
    """What is wrong with it, in a few words."""


def _why(exc: Exception) -> str:
    """What is wrong with a stored JSON value, in a few words (no value quoted)."""
    if isinstance(exc, ValidationError):
        errors = exc.errors()
        first = errors[0] if errors else None
        where = ".".join(str(p) for p in first["loc"]) if first and first["loc"] else "the top"
        more = f" and {len(errors) - 1} more" if len(errors) > 1 else ""
        msg = printable(str(first["msg"]))[:80] if first else "invalid"
        return f"its record does not validate: {where}: {msg}{more}"
    return "its record is not readable JSON"


def _parse(model: Any, raw: Any) -> Any:
    """A stored value as `model`; ValueError (with `_why`'s words) when it does not validate."""
    try:
        if isinstance(raw, bytes | bytearray):
            raw = raw.decode()
        if not isinstance(raw, str):
            raise ValueError("not text")
        return model.validate_json(raw)
    except (ValueError, TypeError, RecursionError) as exc:
        raise ValueError(_why(exc)) from None


_RECORD: TypeAdapter[RunRecord] = TypeAdapter(RunRecord)
_TRIAL: TypeAdapter[TrialResult] = TypeAdapter(TrialResult)


# --------------------------------------------------------------------------- private files


def write_private(path: Path, text: str | bytes, *, force: bool = True) -> Path:
    """Write a file only its owner can read (0600), in a private directory pgwx creates.

    Never through a link (see `explorer.files.write_new`); an existing regular file is
    replaced only with `force`.
    """
    private_dir(path.parent)
    return write_new(path, text, mode=PRIVATE, force=force)


# --------------------------------------------------------------------------- run owners


class Owner(NamedTuple):
    """The process that writes a run: alive or gone is decided from these three."""

    host: str
    pid: int
    started: str | None
    """Boot id and start time of the process, so a recycled pid is not taken for it."""


def _process_start(pid: int) -> str | None:
    """'<boot id>:<start ticks>' of a live process, or None where /proc cannot say."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None
    # The command name may hold spaces and parentheses: fields count from the last ')'.
    fields = raw[raw.rindex(")") + 2 :].split()
    if fields[0] in ("Z", "X"):
        return "dead"
    return f"{boot}:{fields[19]}"


def this_process() -> Owner:
    """The owner record of the calling process."""
    return Owner(socket.gethostname(), os.getpid(), _process_start(os.getpid()))


def owner_gone(owner: Owner | None) -> bool:
    """True when the process that wrote a run is known to be no more.

    A run without an owner was written by a pgwx from before owners were kept. A run owned
    on another host cannot be judged from here and counts as alive.
    """
    if owner is None:
        return True
    if owner.host != socket.gethostname():
        return False
    try:
        os.kill(owner.pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # alive, another user's
    if owner.started is None:
        return False
    return _process_start(owner.pid) != owner.started


# --------------------------------------------------------------------------- the store


class ResultStore:
    """Runs on disk, or in a team's PostgreSQL. Cheap to open; several are safe.

    A row that does not validate (a teammate's planted `{}`, a run id with a control
    character) never ends a command: `list_entries` shows it as a `DamagedRun`, and every
    reader skips it and says so once through `note` (`on_damage`, set by the front end).

    Events are kept in memory and written in the same short transaction as the next trial
    (or the run's end): no transaction stays open between trials, so other pgwx processes
    can read and write the store at any time, and a killed pgwx loses at most the trial in
    flight.

    Args:
        path: A SQLite file, or a `postgresql://` URL (see `explorer.lab.store.backends`);
            `$PGWX_RESULTS` or the local file by default.
    """

    on_damage: ClassVar[Callable[[str], None] | None] = None
    """Where sentences about skipped rows go as they are found (the command line: stderr)."""

    def __init__(self, path: Path | str | None = None) -> None:
        location = str(path) if path is not None else results_location()
        self.owner = this_process()
        self._pending: list[tuple[str, int, str]] = []
        self._written = 0
        """How many held events the open transaction has written (dropped from memory at COMMIT)."""
        self._event_seq: dict[str, int] = {}
        self._abandoned = False
        """The store was lost and given up (`abandon`): closing it writes nothing."""
        self.damage: list[str] = []
        """Sentences about stored rows that did not validate and were skipped (each once)."""
        self.sql: SqlBackend
        if store_kind(location) == "postgres":
            self.sql = PostgresBackend(location.strip())
            self.path: Path | str = self.sql.location
            self.files_dir = results_files_dir(None)
            return
        self.path = Path(location)
        self.files_dir = results_files_dir(self.path)
        """Where exports and screenshots of the app go: beside a local store."""
        try:
            private_dir(self.path.parent)
            self.sql = SqliteBackend(self.path)
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(
                f"Cannot open the results store {self.path} ({exc}); set "
                "PGWX_RESULTS to a writable file."
            ) from None

    @property
    def db(self) -> sqlite3.Connection:
        """The SQLite connection of a local store (tests and repairs look inside)."""
        assert isinstance(self.sql, SqliteBackend), "a PostgreSQL store has no sqlite3 handle"
        return self.sql.db

    @contextmanager
    def _write(self) -> Iterator[None]:
        """One short write transaction, waiting up to BUSY_TIMEOUT for another writer."""
        self.sql.begin()
        try:
            yield
        except BaseException:
            self._written = 0  # still held: the next transaction writes them again
            self.sql.rollback()
            raise
        self.sql.commit()
        del self._pending[: self._written]
        self._written = 0

    def close(self) -> None:
        """Write any events still held in memory, and close."""
        if self._abandoned:
            return
        if self._pending:
            with self._write():
                self._flush_events()
        self.sql.close()

    def held_events(self, run_id: str) -> list[str]:
        """The events of `run_id` held in memory, not yet written (their JSON)."""
        return [raw for rid, _seq, raw in self._pending if rid == run_id]

    def hold_events(self, run_id: str, events: list[str]) -> None:
        """Hold `events` (JSON, in order) of `run_id` to write with its next trial or end."""
        for raw in events:
            seq = self._event_seq.get(run_id, 0)
            self._event_seq[run_id] = seq + 1
            self._pending.append((run_id, seq, raw))

    def abandon(self) -> None:
        """Give up a lost store: forget what is held (kept elsewhere), close without writing."""
        self._pending.clear()
        self._written = 0
        self._abandoned = True
        with suppress(Exception):  # it is lost: closing it may fail in any way
            self.sql.close()
        self.sql = LostBackend(str(self.path))  # a later use says so, never waits on it

    # ------------------------------------------------------------------ writing
    def _flush_events(self) -> None:
        self.sql.many("INSERT INTO events VALUES (?, ?, ?)", self._pending)
        self._written = len(self._pending)

    def _insert_run(self, record: RunRecord) -> None:
        """The run's row (its trials go in their own table), inside the caller's write."""
        self.sql.run(
            "INSERT INTO runs VALUES (?, ?, ?, ?, ?)",
            (
                record.id,
                record.started_at.isoformat(),
                record.profile.name,
                record.status,
                stored_json(record, exclude={"trials"}, keep=("profile",)),
            ),
        )

    def begin_run(self, record: RunRecord) -> list[str]:
        """Record a run as started by this process, committed at once.

        The process that starts writing is the one that tidies up: runs whose owners are
        gone are marked incomplete here.

        Returns:
            The ids of the runs just marked incomplete.
        """
        interrupted = self.mark_interrupted()
        with self._write():
            self._insert_run(record)
            self.sql.run("INSERT INTO owners VALUES (?, ?, ?, ?)", (record.id, *self.owner))
        return interrupted

    def add_trial(self, run_id: str, result: TrialResult) -> None:
        """Keep one finished trial and the events before it, durably, before the next starts."""
        with self._write():
            self._flush_events()
            row = self.sql.one("SELECT count(*) FROM trials WHERE run_id = ?", (run_id,))
            seq = int(row[0]) if row else 0
            self.sql.run("INSERT INTO trials VALUES (?, ?, ?)", (run_id, seq, stored_json(result)))

    def add_event(self, run_id: str, event: Event, *, commit: bool = False) -> None:
        """Append to the run's event stream.

        Events are held in memory and written with the next trial (an fsync per event
        stalls the app); `commit=True` writes them now.
        """
        seq = self._event_seq.get(run_id, 0)
        self._event_seq[run_id] = seq + 1
        self._pending.append((run_id, seq, stored_json(event)))
        if commit:
            with self._write():
                self._flush_events()

    def end_run(
        self,
        run_id: str,
        status: RunStatus,
        reason: str | None = None,
        *,
        environment: Environment | None = None,
    ) -> Judgement:
        """Mark the run finished, failed or cancelled (with the events still held), and keep
        its verdicts: the run is judged here, once, and the judgement returned for the front
        end to show (`explorer.lab.run.closing.close_run`).

        Args:
            environment: The run's environment as measured at its end (machine load), kept
                instead of the one stored at the start.
        """
        from explorer.analysis.judge import judge

        with self._write():
            self._flush_events()
            self._set_status(run_id, status, reason, environment)
        record = self.load(run_id)
        judged = judge(record)
        self.write_verdicts(record, judged)
        return judged

    def _set_status(
        self,
        run_id: str,
        status: RunStatus,
        reason: str | None,
        environment: Environment | None = None,
    ) -> None:
        record = self._stored_record(run_id)
        if environment is not None:
            record.environment = environment
        record.status = status
        record.reason = reason
        record.finished_at = dt.datetime.now(dt.UTC)
        self.sql.run(
            "UPDATE runs SET status = ?, record = ? WHERE id = ?",
            (status, stored_json(record, exclude={"trials"}, keep=("profile",)), run_id),
        )

    def import_run(self, record: RunRecord, events: Iterable[Event]) -> None:
        """Add a run made elsewhere (a recording), with its trials and events, in one go.

        It has no owner here: its status is what the recording says.
        """
        with self._write():
            self._insert_run(record)
            self.sql.many(
                "INSERT INTO trials VALUES (?, ?, ?)",
                [(record.id, n, stored_json(t)) for n, t in enumerate(record.trials)],
            )
            self.sql.many(
                "INSERT INTO events VALUES (?, ?, ?)",
                # one event at a time: a long recording's events are not all held at once
                ((record.id, n, stored_json(e)) for n, e in enumerate(events)),
            )
        self.write_verdicts(record)

    def write_verdicts(self, record: RunRecord, judged: Judgement | None = None) -> int:
        """Judge the run (with its trials; `judged` when the caller has) and keep its verdict
        rows, in one transaction (`explorer.lab.store.verdicts`); returns how many rows
        were written."""
        from explorer.lab.store import verdicts

        with self._write():
            return verdicts.write(self.sql, record, judged)

    def mark_interrupted(self) -> list[str]:
        """Runs left "running" by a pgwx that is gone: mark them incomplete, return their ids.

        A run whose owner is still alive (another pgwx, on this host or another) is left
        alone.
        """
        if not self._orphans():
            return []
        with self._write():
            # Asked again inside the transaction: another process may have just done it.
            ids = self._orphans()
            for run_id in ids:
                self._set_status(run_id, "incomplete", INTERRUPTED)
        for run_id in ids:
            self.write_verdicts(self.load(run_id))
        return ids

    # ------------------------------------------------------------------ reading
    def has_run(self, run_id: str) -> bool:
        """The store holds a run with exactly this id."""
        return self.sql.one("SELECT 1 FROM runs WHERE id = ?", (run_id,)) is not None

    def _owner(self, run_id: str) -> Owner | None:
        row = self.sql.one("SELECT host, pid, started FROM owners WHERE run_id = ?", (run_id,))
        return Owner(*row) if row else None

    def _orphans(self) -> list[str]:
        """Runs marked running whose owner process is gone (damaged rows are not touched)."""
        rows = self.sql.all("SELECT id, record FROM runs WHERE status = 'running'")
        return [
            str(run_id)
            for run_id, raw in rows
            if not isinstance(self._entry(run_id, raw), DamagedRun)
            and owner_gone(self._owner(run_id))
        ]

    def _entry(self, row_id: Any, raw: Any) -> RunRecord | DamagedRun:
        """A run row as its record, or as damaged: it must validate and carry its row's id."""
        try:
            record: RunRecord = _parse(_RECORD, raw)
        except ValueError as exc:
            return DamagedRun(printable(str(row_id)), str(exc))
        if record.id != row_id:
            # A control character in the row's id comes back escaped: not the row's run.
            return DamagedRun(printable(str(row_id)), "its record names another run id")
        return record

    def damaged_sentence(self, damaged: DamagedRun) -> str:
        """The one sentence for a damaged run row."""
        return (
            f"run {damaged.id} in {self.path} is damaged ({damaged.why}); pgwx leaves it "
            "as it is and reads the other runs"
        )

    def note(self, sentence: str) -> None:
        """Keep (once) and announce a sentence about a stored row that was skipped."""
        if sentence not in self.damage:
            self.damage.append(sentence)
            if ResultStore.on_damage is not None:
                ResultStore.on_damage(sentence)

    def _stored_record(self, run_id: str) -> RunRecord:
        row = self.sql.one("SELECT record FROM runs WHERE id = ?", (run_id,))
        if row is None:
            raise StoreError(
                f"No run {printable(run_id)!r} in {self.path}; `pgwx runs` lists them."
            )
        entry = self._entry(run_id, row[0])
        if isinstance(entry, DamagedRun):
            raise DamagedRecord(
                f"Run {entry.id} in {self.path} is damaged ({entry.why}); pgwx cannot show "
                "it, and leaves it as it is."
            )
        return entry

    def _as_seen(self, record: RunRecord) -> RunRecord:
        """A "running" run whose owner is gone reads as incomplete (nothing is written)."""
        if record.status == "running" and owner_gone(self._owner(record.id)):
            record.status, record.reason = "incomplete", INTERRUPTED
        return record

    def _record_row(self, run_id: str) -> RunRecord:
        return self._as_seen(self._stored_record(run_id))

    def resolve(self, ref: str) -> str:
        """A run id from 'latest' (the newest run, whatever it holds), a full id, or a prefix.

        What a person means by 'latest' is `choose()`: the latest run with results.
        """
        if ref == "latest":
            row = self.sql.one("SELECT id FROM runs ORDER BY started_at DESC, id DESC LIMIT 1")
            if row is None:
                raise StoreError("No runs yet; start one with `pgwx run PROFILE`.")
            return str(row[0])
        if self.has_run(ref):
            return ref  # an exact id wins over any longer id it is a prefix of
        # a plain prefix: % and _ in what was typed are characters, not LIKE's wildcards
        rows = self.sql.all("SELECT id FROM runs WHERE substr(id, 1, ?) = ?", (len(ref), ref))
        if len(rows) != 1:
            what = "No run" if not rows else f"{len(rows)} runs"
            raise StoreError(f"{what} matches {printable(ref)!r}; `pgwx runs` lists them.")
        return str(rows[0][0])

    def latest_with_results(self) -> str:
        """The newest run with at least one trial that finished ok, ended runs first.

        A run still going (in another terminal) is half a table: it is the latest only when
        no ended run has results.
        """
        rows = self.sql.all(
            "SELECT id, record FROM runs WHERE EXISTS (SELECT 1 FROM trials t WHERE t.run_id = "
            f"runs.id AND {self.sql.trial_status} = 'ok') "
            "ORDER BY status = 'running', started_at DESC, id DESC LIMIT 1000"
        )
        for run_id, raw in rows:
            entry = self._entry(run_id, raw)
            if isinstance(entry, DamagedRun):
                self.note(self.damaged_sentence(entry))
                continue
            return str(run_id)
        self.resolve("latest")  # no runs at all says so
        raise StoreError("No run has a finished trial yet; `pgwx runs` lists them by id.")

    def choose(self, ref: str) -> tuple[str, str | None]:
        """The run a person means: for 'latest', the latest run with results.

        Returns:
            The run id, and for 'latest' a sentence naming the run chosen (else None).
        """
        if ref != "latest":
            return self.resolve(ref), None
        run_id = self.latest_with_results()
        record = self._record_row(run_id)
        when = record.started_at.astimezone().strftime("%Y-%m-%d %H:%M")
        going = ", still running" if record.status == "running" else ""
        return run_id, f"latest run with results: {run_id} ({record.profile.name}, {when}{going})"

    def load(self, ref: str) -> RunRecord:
        """A run with all its trials."""
        run_id = self.resolve(ref)
        record = self._record_row(run_id)
        record.trials = []
        for seq, raw in self.sql.all(
            "SELECT seq, result FROM trials WHERE run_id = ? ORDER BY seq", (run_id,)
        ):
            try:
                record.trials.append(_parse(_TRIAL, raw))
            except ValueError as exc:
                self.note(
                    f"trial {seq} of run {printable(run_id)} in {self.path} is damaged "
                    f"({str(exc).replace('its record', 'its result')}); left out"
                )
        return record

    def group(self, record: RunRecord) -> list[RunRecord]:
        """The runs of the multi-server run `record` belongs to (itself alone if none), the
        reference first; a server whose run never began is left out."""
        if record.axis is None:
            return [record]
        out = []
        for run_id in record.axis.runs:
            if run_id == record.id:
                out.append(record)
            elif self.has_run(run_id):
                try:
                    out.append(self.load(run_id))
                except DamagedRecord as exc:
                    self.note(str(exc).rstrip("."))
        return out

    def list_entries(self, limit: int = 50) -> list[RunRecord | DamagedRun]:
        """Newest first, without trials; a row that does not validate as `DamagedRun`."""
        rows = self.sql.all(
            "SELECT id, record FROM runs ORDER BY started_at DESC, id DESC LIMIT ?", (limit,)
        )
        out: list[RunRecord | DamagedRun] = []
        for run_id, raw in rows:
            entry = self._entry(run_id, raw)
            out.append(entry if isinstance(entry, DamagedRun) else self._as_seen(entry))
        return out

    def list_runs(self, limit: int = 50) -> list[RunRecord]:
        """Newest first, without trials; damaged rows left out (and noted in `damage`)."""
        out = []
        for entry in self.list_entries(limit):
            if isinstance(entry, DamagedRun):
                self.note(self.damaged_sentence(entry))
            else:
                out.append(entry)
        return out

    def trial_counts(self, run_id: str) -> dict[str, int]:
        """Trials by status, for listings ("damaged" for rows that do not validate)."""
        counts: dict[str, int] = {}
        for (raw,) in self.sql.all("SELECT result FROM trials WHERE run_id = ?", (run_id,)):
            try:
                status = str(_parse(_TRIAL, raw).status)
            except ValueError:
                status = "damaged"
            counts[status] = counts.get(status, 0) + 1
        return counts

    def events(self, ref: str) -> Iterator[Event]:
        """The run's event stream as recorded, in order (for replay).

        Events this process still holds in memory come last, as they would once written.
        """
        run_id = self.resolve(ref)
        held = [raw for rid, _seq, raw in self._pending if rid == run_id]
        skipped = 0
        for (raw,) in self.sql.all(
            "SELECT event FROM events WHERE run_id = ? ORDER BY seq", (run_id,)
        ):
            try:
                yield _parse(_EVENT, raw)
            except ValueError:
                skipped += 1
        for raw in held:
            yield _EVENT.validate_json(raw)
        if skipped:
            self.note(
                f"{skipped} event(s) of run {printable(run_id)} in {self.path} are damaged "
                "(they do not validate); left out"
            )
