"""The `sql` workload's profile format: the user's tables, data, timed phases and check query.

Everything here is plain validation; nothing talks to a server. Names in the SQL are written
`{table}` and `{size}`: pgwx replaces them with the table's qualified name for the variant
(`pgwx_lab.orders`, or `pg_temp.orders` for a TEMPORARY one) and the scaled size. Braces
around anything else (a jsonb path such as `'{status}'`) are left as they are.
"""

from __future__ import annotations

import math
import re
from typing import Annotated, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from explorer.lab.workloads import sqllex
from explorer.lab.workloads.base import Params

Identifier = Annotated[str, Field(pattern=r"^[a-z_][a-z0-9_]{0,50}$")]
"""A lower-case SQL name that needs no quoting."""

PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
REFERENCE = re.compile(r"^\s*([a-z_][a-z0-9_]*)\s*\(([^()]+)\)\s*$")
SOURCE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_$]*\.[A-Za-z_][A-Za-z0-9_$]*$")
PGBENCH_META = re.compile(r"\\+([A-Za-z_]+)")
"""A backslash command anywhere, after any number of backslashes (pgbench sees one mid-line
too); inside a string it is a false alarm on the safe side, as telling strings apart here
could be fooled (E'\\'' …)."""
PGBENCH_HARMLESS = (
    "set",
    "sleep",
    "if",
    "elif",
    "else",
    "endif",
    "gset",
    "aset",
    "startpipeline",
    "endpipeline",
    "syncpipeline",
)
"""pgbench meta-commands a profile may use: none runs a program (\\shell and \\setshell do)."""


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class ForeignKeySpec(_Spec):
    """A foreign key of a declared table onto another declared table."""

    columns: str = Field(min_length=1)
    """The referencing column(s), e.g. "customer_id"."""
    references: str
    """A declared table and its key, e.g. "customers (id)"; declared before this table."""
    follows_knob: bool = True
    """Timing follows the variant's `fk` knob; false keeps it an ordinary immediate FK."""
    add_after: str | None = None
    """For fk = after-load / not-valid: the phase after which the FK is added (default: last)."""

    @model_validator(mode="after")
    def _reference_shape(self) -> ForeignKeySpec:
        if not REFERENCE.match(self.references):
            raise ValueError('references must be a declared table and its key, like "parent (id)"')
        return self

    @property
    def ref_table(self) -> str:
        """The referenced table's (unqualified) name."""
        match = REFERENCE.match(self.references)
        assert match is not None
        return match.group(1)

    @property
    def ref_columns(self) -> str:
        """The referenced key column(s)."""
        match = REFERENCE.match(self.references)
        assert match is not None
        return match.group(2).strip()


class TableSpec(_Spec):
    """One table pgwx creates in its own schema for every trial, and drops after it."""

    name: Identifier
    """The table's name; write `{name}` in SQL to refer to it."""
    columns: str = Field(min_length=1)
    """Column and constraint definitions, as between the parentheses of CREATE TABLE."""
    with_: str = Field(default="", alias="with")
    """Storage parameters, e.g. "fillfactor = 90, autovacuum_enabled = off"."""
    indexes: list[str] = []
    """Index definitions created before the load, e.g. "(customer_id)" or "USING gin (doc)"."""
    table_kind: bool = True
    """Created logged / UNLOGGED / TEMPORARY as the variant's `table_kind` says; false: logged."""
    toast: list[Identifier] = []
    """Columns whose compression / storage follow the variant's `toast` knob."""
    foreign_keys: list[ForeignKeySpec] = []
    """Foreign keys onto other declared tables."""


