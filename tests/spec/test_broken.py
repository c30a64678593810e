"""A broken release spec: its problems one line each, and a group name of its own."""

from __future__ import annotations

from pathlib import Path

from anon_dagster.errors import Problem, SpecError
from anon_dagster.spec.broken import broken_message, group_names, problem_lines, warning_line
from anon_dagster.spec.loading import SpecFile


def broken(path: str, release: str | None = None, problems: int = 2) -> SpecFile:
    error = SpecError([Problem(path, f"key{i}", f"reason {i}") for i in range(problems)])
    return SpecFile(Path(path), error=error, release=release)


def test_every_problem_is_one_line():
    f = broken("specs/visits.yaml")
    assert problem_lines(f.error) == ["specs/visits.yaml: key0: reason 0", "specs/visits.yaml: key1: reason 1"]
    assert broken_message(f) == ("specs/visits.yaml is not a valid release spec (2 problems); nothing of it is "
                                 "loaded:\n- specs/visits.yaml: key0: reason 0\n- specs/visits.yaml: key1: reason 1")
    assert "(1 problem);" in broken_message(broken("a.yaml", problems=1))
    assert warning_line(f) == ("release spec not loaded, shown as a failing spec_valid check: "
                               "specs/visits.yaml: key0: reason 0; specs/visits.yaml: key1: reason 1")


def test_group_names_are_valid_and_distinct():
    files = [broken("x/visits.yaml", release="visits"),   # taken by a loaded release: its stem is too
             broken("x/2024-survey.yaml"),                 # a stem starting with a digit
             broken("y/visits.yaml", release="visits"),    # the same again: numbered
             broken("z/other.yaml", release="my release")]
    assert group_names(files, taken=["visits"]) == ["visits_2", "spec_2024_survey", "visits_3", "my_release"]
