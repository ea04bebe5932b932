"""Variant names are never silently cut and never shared within a table or a profile."""

from __future__ import annotations

from pathlib import Path

import pytest

from explorer.lab.profiles.catalog import ProfileError, load_profile
from explorer.lab.profiles.naming import NAME_MAX, variant_name
from explorer.models import Knobs

LONG = Knobs(
    table_kind="unlogged",
    fk="deferred",
    toast="lz4",
    synchronous_commit="off",
    fsync=False,
    full_page_writes=False,
    wal_level="minimal",
)
"""Knobs whose label is longer than a name may be."""


def test_a_long_generated_name_is_shortened_visibly() -> None:
    name = variant_name(LONG)
    assert len(name) <= NAME_MAX
    assert name.endswith("…")
    assert name.startswith("unlogged fk=deferred toast=lz4")


def test_a_short_name_is_left_alone() -> None:
    assert variant_name(Knobs(table_kind="unlogged", synchronous_commit="off")) == (
        "unlogged sc=off"
    )


def test_knobs_that_differ_only_past_the_cut_get_different_names() -> None:
    other = LONG.model_copy(update={"wal_level": "replica"})
    first = variant_name(LONG)
    second = variant_name(other, {first: LONG})
    assert first != second and len(second) <= NAME_MAX
    assert second.endswith(" #2") and "…" in second
    # The same knobs again keep their name: their runs line up in one row.
    assert variant_name(LONG, {first: LONG}) == first
    third = variant_name(
        LONG.model_copy(update={"wal_level": "logical"}), {first: LONG, second: other}
    )
    assert third.endswith(" #3")


def test_knobs_the_label_left_out_still_get_their_own_name() -> None:
    plain = Knobs()
    pregrown = Knobs(pregrown=True)
    assert variant_name(pregrown, {variant_name(plain): plain}) != variant_name(plain)


def _profile(tmp_path: Path, *names: str) -> Path:
    body = 'title = "t"\nworkload = "toast"\n'
    for name in names:
        body += f'[[variants]]\nname = "{name}"\n'
    path = tmp_path / "p.toml"
    path.write_text(body)
    return path


def test_a_profile_with_a_duplicate_name_is_refused_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ProfileError, match="'same' is used twice"):
        load_profile(_profile(tmp_path, "same", "other", "same"))


def test_a_profile_name_over_the_limit_is_refused_not_cut(tmp_path: Path) -> None:
    with pytest.raises(ProfileError, match=r"variants\[0\]\.name.*40"):
        load_profile(_profile(tmp_path, "x" * (NAME_MAX + 1)))
