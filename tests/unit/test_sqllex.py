"""Issue 34: the statement splitter reads a script as PostgreSQL's lexer does.

The old splitter took `SELECT E'\\''; COPY …; SELECT 'x'` for one statement, `a$b$` for the
start of a dollar quote and ended a nested comment at its first `*/`; each let a second
statement ride inside what pgwx took for one. tests/server/test_check_fenced.py sends each
piece cut here to PG 18 and PG 15 as exactly one statement.
"""

from __future__ import annotations

import pytest

from explorer.lab.workloads.sqllex import first_word, split
from tests.support.hostile import SPLIT_CASES as CASES


@pytest.mark.parametrize(("script", "pieces"), CASES)
def test_a_script_is_cut_where_the_server_cuts_it(script: str, pieces: list[str]) -> None:
    assert split(script) == pieces


def test_the_first_word_skips_nested_comments() -> None:
    assert first_word("/* /* */ commit */ COPY t TO PROGRAM 'x'") == "copy"
    assert first_word("-- begin\n(SELECT 1)") == "select"
    assert first_word("'x'") == ""
