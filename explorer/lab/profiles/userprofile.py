"""`pgwx new NAME`: a commented starting profile for your own load."""

from __future__ import annotations

import re
from pathlib import Path

from explorer.errors import UsageError
from explorer.files import SHARED, write_new

TEMPLATE = """\
# {name}: your own load, run by pgwx under the knobs of each variant.
# Check it against a server without running it:  pgwx check {name}.toml
# Run it:                                         pgwx run {name}.toml
# pgwx creates the tables below in its own schema (pgwx_lab) for every trial and drops them
# afterwards; your schemas are only read. Write {{table}} in SQL for a declared table and
# {{size}} for a size: pgwx puts in the variant's table (pgwx_lab.t or pg_temp.t) and the size
# times --scale. Other braces, like a jsonb path '{{a,b}}', are left alone.
title = "{name}: my load under different table kinds"
description = "What I want to find out, and what to look for in the table."
workload = "sql"
repeats = "auto"                 # rounds (A B C, C B A, …) until every verdict is settled,
                                 # 5 to 30 of them within a 10-minute budget; or a number
baseline = "logged"              # ratios are taken against this variant

[params]
sizes = {{ rows = 100000 }}        # every size grows with --scale
setup = ""                       # untimed SQL after the tables exist (e.g. fill a parent)
verify = "SELECT count(*) AS rows FROM {{events}}"   # first row goes into the notes

[[params.tables]]
name = "events"
columns = "id bigint PRIMARY KEY, kind text NOT NULL, payload text"
indexes = ["(kind)"]             # CREATE INDEX ON the table <this>, before the load
table_kind = true                # logged / UNLOGGED / TEMPORARY as the variant says
toast = ["payload"]              # compression / storage of these columns follows `toast`
# foreign_keys = [{{ columns = "kind", references = "kinds (name)" }}]  # timing follows `fk`

# The data the copy phases load, made once per run, untimed. One of:
#   sql = "SELECT ..."                           a query
#   file = "events.csv", format = "csv"          a file next to this profile
#   source = "public.events", limit = 50000      rows of one of your tables, read only
[params.prepare]
sql = "SELECT i, 'kind-' || i % 10, md5(i::text) FROM generate_series(1, {{rows}}) AS i"

[[params.phases]]                # timed, in order; one of sql / copy / pgbench each
name = "load"
copy = "events"

[[params.phases]]
name = "update"
sql = "UPDATE {{events}} SET payload = payload || '!' WHERE id % 10 = 0"

[[params.phases]]
name = "delete"
sql = "DELETE FROM {{events}} WHERE kind = 'kind-3'"

# A pgbench phase runs in sessions of its own (so not with TEMPORARY tables):
# [[params.phases]]
# name = "inserts"
# pgbench = "INSERT INTO {{events}} VALUES (-1 - (random() * 1e9)::bigint, 'x', 'y');"
# clients = 4
# duration = 10                  # or transactions = 1000 (per client, grows with --scale)

[[variants]]
name = "logged"

[[variants]]
name = "unlogged"
knobs = {{ table_kind = "unlogged" }}

[[variants]]
name = "temporary"
knobs = {{ table_kind = "temporary" }}
"""
"""The starting profile; every line it needs is explained where it stands."""

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,60}$")


def write_new_profile(name: str, directory: Path | None = None, *, force: bool = False) -> Path:
    """Write `<name>.toml` from the template, as a new file (see `explorer.files.write_new`).

    Raises:
        UsageError: a name that is not a plain file name; a link or (without `force`) a
            file is there already.
    """
    name = name.removesuffix(".toml")
    if not NAME.match(name):
        raise UsageError(
            f"{name!r} is not a usable profile name: use letters, digits, '-', '_' or '.'."
        )
    path = (directory or Path.cwd()) / f"{name}.toml"
    try:
        return write_new(path, TEMPLATE.format(name=name), mode=SHARED, force=force)
    except OSError as exc:
        raise UsageError(f"Cannot write {path} ({exc.strerror or exc}).") from None
