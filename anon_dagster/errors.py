"""Errors raised for bad input.

Every error a user can cause derives from :class:`UserError`: the CLI prints its message on one
line and exits with status 2, without a traceback. Messages name the file, key, column or value
that is wrong, and never contain secret material.
"""

from __future__ import annotations

from dataclasses import dataclass


class UserError(Exception):
    """Bad input from the user (file, spec, column, value): reported in one line, exit code 2."""


class DataError(UserError):
    """The data does not fit what the spec or the call declares (missing column, bad value)."""


class HierarchyError(UserError):
    """A generalization hierarchy is malformed or does not cover a value."""


class SecretError(UserError):
    """A key store cannot be opened or used. Never carries key material or passphrases."""


@dataclass(frozen=True)
class Problem:
    """One problem found in a release spec: where it is and what is wrong."""

    file: str
    key: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}: {self.key}" if self.key else self.file
        return f"{where}: {self.message}"


class SpecError(UserError):
    """A release spec has one or more problems; all of them are reported at once."""

    def __init__(self, problems: list[Problem]):
        self.problems = list(problems)
        if len(self.problems) == 1:
            text = str(self.problems[0])
        else:
            text = f"{len(self.problems)} problems in the release spec: " + "; ".join(
                str(p) for p in self.problems
            )
        super().__init__(text)
