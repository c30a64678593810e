"""The extras of a step run through Dagster Pipes: read with their defaults, refused in one line."""

from __future__ import annotations

import pytest

from anon_dagster.engine.pipes_step import StepExtras
from anon_dagster.errors import UserError


def test_the_extras_are_read_with_the_engines_defaults():
    extras = StepExtras.from_extras({"spec": "specs/tiny.yaml", "step": "checks", "partition": 2023})
    assert (extras.spec, extras.step, extras.partition, extras.engine, extras.spark_master) == \
        ("specs/tiny.yaml", "checks", "2023", "pandas", "local[2]")


@pytest.mark.parametrize(("extras", "says"), [
    ({"step": "checks"}, "no release spec"),
    ({"spec": "s.yaml", "step": "publish"}, "'publish': one of checks, frequencies"),
    ({"spec": "s.yaml", "step": "frequencies"}, "needs the extra 'frequencies'"),
])
def test_missing_or_unknown_extras_are_refused_in_one_line(extras, says):
    with pytest.raises(UserError, match=says) as caught:
        StepExtras.from_extras(extras)
    assert "\n" not in str(caught.value)
