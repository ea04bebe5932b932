"""Pydantic models shared by every part of pgwx: knobs, profiles, events, results.

Nothing here talks to a server or a screen. The engine (`explorer.lab`) produces these,
the CLI, the TUI and replay consume them, and the results store persists them as JSON.
"""

from __future__ import annotations

import datetime as dt
import re
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    field_serializer,
    field_validator,
    model_validator,
)

from explorer.text import Text, printable_data

# --------------------------------------------------------------------------- any setting

NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")
"""A setting name as a profile may write it (custom `x.y` settings are not offered)."""

MAX_VALUE = 200
"""Characters of a setting's value a profile may give."""

MAX_SETTINGS = 20
"""Settings one variant may name."""

_REFUSED_SUFFIXES = (
    "_command",
    "_preload_libraries",
    "_file",
    "_directory",
    "_directories",
    "_library",
    "_path",
    "_provider",
    "_conninfo",
)
_REFUSED_PREFIXES = ("ssl", "unix_socket_", "krb_", "primary_", "recovery_")
_REFUSED_NAMES = {
    "data_directory": "it names a directory on the server",
    "log_filename": "it names a file on the server",
    "log_destination": "it decides where the server writes its log",
    "logging_collector": "it decides where the server writes its log",
    "log_line_prefix": "pgwx reads the server log by its line prefix",
    "event_source": "it names a program's log source",
    "listen_addresses": "pgwx would lose the server it reaches",
    "port": "pgwx would lose the server it reaches",
    "application_name": "pgwx finds its own sessions by it",
    "statement_timeout": "pgwx's guard that no workload outlives it",
    "client_connection_check_interval": "pgwx's guard that no workload outlives it",
    "allow_system_table_mods": "it lets SQL change the system catalogs",
    "allow_alter_system": "pgwx puts its changes back with ALTER SYSTEM",
    "session_authorization": "pgwx decides which role a workload runs as",
    "role": "pgwx decides which role a workload runs as",
    "search_path": "pgwx decides which schema a workload works in",
    "default_tablespace": "pgwx decides where a workload's tables go",
    "temp_tablespaces": "pgwx decides where a workload's tables go",
    "max_wal_senders": "pgwx sets it with wal_level = minimal",
    "archive_mode": "WAL would pile up on the server with no archiver to take it",
}
_KNOB_NAMES = (
    "synchronous_commit",
    "fsync",
    "full_page_writes",
    "wal_level",
    "temp_buffers",
    "shared_buffers",
    "track_io_timing",
    "io_method",
)
"""Settings with a knob of their own (explorer.models.SERVER_KNOBS): set there, not twice."""

RISKY_VALUES = {
    "fsync": "off",
    "full_page_writes": "off",
    "zero_damaged_pages": "on",
    "ignore_checksum_failure": "on",
    "ignore_invalid_pages": "on",
    "data_sync_retry": "on",
}
"""Settings whose listed value can corrupt or silently lose data (the consent rule applies)."""


def refused_setting(name: str) -> str | None:
    """Why pgwx never sets `name` from a profile, one sentence; None when it may."""
    if not NAME.fullmatch(name):
        return (
            f"{name[:64]!r} is not a setting name pgwx sets (lower-case letters, digits and "
            "underscores)"
        )
    if name in _KNOB_NAMES:
        return f"{name} is a knob of its own: write knobs = {{ {name} = … }} instead"
    why = _REFUSED_NAMES.get(name)
    if why is None and name.endswith(_REFUSED_SUFFIXES):
        why = "it names a program, a library, a file or a connection on the server"
    if why is None and name.startswith(_REFUSED_PREFIXES):
        why = "it names a program, a key, a file, a connection or a recovery target"
    if why is None:
        return None
    return f"pgwx never sets {name} from a profile: {why}"


def setting_value(value: object) -> str:
    """A TOML value as PostgreSQL spells it: true/false as on/off, numbers as written."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, int | float):
        return repr(value) if isinstance(value, float) else str(value)
    if isinstance(value, str):
        return value
    raise ValueError(f"a setting's value must be text, a number or true/false, not {value!r}")


# --------------------------------------------------------------------------- knobs


class TableKind(StrEnum):
    """How the workload's target table is created."""

    LOGGED = "logged"
    UNLOGGED = "unlogged"
    TEMPORARY = "temporary"


class FkTiming(StrEnum):
    """When (and whether) a foreign key on the target table is checked."""

    NONE = "none"
    IMMEDIATE = "immediate"
    DEFERRED = "deferred"
    AFTER_LOAD = "after-load"
    NOT_VALID = "not-valid"
    NOT_ENFORCED = "not-enforced"
    """FOREIGN KEY … NOT ENFORCED (PostgreSQL 18+): declared, never checked."""


