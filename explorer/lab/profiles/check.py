"""`pgwx check FILE`: validate a profile against a server without running it.

Three layers, each one sentence per problem that names the TOML line and field: the file's
shape (TOML, the Profile model, the workload's parameters); then, on the server and logged in
as the fenced roles a run would make (`explorer.lab.run.checking`), inside one transaction
that is always rolled back, every variant's tables created with its knobs applied, one
statement at a time; then every SQL statement parsed (a Parse message: one statement, never
executed) and, for queries and DML, planned. Variants the server cannot run are listed with
the reason they will be skipped, as the runner would skip them.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
from pydantic import BaseModel, ValidationError

from explorer.files import input_problem
from explorer.lab.profiles.catalog import ProfileError, load_profile
from explorer.lab.profiles.tomlines import locate
from explorer.lab.workloads import KINDS, workload_class
from explorer.lab.workloads.sql import SqlWorkload, one_line, run_one
from explorer.lab.workloads.sql_guard import (
    OutsideFence,
    Unplannable,
    forbidden,
    not_allowed,
    outside_fence,
    outside_write,
    refusal,
)
from explorer.lab.workloads.sql_spec import field_name
from explorer.models import Profile


@dataclass
class CheckReport:
    """What `pgwx check` found."""

    profile: Profile | None = None
    text: str = ""
    """The file's text, for finding lines."""
    problems: list[str] = field(default_factory=list)
    """One sentence each, naming the line and the field."""
    skipped: list[str] = field(default_factory=list)
    """Variants this server cannot run, with the reason (the run skips them too)."""
    plan: dict[str, list[str]] = field(default_factory=dict)
    """Variant → what a trial of it will do."""

    @property
    def ok(self) -> bool:
        """No problem found."""
        return not self.problems


# --------------------------------------------------------------------------- lines


def problem_sentence(path: Path, text: str, loc: tuple[int | str, ...], msg: str) -> str:
    line = locate(text, loc)
    at = f"{path}:{line}" if line else str(path)
    msg = msg.removeprefix("Value error, ").rstrip(".")
    return f"{at}: field {field_name(loc)}: {msg}."


def _validation_problems(
    path: Path, text: str, model: type[BaseModel], data: Any, prefix: tuple[str, ...] = ()
) -> list[str]:
    try:
        model.model_validate(data)
    except ValidationError as exc:
        return [
            problem_sentence(path, text, (*prefix, *err["loc"]), err["msg"]) for err in exc.errors()
        ]
    return []


def check_file(path: Path) -> CheckReport:
    """Validate a profile file's shape, collecting every problem rather than the first."""
    report = CheckReport()
    try:
        text = report.text = path.read_text()
    except OSError as exc:
        report.problems.append(f"{path}: cannot be read ({exc.strerror}).")
        return report
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        report.problems.append(f"{path}: not valid TOML ({exc}).")
        return report
    data.setdefault("name", path.stem)
    report.problems += _validation_problems(path, text, Profile, data)
    kind = data.get("workload")
    if isinstance(kind, str) and kind not in KINDS:
        report.problems.append(
            f"{path}:{locate(text, ('workload',))}: field workload: unknown kind {kind!r}; "
            f"use one of {', '.join(KINDS)}."
        )
    elif isinstance(kind, str) and isinstance(data.get("params", {}), dict):
        model = workload_class(kind).params_model
        report.problems += _validation_problems(
            path, text, model, data.get("params", {}), ("params",)
        )
    if report.problems:
        return report
    try:
        report.profile = load_profile(path)
    except ProfileError as exc:
        report.problems.append(str(exc))
        return report
    prepare = report.profile.params.get("prepare") or {}
    problem = input_problem(Path(prepare["file"])) if isinstance(prepare.get("file"), str) else None
    if problem is not None:
        loc = ("params", "prepare", "file")
        report.problems.append(problem_sentence(path, text, loc, f"{prepare['file']} {problem}"))
    return report


# --------------------------------------------------------------------------- server
# The helpers below take a session that is logged in as the run's fenced role: the
# server-side check itself is `explorer.lab.run.checking.check_on_server`.


async def parse_only(conn: asyncpg.Connection, statement: str) -> str | None:
    """Parse (and, for queries and DML, analyse) one statement without running it.

    The statement is sent in a Parse message of the extended protocol, which the server takes
    as exactly one statement ("cannot insert multiple commands into a prepared statement"
    otherwise) and never executes: no text around it that a profile could close.
    """
    try:
        async with conn.transaction():
            await conn.prepare(statement)
    except asyncpg.PostgresError as exc:
        return one_line(exc)
    return None


async def statement_problem(conn: asyncpg.Connection, statement: str, schemas: set[str]) -> str:
    """What is wrong with one statement ('' when nothing pgwx can see before it runs)."""
    what = forbidden(statement)
    if what:
        return not_allowed("this statement", what).split(": ", 1)[1]
    why = await parse_only(conn, statement)
    if why:
        return why
    try:
        written = await outside_write(conn, statement, schemas)
    except OutsideFence as exc:
        return outside_fence("this statement", str(exc))
    except Unplannable:
        return ""  # it parsed; what it touches is for the fence to decide when it runs
    return refusal("this statement", written) if written else ""


async def create_tables(
    conn: asyncpg.Connection,
    workload: SqlWorkload,
    variant: Any,
    path: Path,
    text: str,
    report: CheckReport,
) -> bool:
    """Create the variant's tables and late FKs; False (with a problem) at the first failure.

    Each step is one statement to the server (`run_one`): a table's columns, `with` or a
    foreign key's columns cannot carry a second statement, nor a COMMIT.
    """
    steps = list(workload.create_steps(variant.knobs))
    for after in workload.fk_steps(variant.knobs).values():
        steps += [sql for _name, sql in after]
    index = [v.name for v in report.profile.variants].index(variant.name)  # type: ignore[union-attr]
    for step in steps:
        try:
            async with conn.transaction():
                await run_one(conn, step)
        except asyncpg.PostgresError as exc:
            table = _table_of(workload, step)
            loc: tuple[Any, ...] = ("params", "tables", table) if table is not None else ()
            report.problems.append(
                problem_sentence(
                    path,
                    text,
                    loc or ("variants", index),
                    f"variant {variant.name} cannot create its tables: " + one_line(exc),
                )
            )
            return False
    return True


def _table_of(workload: SqlWorkload, step: str) -> int | None:
    for i, t in enumerate(workload.params.tables):
        if re.search(rf"\.{t.name}\b", step.split("(")[0]):
            return i
    return None


async def source_problem(
    conn: asyncpg.Connection, workload: SqlWorkload, path: Path, text: str, report: CheckReport
) -> None:
    prep = workload.params.prepare
    if prep is None:
        return
    if prep.source is not None:
        readable = await conn.fetchval(
            "SELECT CASE WHEN to_regclass($1) IS NULL THEN false "
            "ELSE has_table_privilege($1, 'SELECT') END",
            prep.source,
        )
        if not readable:
            report.problems.append(
                problem_sentence(
                    path,
                    text,
                    ("params", "prepare", "source"),
                    f"{prep.source} does not exist here or the run's read role may not read it",
                )
            )
