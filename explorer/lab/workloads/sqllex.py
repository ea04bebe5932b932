"""PostgreSQL's lexical rules, as far as cutting a script into statements needs them.

The server's lexer (scan.l) decides where a profile's statement ends; a splitter that reads
a script differently can be made to take two statements for one (`SELECT E'\\''; COPY …`).
This one follows scan.l: standard strings with doubled quotes, escape strings (E'…', a
backslash escapes the next character, also in a continued segment after a newline),
quoted identifiers, dollar quotes (not after an identifier character: `a$b$` is a name),
nested /* */ comments and -- comments. It assumes standard_conforming_strings = on (the
default since 9.1); pgwx never relies on the split for safety — every statement it cuts is
sent where the server accepts one statement only, or runs inside the fence.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

_WORD = re.compile(r"[A-Za-z_\x80-\U0010ffff][A-Za-z0-9_$\x80-\U0010ffff]*")
_NUMBER = re.compile(r"[0-9][0-9A-Za-z_.]*|\.[0-9][0-9A-Za-z_.]*")
_DOLLAR = re.compile(r"\$([A-Za-z_\x80-\U0010ffff][A-Za-z0-9_\x80-\U0010ffff]*)?\$")
_CONTINUE = re.compile(r"[ \t\f]*(?:\r\n|\n|\r)(?:[ \t\n\r\f\v]+|--[^\n\r]*)*'")
"""What lets a string go on in a second quoted segment (scan.l's quotecontinue)."""


def _quoted(text: str, i: int, quote: str, escapes: bool) -> int:
    """Index just past the quoted run that starts at text[i] == quote (len(text) if open)."""
    n = len(text)
    i += 1
    while i < n:
        c = text[i]
        if escapes and c == "\\":
            i += 2
            continue
        if c == quote:
            if text.startswith(quote, i + 1):
                i += 2  # a doubled quote stands for one
                continue
            if quote == "'":
                more = _CONTINUE.match(text, i + 1)
                if more:
                    i = more.end()
                    continue
            return i + 1
        i += 1
    return n


def _comment(text: str, i: int) -> int:
    """Index just past the (nested) block comment that starts at text[i:i+2] == '/*'."""
    depth, i, n = 1, i + 2, len(text)
    while i < n and depth:
        if text.startswith("/*", i):
            depth, i = depth + 1, i + 2
        elif text.startswith("*/", i):
            depth, i = depth - 1, i + 2
        else:
            i += 1
    return i if not depth else n


def tokens(text: str) -> Iterator[tuple[str, int, int]]:
    """(kind, start, end) of each token: space, comment, string, ident, word, number, other."""
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            j = i + 1
            while j < n and text[j].isspace():
                j += 1
            yield "space", i, j
        elif text.startswith("--", i):
            j = text.find("\n", i)
            j = n if j == -1 else j + 1
            yield "comment", i, j
        elif text.startswith("/*", i):
            j = _comment(text, i)
            yield "comment", i, j
        elif c == "'":
            j = _quoted(text, i, "'", escapes=False)
            yield "string", i, j
        elif c == '"':
            j = _quoted(text, i, '"', escapes=False)
            yield "ident", i, j
        elif c == "$" and (m := _DOLLAR.match(text, i)):
            close = text.find(m.group(0), m.end())
            j = n if close == -1 else close + len(m.group(0))
            yield "string", i, j
        elif m := _WORD.match(text, i):
            j = m.end()
            if j - i == 1 and c in "eE" and text.startswith("'", j):
                j = _quoted(text, j, "'", escapes=True)
                yield "string", i, j
            else:
                yield "word", i, j
        elif m := _NUMBER.match(text, i):
            j = m.end()
            yield "number", i, j
        else:
            j = i + 1
            yield "other", i, j
        i = j


def split(script: str) -> list[str]:
    """The script's statements, cut where the server would cut them (empty ones dropped).

    A semicolon inside parentheses does not end a statement (as in psql: CREATE RULE … DO
    (a; b)); the server then sees the whole as one statement, as written.
    """
    out: list[str] = []
    start, depth, code = 0, 0, False
    for kind, i, j in tokens(script):
        if kind in ("space", "comment"):
            continue
        piece = script[i:j]
        if kind == "other" and piece == ";" and depth == 0:
            if code:
                out.append(script[start:i].strip())
            start, code = j, False
            continue
        code = True
        if kind == "other" and piece == "(":
            depth += 1
        elif kind == "other" and piece == ")":
            depth = max(0, depth - 1)
    if code:
        out.append(script[start:].strip())
    return out


def first_word(statement: str) -> str:
    """The statement's first keyword, lower case (comments skipped); '' when none."""
    for kind, i, j in tokens(statement):
        if kind in ("space", "comment") or statement[i:j] == "(":
            continue
        return statement[i:j].lower() if kind == "word" else ""
    return ""
