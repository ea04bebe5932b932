"""One run request: every rule about what a run may be, with the sentences users see."""

from __future__ import annotations

import dataclasses

import pytest

from explorer.errors import UsageError
from explorer.lab.profiles.catalog import load_profile
from explorer.lab.run.request import RunRequest


def test_a_request_parses_the_options_as_typed() -> None:
    profile = load_profile("quick-demo")
    name = profile.variants[-1].name
    request = RunRequest.build(
        profile,
        scale=0.5,
        repeats=2,
        warmup=0,
        threshold="5%",
        budget="10m",
        variants=[name],
        settle=0,
        allow_risky=True,
        sample=False,
    )
    o = request.options
    assert (o.threshold, o.budget, o.repeats, o.warmup, o.variants) == (0.05, 600.0, 2, 0, [name])
    assert (o.scale, o.allow_risky, o.sample, o.settle_seconds) == (0.5, True, False, 0)
    assert [v.name for v in request.variants] == [name]
    assert request.estimate.trials == 2, "one variant, two repeats"
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.options.scale = 2.0  # type: ignore[misc]


@pytest.mark.parametrize(
    ("options", "sentence"),
    [
        ({"variants": ["nope"]}, "profile quick-demo has no variant nope; it has "),
        ({"scale": 0}, "--scale must be greater than 0 (got 0); try --scale 0.1."),
        ({"repeats": 101}, "--repeats must be between 1 and 100 (got 101)."),
        ({"warmup": 11}, "--warmup must be between 0 and 10."),
        ({"threshold": "abc"}, "--threshold: the noise threshold 'abc' is not a number"),
        ({"budget": "0"}, "--budget: the time budget must be more than 0 seconds (got '0')."),
    ],
)
def test_a_bad_request_is_one_sentence(options: dict[str, object], sentence: str) -> None:
    with pytest.raises(UsageError) as caught:
        RunRequest.build(load_profile("quick-demo"), **options)  # type: ignore[arg-type]
    assert str(caught.value).startswith(sentence)
    assert "\n" not in str(caught.value)


def test_the_variant_is_checked_before_the_size() -> None:
    with pytest.raises(UsageError, match="no variant"):
        RunRequest.build(load_profile("quick-demo"), variants=["nope"], scale=-1)
