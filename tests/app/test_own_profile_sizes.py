"""An own profile's size knob shows its sizes, as the shipped ones do (issue 21).

The knob once read a bare `×1` for a `sql` profile: its sizes live in `[params.sizes]`, not
in the fields a shipped workload scales. The label must name them, multiplied by the scale.
"""

from __future__ import annotations

import math
import tomllib

import pytest

from explorer.lab.profiles.catalog import load_profile
from explorer.tui.widgets.knobs import scale_label
from tests.support.paths import EXAMPLES


@pytest.mark.parametrize("scale", [1.0, 0.01])
def test_the_size_knob_names_an_own_profiles_sizes(scale: float) -> None:
    path = EXAMPLES / "staging-etl.toml"
    sizes = tomllib.loads(path.read_text())["params"]["sizes"]
    assert sizes, "the example declares named sizes"
    label = scale_label(load_profile(path), scale)
    assert label.startswith(f"×{scale:g} · ")
    first = next(iter(sizes))
    grown = max(1, math.ceil(sizes[first] * scale))
    shown = f"{grown / 1000:g}k" if grown >= 1000 and grown % 100 == 0 else f"{grown:,}"
    assert f"{first} {shown}" in label, label