class PrepareSpec(_Spec):
    """Untimed, once per run: the data that `copy` phases load. Exactly one of sql/file/source."""

    sql: str | None = None
    """A query whose rows become the data (e.g. from generate_series); `{sizes}` allowed."""
    file: str | None = None
    """A file to COPY from (relative to the profile's directory)."""
    format: Literal["text", "csv"] = "text"
    """Format of `file`."""
    header: bool = False
    """`file` (csv) starts with a header line."""
    source: str | None = None
    """One of your tables, "schema.table", read (never written) within `limit` rows."""
    columns: str = "*"
    """Columns taken from `source`, in the order the target table expects."""
    order_by: str | None = None
    """Ordering of the rows taken from `source` (so the same rows every time)."""
    limit: int | None = Field(default=None, ge=1)
    """Rows taken from `source` at most; required with `source`, grows with --scale."""

    @model_validator(mode="after")
    def _one_kind(self) -> PrepareSpec:
        given = [k for k in ("sql", "file", "source") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of sql, file or source")
        if self.source is not None:
            if not SOURCE_NAME.match(self.source):
                raise ValueError('source must be a schema-qualified table, like "public.orders"')
            if self.source.split(".")[0].startswith(("pgwx_lab", "pg_temp")):
                raise ValueError("source must be one of your tables, not one of pgwx's")
            if is_system_schema(self.source.split(".")[0]):
                raise ValueError("source must be one of your tables, not a system catalog")
            if self.limit is None:
                raise ValueError("source needs a row limit (limit = ...)")
        return self

    @property
    def kind(self) -> str:
        """sql, file or source."""
        return "sql" if self.sql is not None else "file" if self.file is not None else "source"


class PhaseSpec(_Spec):
    """One timed phase. Exactly one of sql / copy / pgbench."""

    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]{1,30}$")]
    """Phase label in the table."""
    sql: str | None = None
    """A script of one or more statements, run in the workload's session."""
    copy_: Identifier | None = Field(default=None, alias="copy")
    """A declared table to COPY the prepared data into (`copy = "t"`)."""
    pgbench: str | None = None
    """A pgbench script, run by pgbench in sessions of its own."""
    clients: int = Field(default=1, ge=1, le=256)
    """pgbench clients."""
    duration: float | None = Field(default=None, gt=0, le=3600)
    """pgbench: seconds to run (-T)."""
    transactions: int | None = Field(default=None, ge=1)
    """pgbench: transactions per client (-t); grows with --scale."""
    commit_apart: bool = False
    """sql: run it in one transaction and time its COMMIT as a phase "<name>-commit"."""

    @property
    def kind(self) -> str:
        """sql, copy or pgbench."""
        return "sql" if self.sql is not None else "copy" if self.copy_ is not None else "pgbench"

    @field_validator("pgbench")
    @classmethod
    def _no_programs(cls, script: str | None) -> str | None:
        bad = sorted(set(refused_meta_commands(script or "")))
        if bad:
            raise ValueError(
                f"pgbench meta-command \\{bad[0]} is not allowed (\\shell and \\setshell run "
                "programs); a profile may use only " + ", ".join(f"\\{m}" for m in PGBENCH_HARMLESS)
            )
        return script

    @model_validator(mode="after")
    def _one_kind(self) -> PhaseSpec:
        given = [k for k in ("sql", "copy_", "pgbench") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of sql, copy or pgbench")
        if self.pgbench is not None and (self.duration is None) == (self.transactions is None):
            raise ValueError("a pgbench phase needs exactly one of duration or transactions")
        if self.pgbench is None and (self.duration or self.transactions or self.clients != 1):
            raise ValueError("clients, duration and transactions are for pgbench phases only")
        if self.commit_apart and self.sql is None:
            raise ValueError("commit_apart is for sql phases only")
        return self


class SqlParams(Params):
    """A load described by the profile: tables, data, timed phases, a check query."""

    SCALED: ClassVar[tuple[str, ...]] = ()
    sizes: dict[Identifier, Annotated[int, Field(ge=1)]] = {}
    """Named sizes, `{rows}` in SQL; every one is multiplied by --scale."""
    constants: dict[Identifier, int | float | str] = {}
    """Named values that --scale leaves alone (`{batch}`); inserted as written."""
    tables: list[TableSpec] = Field(min_length=1)
    """The tables pgwx creates (in its own schema) and applies the knobs to."""
    prepare: PrepareSpec | None = None
    """The data `copy` phases load, made once per run before any timing."""
    setup: str = ""
    """Untimed SQL run in every trial after the tables exist (e.g. fill a parent table)."""
    phases: list[PhaseSpec] = Field(min_length=1)
    """The timed phases, in order."""
    verify: str = ""
    """A query run after the phases; its first row goes in the notes."""
    statement_seconds: float = Field(default=600.0, gt=0, le=86_400)
    """Each statement of the prepare query, create, setup, every phase (SQL, COPY and
    pgbench's) and verify is cancelled after this long, whatever `statement_timeout` the SQL
    sets (the trial, or the prepare step, fails saying so)."""

    @model_validator(mode="after")
    def _consistent(self) -> SqlParams:
        names = [t.name for t in self.tables]
        for i, table in enumerate(self.tables):
            if table.name in names[:i]:
                raise ValueError(f"the table name {table.name!r} is used twice")
            for fk in table.foreign_keys:
                if fk.ref_table not in names[: i + 1]:
                    raise ValueError(
                        f"table {table.name}: a foreign key references {fk.ref_table!r}, which "
                        "is not a table declared before it (pgwx writes only its own tables)"
                    )
        phases = [p.name for p in self.phases]
        for i, phase in enumerate(self.phases):
            if phase.name in phases[:i]:
                raise ValueError(f"the phase name {phase.name!r} is used twice")
            if phase.copy_ is not None:
                if phase.copy_ not in names:
                    raise ValueError(f"phase {phase.name}: copy names no declared table")
                if self.prepare is None:
                    raise ValueError(f"phase {phase.name}: a copy phase needs a [params.prepare]")
        for table in self.tables:
            for fk in table.foreign_keys:
                if fk.add_after is not None and fk.add_after not in phases:
                    raise ValueError(f"table {table.name}: add_after names no phase")
        clash = set(self.sizes) & (set(names) | set(self.constants) | {"schema"})
        clash |= set(self.constants) & (set(names) | {"schema"})
        if clash:
            raise ValueError(f"the name {sorted(clash)[0]!r} is both a size and another name")
        return self

    def estimate(self) -> tuple[int, int]:
        """(rows, bytes) one trial writes, roughly: the named sizes, the source's row limit
        and the pgbench transactions, at ROW_BYTES each (what --scale grows; it sets the
        bounds of the prepared data and the notes, `explorer.lab.workloads.data_bounds`)."""
        rows = sum(n for _, n in self.sizes_shown())
        return rows, rows * self.ROW_BYTES

    def sizes_shown(self) -> list[tuple[str, int]]:
        """The named sizes, then the source's row limit and pgbench transactions: what
        --scale grows (SCALED is empty here, so the base class would show nothing)."""
        shown = list(self.sizes.items())
        if self.prepare is not None and self.prepare.limit is not None:
            shown.append(("limit", self.prepare.limit))
        shown += [(f"{p.name} tx", p.transactions) for p in self.phases if p.transactions]
        return shown

    def scaled(self, scale: float) -> SqlParams:
        """Sizes, the source's row limit and pgbench transactions multiplied by `scale`."""

        def grow(n: int) -> int:
            return max(1, math.ceil(n * scale))

        prepare = self.prepare
        if prepare is not None and prepare.limit is not None:
            prepare = prepare.model_copy(update={"limit": grow(prepare.limit)})
        phases = [
            p.model_copy(update={"transactions": grow(p.transactions)}) if p.transactions else p
            for p in self.phases
        ]
        return self.model_copy(
            update={
                "sizes": {k: grow(v) for k, v in self.sizes.items()},
                "prepare": prepare,
                "phases": phases,
            }
        )


def is_system_schema(name: str) -> bool:
    """pg_catalog, information_schema, pg_toast…: never a profile's source (pg_authid lives
    there; the read role is granted SELECT on the source)."""
    return name.lower().startswith("pg_") or name.lower() == "information_schema"


def substitute(text: str, names: dict[str, str]) -> str:
    """Replace `{name}` for the known names only; other braces stay as written."""
    return PLACEHOLDER.sub(lambda m: names.get(m.group(1), m.group(0)), text)


def field_name(loc: tuple[int | str, ...]) -> str:
    """A TOML location as a dotted field name: params.phases[1].sql."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def refused_meta_commands(script: str) -> list[str]:
    """The meta-commands of a pgbench script that are not in PGBENCH_HARMLESS, in order."""
    return [m.lower() for m in PGBENCH_META.findall(script) if m.lower() not in PGBENCH_HARMLESS]


def mentions(text: str, name: str) -> bool:
    """Whether `text` refers to `{name}`."""
    return f"{{{name}}}" in text


def split_statements(script: str) -> list[str]:
    """A script cut where the server would cut it (see `explorer.lab.workloads.sqllex`)."""
    return sqllex.split(script)
