"""A user error raised in an asset's or a check's body, shown in Dagster as the one line it is:
a :class:`dagster.Failure` whose description is the error's message, without a Python stack."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

import dagster as dg

from ..errors import UserError

Body = TypeVar("Body", bound=Callable[..., Any])


def failure(exc: UserError | TimeoutError) -> dg.Failure:
    """``exc`` as a Dagster failure: a user error is not retried (the same input fails the same
    way); a lock or a wait given up (``TimeoutError``) may be, as Dagster's policy says."""
    return dg.Failure(description=str(exc), allow_retries=not isinstance(exc, UserError))


def one_line_failures(body: Body) -> Body:
    """``body`` (a function or a generator of results) raising a user error or a timeout as :func:`failure`."""
    if inspect.isgeneratorfunction(body):
        @functools.wraps(body)
        def results(*args: Any, **kwargs: Any) -> Any:
            try:
                yield from body(*args, **kwargs)
            except (UserError, TimeoutError) as exc:
                raise failure(exc) from None
        return results  # type: ignore[return-value]

    @functools.wraps(body)
    def result(*args: Any, **kwargs: Any) -> Any:
        try:
            return body(*args, **kwargs)
        except (UserError, TimeoutError) as exc:
            raise failure(exc) from None
    return result  # type: ignore[return-value]


__all__ = ["failure", "one_line_failures"]
