"""A variant never carries a table knob its workload does not follow (issue 39): the rule the
runner and the knob panel share says so in one sentence."""

from __future__ import annotations

import pytest

from explorer.lab.profiles.catalog import list_profiles, load_profile
from explorer.lab.workloads import build_workload
from explorer.models import FkTiming, Knobs, TableKind, Toast


@pytest.mark.parametrize(
    ("profile", "knobs", "words"),
    [
        ("quick-demo", Knobs(fk=FkTiming.DEFERRED), "no foreign key, so the fk knob"),
        ("quick-demo", Knobs(toast=Toast.EXTERNAL), "no toastable column, so the toast knob"),
        ("durability", Knobs(fk=FkTiming.AFTER_LOAD), "no foreign key"),
        ("fk-timing-restore", Knobs(table_kind=TableKind.UNLOGGED), "no table whose kind"),
        ("fk-timing-restore", Knobs(toast=Toast.LZ4), "no toastable column"),
    ],
)
def test_a_knob_the_workload_does_not_follow_is_refused(
    profile: str, knobs: Knobs, words: str
) -> None:
    workload = build_workload(load_profile(profile))
    why = workload.unfollowed_reason(knobs)
    assert why is not None and words in why
    assert why.endswith("changes nothing")


@pytest.mark.parametrize(
    ("profile", "knobs"),
    [
        ("quick-demo", Knobs(table_kind=TableKind.UNLOGGED)),
        ("toast-compression", Knobs(toast=Toast.EXTERNAL)),
        ("fk-timing-restore", Knobs(fk=FkTiming.DEFERRED)),
    ],
)
def test_a_knob_the_workload_follows_is_not_refused(profile: str, knobs: Knobs) -> None:
    assert build_workload(load_profile(profile)).unfollowed_reason(knobs) is None


def test_no_shipped_variant_carries_a_knob_that_changes_nothing() -> None:
    for _, profile in list_profiles():
        assert not isinstance(profile, Exception)
        workload = build_workload(profile)
        for variant in profile.variants:
            assert workload.unfollowed_reason(variant.knobs) is None, (profile.name, variant)
