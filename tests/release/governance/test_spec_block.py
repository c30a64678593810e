"""The approval block of release spec v1: validated with file and key, absent from the hash when absent."""

from __future__ import annotations

import pytest

from anon_dagster.errors import SpecError
from anon_dagster.spec import spec_from_dict

BASE = {"release": "x", "source": {"path": "a.csv"}, "columns": {"age": {"role": "quasi"}},
        "publication": {"path": "out.csv"}}


@pytest.mark.parametrize(("block", "key", "message"), [
    ({"required": True}, "approval.approvers", "approval is required: list who may approve"),
    ({"required": True, "approvers": ["a b"]}, "approval.approvers.0", "an approver is a name of letters"),
    ({"required": True, "approvers": ["dpo"], "min_approvals": 2}, "approval.min_approvals",
     "2 approvals are required but 1 approver(s) are listed"),
    ({"required": True, "approvers": ["dpo", "dpo"]}, "approval.approvers.1", "approver 'dpo' is listed twice"),
    ({"requird": True}, "approval.requird", "unknown key 'requird' (approval takes: required, approvers,"),
    ({"required": True, "approvers": ["dpo"], "min_approvals": 0}, "approval.min_approvals", "greater than or equal to 1"),
])
def test_a_bad_approval_block_is_refused_naming_file_and_key(block, key, message):
    with pytest.raises(SpecError) as caught:
        spec_from_dict({**BASE, "approval": block})
    assert str(caught.value).startswith(f"<spec>: {key}: ") and message in str(caught.value)


def test_the_block_defaults_and_a_spec_without_it_hashes_as_before():
    plain = spec_from_dict(BASE)
    assert plain.approval is None and "approval" not in plain.model_dump(mode="json")
    governed = spec_from_dict({**BASE, "approval": {"required": True, "approvers": ["dpo@example.org"]}})
    assert (governed.approval.min_approvals, governed.approval.distinct_from_runner) == (1, True)
    assert governed.spec_hash() != plain.spec_hash()  # who approves is part of what is published
    declared_only = spec_from_dict({**BASE, "approval": {"approvers": []}})
    assert not declared_only.approval.required
