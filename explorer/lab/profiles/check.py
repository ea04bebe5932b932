"""`pgwx check FILE`: validate a profile against a server without running it.

Three layers, each one sentence per problem that names the TOML line and field: the file's
shape (TOML, the Profile model, the workload's parameters); then, on the server, inside one
transaction that is always rolled back, every variant's tables created with its knobs applied;
then every SQL statement parsed with PREPARE (queries and DML) or inside a DO block that
returns before it runs (utility statements) — nothing executes. Variants the server cannot
run are listed with the reason they will be skipped, as the runner would skip them.
"""

from __future__ import annotations

import re
import secrets
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
from pydantic import BaseModel, ValidationError

from explorer.files import input_problem
from explorer.lab.profiles.anysetting import SettingRefused, learn_settings
from explorer.lab.profiles.availability import unavailable_reason
from explorer.lab.profiles.catalog import ProfileError, load_profile
from explorer.lab.profiles.tomlines import locate
from explorer.lab.scope import SCHEMA, run_scope, schema
from explorer.lab.workloads import KINDS, build_workload, workload_class
from explorer.lab.workloads.base import Workload
from explorer.lab.workloads.sql import SqlWorkload, one_line
from explorer.lab.workloads.sql_guard import (
    PLANNABLE,
    TRANSACTION_CONTROL,
    OutsideFence,
    Unplannable,
    first_word,
    forbidden,
    not_allowed,
    other_schemas,
    outside_fence,
    outside_write,
    refusal,
)
from explorer.lab.workloads.sql_spec import field_name
from explorer.models import Profile
from explorer.server.capabilities import probe
from explorer.server.connect import Target


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


def _sentence(path: Path, text: str, loc: tuple[int | str, ...], msg: str) -> str:
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
        return [_sentence(path, text, (*prefix, *err["loc"]), err["msg"]) for err in exc.errors()]
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
        report.problems.append(_sentence(path, text, loc, f"{prepare['file']} {problem}"))
    return report


# --------------------------------------------------------------------------- server


async def parse_only(conn: asyncpg.Connection, statement: str) -> str | None:
    """Parse (and, for queries and DML, plan) one statement without running it."""
    first = first_word(statement)
    if first in TRANSACTION_CONTROL:
        return None
    if first in PLANNABLE:
        sql = f"PREPARE pgwx_check AS {statement}"
    else:
        # PL/pgSQL parses every statement of a block when it compiles it; RETURN comes first.
        sql = f"DO $pgwx_check$ BEGIN RETURN; {statement}; END $pgwx_check$"
    try:
        async with conn.transaction():
            await conn.execute(sql)
    except asyncpg.PostgresError as exc:
        return one_line(exc)
    if first in PLANNABLE:
        await conn.execute("DEALLOCATE pgwx_check")
    return None


async def check_on_server(target: Target, path: Path, report: CheckReport) -> None:
    """Create every variant's tables and parse every statement, all rolled back.

    The tables go in a schema of a fresh name (`pgwx_lab_check_<random>`), never into a
    schema that exists already, whoever made it.
    """
    with run_scope(f"check-{secrets.token_hex(4)}"):
        await _check_on_server(target, path, report)


async def _check_on_server(target: Target, path: Path, report: CheckReport) -> None:
    profile = report.profile
    assert profile is not None
    text = report.text
    workload: Workload = build_workload(profile)
    conn = await target.connect("check")
    try:
        caps = await probe(conn, owned=target.owned)
        if workload.runs_user_sql and not await conn.fetchval(
            "SELECT rolsuper OR rolcreaterole FROM pg_roles WHERE rolname = current_user"
        ):
            report.skipped.append(
                f"{path}: pgwx run refuses this profile here: its SQL runs as a role pgwx "
                "creates for the run, and this user may not create roles (no CREATEROLE); "
                "--trust-sql runs it unfenced, as this user."
            )
        try:
            await learn_settings(conn, caps, profile.variants)
        except SettingRefused as refused:
            # the name or value `pgwx run` would refuse before anything runs
            report.problems.append(f"{path}: {refused}.")
            return
        parsed = False
        for index, variant in enumerate(profile.variants):
            vloc = ("variants", index)
            reason = unavailable_reason(variant.knobs, caps, allow_risky=False, workload=workload)
            if reason:
                line = locate(text, (*vloc, "knobs"))
                report.skipped.append(
                    f"{path}:{line}: variant {variant.name} will be skipped here: {reason}."
                )
                continue
            if not isinstance(workload, SqlWorkload):
                report.plan[variant.name] = [
                    f"{profile.workload} workload: {variant.knobs.describe()}"
                ]
                continue
            with run_scope(""):  # the plan names the schema as pgwx_lab, not the check's
                described = workload.describe(variant.knobs)
            report.plan[variant.name] = [
                *(f"set {k} = {v}" for k, v in variant.knobs.server_settings().items()),
                *(f"set {k} = {v}" for k, v in variant.knobs.settings.items()),
                *described,
            ]
            tx = conn.transaction()
            await tx.start()
            try:
                try:
                    await conn.execute(f"CREATE SCHEMA {schema()}")
                except asyncpg.PostgresError as exc:
                    report.problems.append(
                        f"{path}: pgwx cannot work on this server: {one_line(exc)} (it needs "
                        f"to create schemas of its own, {SCHEMA}_…)."
                    )
                    return
                await conn.execute(f"SET LOCAL search_path = {schema()}")
                if not await _create(conn, workload, variant, path, text, report):
                    continue
                if not parsed:
                    parsed = True
                    schemas = await other_schemas(conn)
                    for loc, statement in workload.statements(workload.names(variant.knobs)):
                        why = await _statement_problem(conn, statement, schemas)
                        if why:
                            report.problems.append(_sentence(path, text, loc, why))
                    await _check_source(conn, workload, path, text, report)
            finally:
                await tx.rollback()
    finally:
        await conn.close()


async def _statement_problem(conn: asyncpg.Connection, statement: str, schemas: set[str]) -> str:
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


async def _create(
    conn: asyncpg.Connection,
    workload: SqlWorkload,
    variant: Any,
    path: Path,
    text: str,
    report: CheckReport,
) -> bool:
    """Create the variant's tables and late FKs; False (with a problem) at the first failure."""
    steps = list(workload.create_steps(variant.knobs))
    for after in workload.fk_steps(variant.knobs).values():
        steps += [sql for _name, sql in after]
    index = [v.name for v in report.profile.variants].index(variant.name)  # type: ignore[union-attr]
    for step in steps:
        try:
            async with conn.transaction():
                await conn.execute(step)
        except asyncpg.PostgresError as exc:
            table = _table_of(workload, step)
            loc: tuple[Any, ...] = ("params", "tables", table) if table is not None else ()
            report.problems.append(
                _sentence(
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


async def _check_source(
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
                _sentence(
                    path,
                    text,
                    ("params", "prepare", "source"),
                    f"{prep.source} does not exist here or this user may not read it",
                )
            )
