"""The durable store of runs, trials and events (SQLite, standard library).

Every finished trial is committed before the next one starts; the whole event stream is
kept so `pgwx replay` can play a run back without a server. A run still marked "running"
when pgwx starts again was interrupted and is reported as incomplete.
"""

from __future__ import annotations

import datetime as dt
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from pydantic import TypeAdapter

from explorer.errors import PgwxError
from explorer.models import Event, RunRecord, RunStatus, TrialResult
from explorer.paths import data_home

_EVENT: TypeAdapter[Event] = TypeAdapter(Event)

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY, started_at TEXT NOT NULL, profile TEXT NOT NULL,
    status TEXT NOT NULL, record TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS trials (
    run_id TEXT NOT NULL REFERENCES runs(id), seq INTEGER NOT NULL, result TEXT NOT NULL,
    PRIMARY KEY (run_id, seq));
CREATE TABLE IF NOT EXISTS events (
    run_id TEXT NOT NULL REFERENCES runs(id), seq INTEGER NOT NULL, event TEXT NOT NULL,
    PRIMARY KEY (run_id, seq));
"""


class StoreError(PgwxError, RuntimeError):
    """The store cannot be read or written; str() is one sentence."""


def default_store_path() -> Path:
    """$PGWX_RESULTS, else ~/.local/share/pgwx/results.sqlite."""
    if os.environ.get("PGWX_RESULTS"):
        return Path(os.environ["PGWX_RESULTS"])
    return data_home() / "results.sqlite"


def new_run_id(now: dt.datetime | None = None) -> str:
    """Sortable, readable id: 20261122-030405-ab12."""
    now = now or dt.datetime.now()
    return now.strftime("%Y%m%d-%H%M%S-") + os.urandom(2).hex()


class ResultStore:
    """Runs on disk. Cheap to open; one per process."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or default_store_path()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(self.path)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=FULL")
            self.db.executescript(SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(
                f"Cannot open the results store {self.path} ({exc}); set "
                "PGWX_RESULTS to a writable file."
            ) from None
        self._event_seq: dict[str, int] = {}

    def close(self) -> None:
        """Commit anything pending and close."""
        self.db.commit()
        self.db.close()

    # ------------------------------------------------------------------ writing
    def begin_run(self, record: RunRecord) -> None:
        """Record a run as started, committed at once."""
        self.db.execute(
            "INSERT INTO runs VALUES (?, ?, ?, ?, ?)",
            (
                record.id,
                record.started_at.isoformat(),
                record.profile.name,
                record.status,
                record.model_dump_json(exclude={"trials"}),
            ),
        )
        self.db.commit()

    def add_trial(self, run_id: str, result: TrialResult) -> None:
        """Keep one finished trial, durably, before the next starts."""
        seq = self.db.execute("SELECT count(*) FROM trials WHERE run_id = ?", (run_id,)).fetchone()[
            0
        ]
        self.db.execute(
            "INSERT INTO trials VALUES (?, ?, ?)", (run_id, seq, result.model_dump_json())
        )
        self.db.commit()

    def add_event(self, run_id: str, event: Event, *, commit: bool = False) -> None:
        """Append to the run's event stream (samples are committed with the next trial)."""
        seq = self._event_seq.get(run_id, 0)
        self._event_seq[run_id] = seq + 1
        self.db.execute(
            "INSERT INTO events VALUES (?, ?, ?)", (run_id, seq, event.model_dump_json())
        )
        if commit:
            self.db.commit()

    def end_run(self, run_id: str, status: RunStatus, reason: str | None = None) -> None:
        """Mark the run finished, failed or cancelled."""
        record = self._record_row(run_id)
        record.status = status
        record.reason = reason
        record.finished_at = dt.datetime.now(dt.UTC)
        self.db.execute(
            "UPDATE runs SET status = ?, record = ? WHERE id = ?",
            (status, record.model_dump_json(exclude={"trials"}), run_id),
        )
        self.db.commit()

    def mark_interrupted(self) -> list[str]:
        """Runs left "running" by a pgwx that died: mark them incomplete, return their ids."""
        ids = [r[0] for r in self.db.execute("SELECT id FROM runs WHERE status = 'running'")]
        for run_id in ids:
            self.end_run(run_id, "incomplete", "pgwx stopped before the run ended")
        return ids

    # ------------------------------------------------------------------ reading
    def _record_row(self, run_id: str) -> RunRecord:
        row = self.db.execute("SELECT record FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            raise StoreError(f"No run {run_id!r} in {self.path}; `pgwx runs` lists them.")
        return RunRecord.model_validate_json(row[0])

    def resolve(self, ref: str) -> str:
        """A run id from 'latest', a full id, or a unique prefix."""
        if ref == "latest":
            row = self.db.execute(
                "SELECT id FROM runs ORDER BY started_at DESC, id DESC LIMIT 1"
            ).fetchone()
            if row is None:
                raise StoreError("No runs yet; start one with `pgwx run PROFILE`.")
            return str(row[0])
        rows = self.db.execute("SELECT id FROM runs WHERE id LIKE ? || '%'", (ref,)).fetchall()
        if len(rows) != 1:
            what = "No run" if not rows else f"{len(rows)} runs"
            raise StoreError(f"{what} matches {ref!r}; `pgwx runs` lists them.")
        return str(rows[0][0])

    def load(self, ref: str) -> RunRecord:
        """A run with all its trials."""
        run_id = self.resolve(ref)
        record = self._record_row(run_id)
        record.trials = [
            TrialResult.model_validate_json(r[0])
            for r in self.db.execute(
                "SELECT result FROM trials WHERE run_id = ? ORDER BY seq", (run_id,)
            )
        ]
        return record

    def list_runs(self, limit: int = 50) -> list[RunRecord]:
        """Newest first, without trials."""
        rows = self.db.execute(
            "SELECT record FROM runs ORDER BY started_at DESC, id DESC LIMIT ?", (limit,)
        )
        return [RunRecord.model_validate_json(r[0]) for r in rows]

    def trial_counts(self, run_id: str) -> dict[str, int]:
        """Trials by status, for listings."""
        counts: dict[str, int] = {}
        for (raw,) in self.db.execute("SELECT result FROM trials WHERE run_id = ?", (run_id,)):
            status = TrialResult.model_validate_json(raw).status
            counts[status] = counts.get(status, 0) + 1
        return counts

    def events(self, ref: str) -> Iterator[Event]:
        """The run's event stream as recorded, in order (for replay)."""
        run_id = self.resolve(ref)
        for (raw,) in self.db.execute(
            "SELECT event FROM events WHERE run_id = ? ORDER BY seq", (run_id,)
        ):
            yield _EVENT.validate_json(raw)