class Toast(StrEnum):
    """How a wide text column is stored."""

    PGLZ = "pglz"
    LZ4 = "lz4"
    EXTERNAL = "external"


SyncCommit = Literal["on", "off", "local", "remote_write", "remote_apply"]
WalLevel = Literal["minimal", "replica", "logical"]
IoMethod = Literal["sync", "worker", "io_uring"]


class Knobs(BaseModel):
    """The settings that define one variant. `None` means "leave the server's value"."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    table_kind: TableKind = TableKind.LOGGED
    """Normal, UNLOGGED or TEMPORARY target table."""
    fk: FkTiming = FkTiming.NONE
    """Foreign-key timing on the child table (workloads that have one)."""
    toast: Toast = Toast.PGLZ
    """Compression or storage of the wide column (workloads that have one)."""
    load_in_create_txn: bool = False
    """TRUNCATE and load in one transaction, so wal_level=minimal can skip WAL."""
    pregrown: bool = False
    """Pre-grow the target file and empty it, so a load needs no relation extension."""
    synchronous_commit: SyncCommit | None = None
    """Server-level synchronous_commit (ALTER SYSTEM + reload)."""
    fsync: bool | None = None
    """Server-level fsync; risks data on crash, needs opt-in on a server pgwx does not own."""
    full_page_writes: bool | None = None
    """Server-level full_page_writes; risks data on crash, like fsync."""
    wal_level: WalLevel | None = None
    """Needs a restart: applied only on the bundled server."""
    temp_buffers: str | None = None
    """Per-session buffers for temporary tables, e.g. '8MB'."""
    shared_buffers: str | None = None
    """Needs a restart: applied only on the bundled server."""
    track_io_timing: bool | None = None
    """Lets pg_stat_io report read/write/extend/fsync times."""
    io_method: IoMethod | None = None
    """PostgreSQL 18's asynchronous I/O method; needs a restart, so only on a server pgwx
    owns; io_uring only where the build has it (--with-liburing)."""
    settings: dict[str, str] = Field(default={}, exclude_if=lambda v: not v)
    """Any other server setting by name (`wal_compression = "lz4"`), checked against the
    server's own pg_settings before a run; applied per workload session, by reload or by a
    restart of a server pgwx owns, as the setting's context asks."""

    @field_validator("settings", mode="before")
    @classmethod
    def _settings(cls, value: Any) -> dict[str, str]:
        if not isinstance(value, dict):
            raise ValueError("settings must be a table of name = value")
        if len(value) > MAX_SETTINGS:
            raise ValueError(f"a variant sets at most {MAX_SETTINGS} settings")
        out: dict[str, str] = {}
        for name, raw in value.items():
            why = refused_setting(str(name))
            if why is not None:
                raise ValueError(why)
            text = setting_value(raw)
            if len(text) > MAX_VALUE or not text.isprintable():
                raise ValueError(
                    f"{name}'s value must be printable text of at most {MAX_VALUE} characters"
                )
            out[str(name)] = text
        return out

    def __hash__(self) -> int:
        return hash(self.model_dump_json())

    def server_settings(self) -> dict[str, str]:
        """The GUCs this variant sets, as PostgreSQL spells their values."""
        out: dict[str, str] = {}
        for name in SERVER_KNOBS:
            value = getattr(self, name)
            if value is None:
                continue
            out[name] = ("on" if value else "off") if isinstance(value, bool) else str(value)
        if out.get("wal_level") == "minimal":
            # PostgreSQL refuses to start with wal_level=minimal and WAL senders allowed.
            out["max_wal_senders"] = "0"
        return out

    def describe(self) -> str:
        """A short human label of what differs from the defaults."""
        parts: list[str] = []
        for name, field in Knobs.model_fields.items():
            value = getattr(self, name)
            if value != field.default:
                if name == "settings":
                    parts.extend(f"{k}={v}" for k, v in value.items())
                else:
                    parts.append(f"{name}={value.value if isinstance(value, StrEnum) else value}")
        return ", ".join(parts) or "defaults"


SERVER_KNOBS = (
    "synchronous_commit",
    "fsync",
    "full_page_writes",
    "wal_level",
    "temp_buffers",
    "shared_buffers",
    "track_io_timing",
    "io_method",
)
"""Knobs that are server settings (GUCs) rather than DDL."""

