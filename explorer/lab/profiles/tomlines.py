"""Where a key sits in a TOML text: tomllib gives no positions for valid TOML."""

from __future__ import annotations

import re


def locate(text: str, loc: tuple[int | str, ...]) -> int | None:
    """The 1-based line of the key at `loc` (or of its nearest parent) in a TOML text.

    tomllib reports no positions for valid TOML, so the headers (`[a.b]`, `[[a.b]]`, counted
    per array) and `key =` lines are followed by hand; inline tables resolve to their key.
    """
    best: tuple[int, int] | None = None  # (matched length, line)
    counts: dict[tuple[str, ...], int] = {}
    current: tuple[int | str, ...] = ()
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        header = re.match(r"^(\[\[?)\s*([A-Za-z0-9_.\-\s\"]+?)\s*\]\]?", line)
        if header:
            keys = tuple(k.strip().strip('"') for k in header.group(2).split("."))
            if header.group(1) == "[[":
                counts[keys] = counts.get(keys, -1) + 1
            # Indices of enclosing arrays of tables come from their own counters.
            path: list[int | str] = []
            for i, key in enumerate(keys):
                path.append(key)
                prefix = keys[: i + 1]
                if prefix in counts and (i < len(keys) - 1 or header.group(1) == "[["):
                    path.append(counts[prefix])
            current = tuple(path)
            candidate = current
        else:
            key = re.match(r'^([A-Za-z0-9_\-"]+)\s*=', line)
            if not key:
                continue
            candidate = (*current, key.group(1).strip('"'))
        matched = 0
        for a, b in zip(candidate, loc, strict=False):
            if a != b:
                break
            matched += 1
        if matched == len(candidate) and matched and (best is None or matched > best[0]):
            best = (matched, number)
    return best[1] if best else None
