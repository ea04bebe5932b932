"""`pgwx check` on a server, under the same fence as `pgwx run`.

pgwx's own connection only probes the server, makes a marked schema of a fresh name
(`pgwx_lab_check_<random>`) and the run's two fenced roles (`explorer.lab.safety.fence`), and
drops them again: no text of the profile is ever part of SQL it sends. Every statement made
from the profile — its tables with the variant's knobs, its setup, phases and verify, the
prepare query — goes to the server logged in as a fenced role, inside a transaction that is
rolled back, one statement at a time and, apart from the tables, only parsed and planned.
Where the fence cannot be made (no CREATEROLE, no password login for the role), the SQL is
not checked and the check says so: it is then not `ok`.
"""

from __future__ import annotations

import secrets
from pathlib import Path

import asyncpg

from explorer.lab.profiles.anysetting import SettingRefused, learn_settings
from explorer.lab.profiles.availability import unavailable_reason
from explorer.lab.profiles.check import (
    CheckReport,
    create_tables,
    problem_sentence,
    source_problem,
    statement_problem,
)
from explorer.lab.profiles.tomlines import locate
from explorer.lab.safety.fence import Fence, FenceUnavailable, build_fence, tear_down
from explorer.lab.safety.guard import drop_schema
from explorer.lab.safety.owner import RunOwner
from explorer.lab.scope import SCHEMA, create_marked_schema, run_scope, schema
from explorer.lab.workloads import build_workload
from explorer.lab.workloads.sql import SqlWorkload, one_line
from explorer.lab.workloads.sql_guard import other_schemas
from explorer.models import TableKind, Variant
from explorer.server.capabilities import probe
from explorer.server.connect import Target

CHECK_TIMEOUTS = {"lock_timeout": "10s", "statement_timeout": "60s"}
"""A check makes tables and plans statements: nothing of it may wait on a lock for long."""


def check_run_id() -> str:
    """The id a check's schema and roles carry (`check-<random>`)."""
    return f"check-{secrets.token_hex(4)}"


async def check_on_server(target: Target, path: Path, report: CheckReport) -> None:
    """Create every variant's tables and parse every statement as the fenced roles.

    Args:
        target: The server, as pgwx's own user.
        path: The profile file (for the sentences' line numbers).
        report: `check_file`'s report, with a profile; problems, skips and plans go in it.
    """
    run_id = check_run_id()
    with run_scope(run_id):
        await _check_on_server(target, path, report, run_id)


