"""The refusals read back from the publications' recorded outcomes, each once, oldest first."""

from __future__ import annotations

import json

import pytest

from anon_dagster.errors import UserError
from anon_dagster.release.alerts import Refusal
from anon_dagster.release.refusal_feed import RefusalFeed, handed_on, read_cursor, refusal_of

PAYLOAD = {"release": "visits", "partition": "2024", "failed_checks": ["k_anonymity"],
           "reasons": ["k_anonymity: k = 1 < 5"], "evaluation_id": "ev1", "run_id": "old"}


def test_a_refused_outcome_gives_its_refusal_and_the_run_replaces_the_payloads():
    r = refusal_of("visits", "2024", {"outcome": "refused", "refusal": PAYLOAD}, run_id="run9")
    assert r == Refusal("visits", "2024", ["k_anonymity"], ["k_anonymity: k = 1 < 5"], "ev1", "run9")
    assert refusal_of("visits", "2024", {"outcome": "published", "refusal": PAYLOAD}) is None
    assert refusal_of("visits", "2024", {"rows": 3}) is None


def test_a_payload_with_missing_fields_gives_a_refusal_without_them():
    bare = refusal_of("visits", "2023", {"outcome": "refused"}, run_id="r1")
    assert bare == Refusal("visits", "2023", [], [], None, "r1")
    partial = refusal_of("visits", "2023", {"outcome": "refused", "refusal": {"release": None, "reasons": ["x"]}})
    assert partial == Refusal("visits", "2023", [], ["x"], None, None)
    not_an_object = refusal_of("visits", None, {"outcome": "refused", "refusal": "garbled"})
    assert not_an_object == Refusal("visits", None)


def test_the_feed_hands_refusals_oldest_first_and_its_cursor_skips_them_next_time():
    feed = RefusalFeed(None)
    feed.add("b/published", 7, "b", "2024", {"outcome": "refused"}, "rb")
    feed.add("a/published", 3, "a", "2023", {"outcome": "refused"}, "ra")
    feed.add("a/published", 5, "a", "2024", {"outcome": "published"})
    feed.add("a/published", 6, "a", None, None)  # a record that is no publication still moves the cursor
    assert [(r.release, r.partition) for r in feed.refusals()] == [("a", "2023"), ("b", "2024")]
    assert json.loads(feed.cursor()) == {"a/published": 6, "b/published": 7}
    again = RefusalFeed(feed.cursor())
    assert again.after == {"a/published": 6, "b/published": 7} and again.refusals() == []


@pytest.mark.parametrize("cursor", ["not json", "[1, 2]", '{"a/published": "x"}'])
def test_a_cursor_that_is_no_object_of_ids_is_one_clear_error(cursor):
    with pytest.raises(UserError, match="refusal cursor"):
        read_cursor(cursor)


def test_a_look_asking_for_no_run_says_how_many_refusals_it_handed_on():
    assert [handed_on(n) for n in (0, 3)] == ["0 refusal(s) handed on", "3 refusal(s) handed on"]
