"""A small survey spec with a sampling fraction, to declare any set of thresholds on."""

from __future__ import annotations

from typing import Any

from anon_dagster.spec import ReleaseSpec, spec_from_dict

# A sensitive column and a sampling fraction: every threshold of the registry can be declared.
BASE: dict[str, Any] = {
    "release": "survey",
    "source": {"path": "data.csv"},
    "columns": {
        "pid": {"role": "identifier", "pseudonymize": {"method": "hmac"}},
        "age": {"role": "quasi", "hierarchy": {"type": "interval", "widths": [5, 10]}},
        "diag": {"role": "sensitive"},
    },
    "anonymization": {"k": 5},
    "policy": {"sampling_fraction": 0.1},
    "publication": {"path": "out.csv"},
}


def spec_with(thresholds: dict[str, Any]) -> ReleaseSpec:
    """The survey spec with ``policy.thresholds`` set to ``thresholds``."""
    return spec_from_dict({**BASE, "policy": {**BASE["policy"], "thresholds": thresholds}})