RISKY_SETTINGS = {"fsync": "off", "full_page_writes": "off"}
"""Settings whose listed value can corrupt data on a crash."""


# --------------------------------------------------------------------------- profiles


class Variant(BaseModel):
    """One named cell of a profile's matrix."""

    model_config = ConfigDict(extra="forbid")

    name: Text = Field(min_length=1, max_length=40)
    """Label shown in tables; unique within the profile."""
    knobs: Knobs = Knobs()
    """The settings that make this variant."""

    @model_validator(mode="before")
    @classmethod
    def _settings_beside_knobs(cls, data: Any) -> Any:
        # `settings = { … }` may sit on the variant itself, beside (or instead of) `knobs`.
        if isinstance(data, dict) and "settings" in data:
            data = dict(data)
            settings = data.pop("settings")
            knobs = data.get("knobs", {})
            if isinstance(knobs, Knobs):
                knobs = knobs.model_dump()
            if isinstance(knobs, dict):
                if "settings" in knobs:
                    raise ValueError("settings are given twice: beside knobs and inside them")
                data["knobs"] = {**knobs, "settings": settings}
        return data


class Sweep(BaseModel):
    """One setting at several values: one variant per value, the first the baseline."""

    model_config = ConfigDict(extra="forbid")

    setting: str
    """The setting swept, e.g. max_wal_size (any setting a variant may name)."""
    values: list[str] = Field(min_length=2, max_length=12)
    """Its values in the order drawn, e.g. ["256MB", "1GB", "4GB", "16GB"]."""

    @field_validator("setting")
    @classmethod
    def _setting(cls, value: str) -> str:
        why = refused_setting(value)
        if why is not None:
            raise ValueError(why)
        return value

    @field_validator("values", mode="before")
    @classmethod
    def _values(cls, value: Any) -> list[str]:
        if not isinstance(value, list):
            raise ValueError('a sweep\'s values are a list, e.g. ["256MB", "1GB"]')
        out = [setting_value(v) for v in value]
        if len(set(out)) != len(out):
            raise ValueError("a sweep names each value once")
        for text in out:
            if len(text) > 30 or not text.isprintable():
                raise ValueError("each value of a sweep is printable text of at most 30 characters")
        return out

    def names(self) -> list[str]:
        """The variants' names: `max_wal_size=256MB`, …"""
        return [f"{self.setting}={v}"[:40] for v in self.values]


def parse_sweep(spec: str) -> Sweep:
    """`max_wal_size=256MB,1GB,4GB` (the command line's --sweep) as a Sweep; ValueError with
    one sentence otherwise."""
    name, sep, values = spec.partition("=")
    if not sep or not name.strip() or not values.strip():
        raise ValueError(
            f"--sweep {spec[:60]!r} is not NAME=VALUE,VALUE…; write e.g. "
            "--sweep max_wal_size=256MB,1GB,4GB,16GB"
        )
    if len(values.split(",")) < 2:
        raise ValueError(f"--sweep {spec[:60]!r}: a sweep needs at least two values")
    try:
        return Sweep(setting=name.strip(), values=[v.strip() for v in values.split(",")])
    except ValueError as exc:
        errors = getattr(exc, "errors", None)
        why = errors()[0]["msg"].removeprefix("Value error, ") if callable(errors) else str(exc)
        raise ValueError(f"--sweep {spec[:60]!r}: {why}") from None


_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}