async def _check_on_server(target: Target, path: Path, report: CheckReport, run_id: str) -> None:
    profile = report.profile
    assert profile is not None
    workload = build_workload(profile)
    conn = await target.connect("check")
    try:
        caps = await probe(conn, owned=target.owned)
        may_fence = await conn.fetchrow(
            "SELECT current_user AS me, rolsuper OR rolcreaterole AS can FROM pg_roles "
            "WHERE rolname = current_user"
        )
        try:
            await learn_settings(conn, caps, profile.variants)
        except SettingRefused as refused:
            # the name or value `pgwx run` would refuse before anything runs
            report.problems.append(f"{path}: {refused}.")
            return
    finally:
        await conn.close()
    runnable: list[Variant] = []
    for index, variant in enumerate(profile.variants):
        reason = unavailable_reason(variant.knobs, caps, allow_risky=False, workload=workload)
        if reason:
            line = locate(report.text, ("variants", index, "knobs"))
            report.skipped.append(
                f"{path}:{line}: variant {variant.name} will be skipped here: {reason}."
            )
            continue
        runnable.append(variant)
        if not isinstance(workload, SqlWorkload):
            report.plan[variant.name] = [f"{profile.workload} workload: {variant.knobs.describe()}"]
            continue
        with run_scope(""):  # the plan names the schema as pgwx_lab, not the check's
            described = workload.describe(variant.knobs)
        report.plan[variant.name] = [
            *(f"set {k} = {v}" for k, v in variant.knobs.server_settings().items()),
            *(f"set {k} = {v}" for k, v in variant.knobs.settings.items()),
            *described,
        ]
    if not isinstance(workload, SqlWorkload) or not runnable:
        return  # nothing of the profile is SQL to run: nothing more to check on the server
    if may_fence is None or not may_fence["can"]:
        who = may_fence["me"] if may_fence else "this user"
        report.problems.append(
            f"{path}: the profile's SQL was not checked: pgwx checks it only as the fenced "
            f"role a run would make, and {who} may not create roles here (no CREATEROLE); "
            "check it as a user with CREATEROLE (pgwx run refuses it here as well, unless "
            "--trust-sql)."
        )
        return
    temporary = any(v.knobs.table_kind is TableKind.TEMPORARY for v in runnable)
    owner = RunOwner(target, run_id)  # a live check's schema is not a dead run's leftover
    await owner.open(settings=False)
    made = False
    try:
        conn = await target.connect("admin")
        try:
            await create_marked_schema(conn, run_id)
            made = True
        except asyncpg.PostgresError as exc:
            report.problems.append(
                f"{path}: pgwx cannot work on this server: {one_line(exc)} (it needs to "
                f"create schemas of its own, {SCHEMA}_…)."
            )
            return
        finally:
            await conn.close()
        try:
            fence = await build_fence(
                target, run_id, schema(), temporary=temporary, reads=workload.source_tables()
            )
        except FenceUnavailable as exc:
            report.problems.append(f"{path}: the profile's SQL was not checked: {exc}.")
            return
        await _check_fenced(fence, workload, runnable, path, report)
    finally:
        await _clean_up(target, run_id, made, report, path)
        await owner.close()


async def _clean_up(
    target: Target, run_id: str, made: bool, report: CheckReport, path: Path
) -> None:
    """Drop the check's schema and roles; what could not go is a problem (the check is not ok)."""
    left = []
    if made:
        conn = await target.connect("admin")
        try:
            left.append(await drop_schema(conn, schema()))
        finally:
            await conn.close()
    left.append(await tear_down(target, run_id))
    report.problems += [f"{path}: {why}." for why in left if why]


async def _check_fenced(
    fence: Fence, workload: SqlWorkload, runnable: list[Variant], path: Path, report: CheckReport
) -> None:
    """Every variant's tables, then every statement, as the work role; the prepare step as
    the read role. All inside transactions that are rolled back."""
    text = report.text
    work = await fence.work.connect("check-work", settings=CHECK_TIMEOUTS)
    try:
        parsed = False
        for variant in runnable:
            tx = work.transaction()
            await tx.start()
            try:
                if not await create_tables(work, workload, variant, path, text, report):
                    continue
                if parsed:
                    continue
                parsed = True
                schemas = await other_schemas(work)
                names = workload.names(variant.knobs)
                for loc, statement in workload.statements(names, prepare=False):
                    why = await statement_problem(work, statement, schemas)
                    if why:
                        report.problems.append(problem_sentence(path, text, loc, why))
            finally:
                await tx.rollback()
    finally:
        await work.close()
    await _check_prepare(fence, workload, path, report)


async def _check_prepare(
    fence: Fence, workload: SqlWorkload, path: Path, report: CheckReport
) -> None:
    """The prepare query (or source), as the read role that runs it, in a READ ONLY transaction."""
    prep = workload.params.prepare
    if prep is None or prep.file is not None:
        return
    read = await fence.read.connect("check-read", settings=CHECK_TIMEOUTS)
    try:
        async with read.transaction(readonly=True):
            query = workload.prepare_query()
            if query is not None:
                schemas = await other_schemas(read)
                why = await statement_problem(read, query, schemas)
                if why:
                    report.problems.append(
                        problem_sentence(path, report.text, ("params", "prepare", prep.kind), why)
                    )
            await source_problem(read, workload, path, report.text, report)
    finally:
        await read.close()
