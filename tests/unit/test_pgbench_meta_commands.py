"""Issue 19, item 2: a pgbench script may not run programs; `pgwx check` says where (no server)."""

from __future__ import annotations

from pathlib import Path

import pytest

from explorer.lab.profiles.check import check_file
from explorer.lab.workloads.sql_prepare import array_literal, copy_line
from explorer.lab.workloads.sql_spec import refused_meta_commands

PROFILE = """title = "bench"
workload = "sql"
variants = [{{ name = "a" }}]
[params]
tables = [{{ name = "t", columns = "a int" }}]
[[params.phases]]
name = "bench"
transactions = 1
pgbench = '''
\\set n random(1, 10)
{line}
INSERT INTO {{t}} VALUES (:n);
'''
"""


@pytest.mark.parametrize(
    ("line", "refused"),
    [
        ("\\shell touch pwned", "shell"),
        ("  \\setshell v id", "setshell"),
        ("SELECT 1 \\shell touch pwned", "shell"),  # pgbench sees one mid-line too
        ("\\SHELL touch pwned", "shell"),
        ("\\\\shell touch pwned", "shell"),
        ("\\sleep 1 ms", None),
        ("SELECT 1 AS x \\gset", None),
    ],
)
def test_check_refuses_a_meta_command_that_runs_a_program(
    tmp_path: Path, line: str, refused: str | None
) -> None:
    path = tmp_path / "bench.toml"
    path.write_text(PROFILE.format(line=line))
    report = check_file(path)
    if refused is None:
        assert report.ok, report.problems
        return
    assert len(report.problems) == 1, report.problems
    problem = report.problems[0]
    assert problem.startswith(f"{path}:9: field params.phases[0].pgbench: ")
    assert f"pgbench meta-command \\{refused} is not allowed" in problem
    assert "\\set, \\sleep" in problem


def test_only_the_harmless_meta_commands_pass() -> None:
    script = "\\set a 1\n\\if :a\n\\elif :a\n\\else\n\\endif\n\\startpipeline\n\\syncpipeline\n"
    assert refused_meta_commands(script + "\\endpipeline\nSELECT 1 \\aset") == []
    assert refused_meta_commands("\\shell x\n\\setshell v y\n\\foo") == ["shell", "setshell", "foo"]


def test_prepared_rows_are_written_as_copy_text() -> None:
    assert array_literal(["1", None, "a b", "", "NULL", '{"x"}', "c\\d", ["2"]]) == (
        '{1,NULL,"a b","","NULL","{\\"x\\"}","c\\\\d",{2}}'
    )

    class Row(dict):  # what copy_line reads of an asyncpg Record: values()
        pass

    assert copy_line(Row(a="1", b=None, c="t\tab\nnew\\line", d=["x", None])) == (  # type: ignore[arg-type]
        "1\t\\N\tt\\tab\\nnew\\\\line\t{x,NULL}\n"
    )