def parse_budget(value: Any) -> float:
    """Seconds from 600, "600", "90s", "10m" or "1h"; ValueError (one sentence) otherwise."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
    else:
        text = str(value).strip().lower()
        number = text.rstrip("abcdefghijklmnopqrstuvwxyz").strip()
        unit = text[len(number) :].strip() if number else ""
        try:
            seconds = float(number) * _UNITS[unit]
        except (ValueError, KeyError):
            raise ValueError(
                f"the time budget {value!r} is not a duration; write e.g. 600, 90s, 10m or 1h"
            ) from None
    if not seconds > 0:
        raise ValueError(f"the time budget must be more than 0 seconds (got {value!r})")
    return seconds


def parse_threshold(value: Any) -> float:
    """A fraction from 0.05, "0.05" or "5%"; ValueError (one sentence) outside [0, 0.5)."""
    text = str(value).strip()
    try:
        fraction = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise ValueError(
            f"the noise threshold {value!r} is not a number; write e.g. 5% or 0.05"
        ) from None
    if not 0 <= fraction < 0.5:
        raise ValueError(
            f"the noise threshold must be at least 0 and below 50% (got {value!r}); "
            "write e.g. 5% or 0.05"
        )
    return fraction


class Profile(BaseModel):
    """One experiment: a workload, its parameters, and the variants to compare."""

    model_config = ConfigDict(extra="forbid")

    name: Text
    """Short id, the file name without `.toml`."""
    title: Text
    """One line for lists."""
    source: Text = ""
    """The article it reproduces (seed file name or URL)."""
    description: Text = ""
    """What the user should look for."""
    workload: str
    """Workload kind, a module in `explorer.lab.workloads`."""
    params: dict[str, Any] = {}
    """Workload parameters; sizes are multiplied by `--scale`."""
    repeats: Annotated[int, Field(ge=1, le=100)] | Literal["auto"] = 3
    """Measured trials of each variant, in balanced order (A B C, C B A, …); "auto" keeps
    adding rounds until every verdict is decided, between `min_repeats` and `max_repeats`
    and within `budget`."""
    min_repeats: int = Field(default=5, ge=1, le=100)
    """With repeats = "auto": measured rounds always run (a verdict needs 5 per side)."""
    max_repeats: int = Field(default=30, ge=1, le=1000)
    """With repeats = "auto": measured rounds at most, decided or not."""
    budget: float = 600.0
    """With repeats = "auto": seconds after which no round beyond `min_repeats` starts;
    the profile may say "10m", "90s", "1h" or a number of seconds."""
    warmup: int = Field(default=1, ge=0, le=10)
    """Rounds run first and kept in the store, but left out of the statistics."""
    threshold: float = 0.03
    """Relative change below which a difference counts as noise (0.03 or "3%")."""
    baseline: Text | None = None
    """Variant the ratios are taken against; the first one when unset."""
    settle_seconds: float = Field(default=1.0, ge=0, le=60)
    """Pause after CHECKPOINT before each trial."""
    variants: list[Variant] = Field(min_length=1, max_length=100)
    """The matrix."""
    sweep: Sweep | None = Field(default=None, exclude_if=lambda v: v is None)
    """One setting at several values: the variants become one per value (each on the
    baseline variant's knobs), the first value the baseline; the report draws them as a curve."""

    @model_validator(mode="before")
    @classmethod
    def _sweep_needs_no_variants(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("sweep") is not None and not data.get("variants"):
            data = {**data, "variants": [{"name": "base"}]}
        return data

    @field_validator("budget", mode="before")
    @classmethod
    def _budget(cls, value: Any) -> float:
        return parse_budget(value)

    @field_validator("threshold", mode="before")
    @classmethod
    def _threshold(cls, value: Any) -> float:
        return parse_threshold(value)

    @model_validator(mode="after")
    def _expand_sweep(self) -> Profile:
        if self.sweep is None:
            return self
        sweep, names = self.sweep, self.sweep.names()
        if len(set(names)) != len(names):
            raise ValueError("a sweep's values must differ within their first 40 characters")
        by_name = {v.name: v for v in self.variants}
        # Expanded already (a stored run read back): the first value is the base's.
        base = by_name.get(self.baseline or "", self.variants[0])
        knobs = base.knobs
        self.variants = [
            Variant(
                name=name,
                knobs=knobs.model_copy(update={"settings": {**knobs.settings, sweep.setting: v}}),
            )
            for name, v in zip(names, sweep.values, strict=True)
        ]
        self.baseline = names[0]
        return self

    @model_validator(mode="after")
    def _repeat_bounds(self) -> Profile:
        if self.min_repeats > self.max_repeats:
            raise ValueError(
                f"min_repeats ({self.min_repeats}) is larger than max_repeats ({self.max_repeats})"
            )
        return self

    def baseline_name(self) -> str:
        """The variant that ratios are relative to."""
        return self.baseline or self.variants[0].name


# --------------------------------------------------------------------------- server


class GucInfo(BaseModel):
    """What pg_settings says about one setting."""

    name: Text
    setting: Text
    unit: Text | None = None
    context: Text
    """user / superuser / sighup / postmaster / ..."""
    source: str | None = None
    vartype: str | None = Field(default=None, exclude_if=lambda v: v is None)
    """bool / enum / integer / real / string (None in runs stored before pgwx read it)."""
    min_val: str | None = Field(default=None, exclude_if=lambda v: v is None)
    """Least value, in `unit`."""
    max_val: str | None = Field(default=None, exclude_if=lambda v: v is None)
    """Greatest value, in `unit`."""
    enumvals: list[str] | None = Field(default=None, exclude_if=lambda v: v is None)
    """An enum's values as this build offers them (lz4 only when built --with-lz4)."""


class Capabilities(BaseModel):
    """What the connected server can do, probed once per connection."""

    version_num: int
    """server_version_num, e.g. 180006."""
    version: Text
    """Human version, e.g. '18.6'."""
    lz4: bool
    """Built --with-lz4."""
    pg_stat_io: Literal["none", "op_bytes", "split_bytes"]
    """Absent (≤15), 16–17 shape with op_bytes, or 18 shape with read/write/extend_bytes."""
    pg_stat_checkpointer: bool
    """17+: checkpoint counters moved out of pg_stat_bgwriter."""
    superuser: bool
    pg_monitor: bool
    """Member of pg_monitor (or superuser): can see other sessions' statistics."""
    alter_system: bool
    """Can run ALTER SYSTEM (superuser, or granted on 15+)."""
    owned: bool
    """pgwx started this server and may restart it."""
    system_identifier: str
    """From pg_control_system(); keys the undo journal."""
    gucs: dict[str, GucInfo] = {}
    """The settings pgwx may touch."""
    io_methods: list[str] = []
    """The io_method values this server's build accepts (empty before 18)."""
    setting_names: list[str] = Field(default=[], exclude=True)
    """Every setting name of the server (the app's "other settings" row offers the nearest
    to a typo); not stored with a run."""

    @property
    def major(self) -> int:
        """Major version, e.g. 18."""
        return self.version_num // 10000


class ServerInfo(BaseModel):
    """How a run's server was reached, safe to show and to store."""

    dsn_masked: Text
    """Connection string with any password replaced by ***."""
    bundled: bool
    capabilities: Capabilities
    off_defaults: list[Text] = []
    """Risky settings off their defaults when the run began, not set by pgwx (described)."""


# --------------------------------------------------------------------------- results


class WriterIo(BaseModel):
    """What one kind of writer did to relation files during a phase (pg_stat_io deltas)."""

    written: int = 0
    """Buffers (8 kB pages) written out to relation files."""
    extended: int = 0
    """Pages added to relation files by extension."""
    fsyncs: int = 0
    """fsync calls; on PG 18 this includes WAL syncs (pg_stat_io object 'wal'), on 16-17 it
    counts relation files only."""
    evicted: int | None = Field(default=None, exclude_if=lambda v: v is None)
    """Shared buffers this writer evicted to make room (pg_stat_io `evictions`, relation
    objects): the direct sign of shared_buffers pressure. None where not measured (runs
    stored before pgwx read it), never 0."""


WRITERS = ("workload", "checkpointer", "bgwriter", "other")
"""Who did the I/O: pgwx's workload (client backends and their parallel workers, including
pg_restore and pgbench sessions), the checkpointer, the background writer, everything else."""


WorkSource = Literal["sessions", "types", "types: a session came or went"]
"""Where a phase's work columns come from: "sessions" the workload sessions' own statistics
(PostgreSQL 18+: pg_stat_get_backend_io / pg_stat_get_backend_wal, read while each session
lives); "types" pg_stat_io summed per backend type — every client backend, an unrelated
session's I/O included (PostgreSQL 15–17, whose WAL column is the server's); the third, 18+ when
a workload session ended or another connected during the phase, so its own counts could not be
read whole."""


class PhaseMechanism(BaseModel):
    """What the server did during one phase, measured between readings at its two edges.

    A value pgwx could not measure is None (shown as `?`), never 0.
    """

    model_config = ConfigDict(extra="allow")

    samples: int = 0
    """Sampler readings inside the phase."""
    wal_bytes: int | None = None
    """WAL inserted during the phase (insert LSN at the phase's edges)."""
    wal_fpi: int | None = None
    """Full-page images written into WAL (pg_stat_wal; None where the view is missing)."""
    wal_fpi_bytes: int | None = Field(default=None, exclude_if=lambda v: v is None)
    """Bytes of those images (19+: pg_stat_wal.wal_fpi_bytes); None before 19 (unknown)."""
    wal_records: int | None = None
    """WAL records (pg_stat_wal)."""
    writers: dict[str, WriterIo] | None = None
    """WRITERS name → its relation I/O; None where the server has no pg_stat_io (≤15)."""
    checkpoints: int | None = None
    """Checkpoints that completed during the phase."""
    work_source: WorkSource | None = Field(default=None, exclude_if=lambda v: v is None)
    """Where `writers["workload"]` and the work WAL come from; None in runs stored before pgwx
    said (per-type sums) or when the phase was not measured."""
    work_wal_bytes: int | None = Field(default=None, exclude_if=lambda v: v is None)
    """WAL the workload's own sessions generated (work_source "sessions" only; None else)."""
    work_wal_fpi: int | None = Field(default=None, exclude_if=lambda v: v is None)
    """Full-page images the workload's own sessions wrote (work_source "sessions" only)."""
    work_wal_records: int | None = Field(default=None, exclude_if=lambda v: v is None)
    """WAL records of the workload's own sessions (work_source "sessions" only)."""
    waits: dict[str, int] | None = None
    """'Type:Event' (or 'CPU') → observations of the workload's active backends, most first;
    None when nothing sampled the phase."""
    wait_samples: int = 0
    """Observations behind `waits` (the denominator of each share)."""
    late_in: Text | None = None
    """Set when one transaction spanned this phase and `late_in` (pg_restore's load and
    COMMIT): the counters a backend publishes only at its transaction's end (FPI, the
    workload's pg_stat_io) are all on `late_in`'s row, so they are absent here, not 0."""
    unknown: list[str] = []
    """Why parts are missing, one line each (e.g. "pg_stat_io: not on PG 15")."""

    def writer_sum(self, what: Literal["written", "extended", "fsyncs", "evicted"]) -> int | None:
        """`what` summed over every writer; None where pg_stat_io is missing or a writer's
        share was not measured."""
        if self.writers is None:
            return None
        parts = [getattr(w, what) for w in self.writers.values()]
        return None if any(v is None for v in parts) else sum(parts)

    def wal_per_row(self, rows: int | None) -> float | None:
        """WAL bytes per row written, None when either is unknown or no rows."""
        if self.wal_bytes is None or not rows:
            return None
        return self.wal_bytes / rows

    def wait_shares(self) -> list[tuple[str, float]]:
        """(wait, share of the observations), most first; empty when none were seen."""
        if not self.waits or not self.wait_samples:
            return []
        return [(k, v / self.wait_samples) for k, v in self.waits.items()]


class PhaseResult(BaseModel):
    """One timed phase of one trial."""

    name: Text
    seconds: float
    """Monotonic wall time of the phase."""
    rows: int | None = None
    """Rows the phase wrote or read, when known."""
    detail: dict[str, Any] = {}
    """Extra facts: plan, workers launched, sizes, compression counts, WAL bytes…"""
    mechanism: PhaseMechanism | None = Field(default=None, exclude_if=lambda v: v is None)
    """What the server did meanwhile (WAL, writers, checkpoints, waits); None in runs stored
    before pgwx measured it per phase, or when the sampler was off (then left out of the
    JSON, so an older run re-saves unchanged)."""

    @field_validator("detail", mode="after")
    @classmethod
    def _printable_detail(cls, value: dict[str, Any]) -> dict[str, Any]:
        # Notes come from the user's verify query and the server: text, like the names.
        result: dict[str, Any] = printable_data(value)
        return result


TrialStatus = Literal["ok", "failed", "cancelled", "skipped"]

BLOCK_SIZE = 8192
"""PostgreSQL's default page size, to turn extend bytes into pages."""

Number = int | float


class TrialStats(BaseModel):
    """What the statistics sampler summed over one trial's window.

    Stored runs hold this as a plain JSON object; unknown keys are kept, so a run written by
    a newer pgwx still loads and re-serialises unchanged.
    """

    model_config = ConfigDict(extra="allow")

    seconds: float = 0.0
    """Seconds covered by the samples counted (each wholly inside the window)."""
    samples: int = 0
    """Samples counted."""
    wal_bytes: int = 0
    """WAL inserted, from the insert LSN (live mid-statement)."""
    # pg_stat_wal's view of the same window: published only when backends go idle.
    wal_records: int | None = None
    """pg_stat_wal records; None where the server lacks the view."""
    wal_fpi: int | None = None
    """pg_stat_wal full-page images; None where the server lacks the view."""
    wal_fpi_bytes: int | None = Field(default=None, exclude_if=lambda v: v is None)
    """Bytes of those images (19+: pg_stat_wal.wal_fpi_bytes); None before 19 (unknown)."""
    wal_buffers_full: int | None = None
    """pg_stat_wal buffers_full; None where the server lacks the view."""
    io: dict[str, Number] = {}
    """pg_stat_io column (reads, extends, extend_bytes, fsyncs…) → sum over every row."""
    io_by_backend: dict[str, dict[str, Number]] = {}
    """backend_type → the same sums for that backend type."""
    io_rows: list[dict[str, Any]] = []
    """Per backend_type/object/context sums, as the sampler's IoDelta dumps."""
    checkpoints: int = 0
    """Checkpoints completed inside the window."""
    buffers_written: int = 0
    """Buffers the checkpointer wrote inside the window."""
    waits: dict[str, int] = {}
    """'Type:Event' (or 'CPU') → observations of active workload backends, most first."""
    top_wait: Text | None = None
    """The most observed wait, or None when no backend was seen active."""
    wait_samples: int = 0
    """Observations of active workload backends."""
    wait_polls: int = 0
    """Wait-event polls, to turn observations into shares."""
    relation_bytes: dict[str, int] = {}
    """Last pg_table_size() of each relation the trial watched."""
    unsupported: list[str] = []
    """Signals this server lacks, e.g. "pg_stat_io: not on PG 15"."""

    @property
    def extended_pages(self) -> Number | None:
        """Pages added by relation extension, not pg_stat_io's extend operations.

        PostgreSQL 18 extends many pages in one operation and counts bytes; older servers
        count one page per extend. None where pg_stat_io is missing.
        """
        if self.io.get("extend_bytes"):
            return self.io["extend_bytes"] // BLOCK_SIZE
        return self.io.get("extends")

    @property
    def fsyncs(self) -> Number | None:
        """fsync calls seen by pg_stat_io, None where it is missing."""
        return self.io.get("fsyncs")


class TrialResult(BaseModel):
    """One variant × repeat."""

    run_id: Text
    variant: Text
    repeat: int
    """1-based."""
    status: TrialStatus
    reason: Text | None = None
    """Why it failed or was skipped."""
    started_at: dt.datetime
    phases: list[PhaseResult] = []
    settings: dict[Text, Text] = {}
    """The server settings in force during the trial (read back, not assumed)."""
    stats: TrialStats | None = None
    """Summary of what the sampler saw (WAL bytes, extends, top wait…); None without one."""
    warmup: bool = False
    """A warm-up trial: kept in the store and shown, but left out of the statistics."""

    @field_validator("stats", mode="before")
    @classmethod
    def _no_stats(cls, value: Any) -> Any:
        # Stored runs write a trial without a sampler summary as {}.
        return value or None

    @field_serializer("stats")
    def _dump_stats(self, value: TrialStats | None) -> dict[str, Any]:
        return value.model_dump() if value is not None else {}


class CpuLoad(BaseModel):
    """The machine's CPU during a run, from /proc/stat deltas (Linux, same machine only)."""

    seconds: float
    """Wall seconds the deltas cover."""
    busy: float
    """Share of all CPU time spent working (user, system, irq…), 0–1."""
    steal: float
    """Share stolen by the hypervisor for other guests, 0–1."""
    iowait: float
    """Share idle while waiting for I/O, 0–1."""
    steal_max: float | None = None
    """Highest steal share between two consecutive trials, 0–1."""
    loadavg_start: float | None = None
    """1-minute load average when the run started."""
    loadavg_end: float | None = None
    """1-minute load average when the run ended."""
    loadavg_max: float | None = None
    """Highest 1-minute load average seen during the run."""


class Environment(BaseModel):
    """Where and with what a run ran: enough to compare two runs fairly."""

    model_config = ConfigDict(extra="allow")

    pgwx_version: str
    """pgwx's package version."""
    server_version: str
    """PostgreSQL's version string (SHOW server_version)."""
    server_programs: str | None = None
    """The installed PostgreSQL whose cluster pgwx owned for the run: its `postgres --version`
    and program directory; None on a server pgwx does not own (or a run stored before)."""
    data_checksums: bool | None = None
    """Whether the cluster has data checksums (each write computes one)."""
    io_method: str | None = None
    """PG 18's asynchronous I/O method (sync / worker / io_uring); None before 18."""
    settings: dict[Text, Text] = {}
    """Settings in force when the run started (name → value with its unit)."""
    cpu_count: int | None = None
    """CPUs of the machine pgwx ran on."""
    cpu_model: Text | None = None
    """CPU model name from /proc/cpuinfo."""
    same_machine: bool = False
    """The server runs on this machine (bundled, unix socket or localhost), so the CPU load
    below is the server's too."""
    cpu: CpuLoad | None = None
    """CPU steal and load during the run; None when not on the same machine or not Linux."""
    warnings: list[Text] = []
    """One line each when the machine was busy enough to matter."""
    os: Text | None = None
    """The operating system pgwx ran on ('Debian GNU/Linux 12 (bookworm)'); None before
    pgwx kept it."""
    kernel: Text | None = None
    """The kernel release."""
    memory_bytes: int | None = None
    """Total memory of the machine pgwx ran on."""
    machine_model: Text | None = None
    """The machine's maker and model as its firmware says (DMI), e.g. 'Amazon EC2 m5.large'."""
    instance_type: Text | None = None
    """A cloud instance type where the machine says it locally (EC2); None elsewhere."""
    data_fs: Text | None = None
    """The filesystem type under the server's data directory (same machine, readable only)."""
    data_device: Text | None = None
    """The device (mount source) under the server's data directory."""
    data_mount: Text | None = None
    """The mount point the data directory lives on."""


RunStatus = Literal["running", "finished", "failed", "cancelled", "incomplete"]


class ServerAxis(BaseModel):
    """This run's place among the runs of one `pgwx run` on several servers (`--pg 15 --pg 18`).

    Each server's trials are a run of their own (its own undo journal, recovery and scope);
    the runs share `group`, took turns trial by trial, and are judged against the first.
    """

    group: Text
    """The id shared by the runs of one multi-server run (the first run's id)."""
    label: Text
    """How verdicts name this server: '15', '18', or '18 #2' when two are the same major."""
    position: int
    """0 for the reference server (the first named), 1, 2 … for the others."""
    runs: list[Text]
    """Every server's run id, in position order (the reference's first): the group."""
    labels: list[Text] = []
    """Every server's label, in the same order."""


class RunRecord(BaseModel):
    """One `pgwx run`: a profile's whole matrix."""

    id: Text
    profile: Profile
    scale: float = 1.0
    server: ServerInfo
    started_at: dt.datetime
    finished_at: dt.datetime | None = None
    status: RunStatus = "running"
    reason: Text | None = None
    trials: list[TrialResult] = []
    environment: Environment | None = Field(default=None, exclude_if=lambda v: v is None)
    """Versions, settings, CPU and machine load; None in runs stored before pgwx kept it."""
    axis: ServerAxis | None = Field(default=None, exclude_if=lambda v: v is None)
    """Set when this run is one server's share of a run on several servers."""
    label: Text | None = Field(default=None, max_length=200, exclude_if=lambda v: v is None)
    """A free label given with `--label` ("kernel 6.8", "after the SSD swap")."""
    ref: Text | None = Field(default=None, max_length=200, exclude_if=lambda v: v is None)
    """A git ref or version given with `--ref` (what changed, for a team's history)."""


# --------------------------------------------------------------------------- events


class _Event(BaseModel):
    at: float = 0.0
    """Seconds since the run started (monotonic)."""


class RunStarted(_Event):
    kind: Literal["run-started"] = "run-started"
    run_id: Text
    profile: Text
    server: ServerInfo
    total_trials: int
    upto: bool = False
    """`total_trials` is the most the run may take (repeats = "auto": it may stop sooner);
    False: the run takes that many (recordings made before it was said are read so)."""


class Notice(_Event):
    """Something a person should read: a knob applied, a server restarted, a warning."""

    kind: Literal["notice"] = "notice"
    level: Literal["info", "warning", "error"] = "info"
    message: Text


class TrialStarted(_Event):
    kind: Literal["trial-started"] = "trial-started"
    variant: Text
    repeat: int
    index: int
    """1-based position in the matrix."""
    total: int
    """Trials the run plans, the same from its start (see `RunStarted.total_trials`)."""
    upto: bool = False
    """`total` is the most the run may take (see `RunStarted.upto`)."""
    plan: str | None = None
    """Where the run stands, e.g. "round 7 of ≤ 30 · ~3 min left · 3 comparisons open"."""


class PhaseStarted(_Event):
    kind: Literal["phase-started"] = "phase-started"
    variant: Text
    repeat: int
    phase: Text
    expected_rows: int | None = None


class PhaseEnded(_Event):
    kind: Literal["phase-ended"] = "phase-ended"
    variant: Text
    repeat: int
    result: PhaseResult


class SampleTaken(_Event):
    """One sampler reading, as a loose dict so replay survives model changes."""

    kind: Literal["sample"] = "sample"
    sample: dict[str, Any]


class TrialEnded(_Event):
    kind: Literal["trial-ended"] = "trial-ended"
    result: TrialResult


class RunEnded(_Event):
    kind: Literal["run-ended"] = "run-ended"
    run_id: Text
    status: RunStatus
    reason: Text | None = None


Event = Annotated[
    RunStarted
    | Notice
    | TrialStarted
    | PhaseStarted
    | PhaseEnded
    | SampleTaken
    | TrialEnded
    | RunEnded,
    Field(discriminator="kind"),
]
"""Everything the runner emits; the TUI, the CLI and replay consume the same stream."""
