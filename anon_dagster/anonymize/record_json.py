"""Frozen dataclasses read from and written as JSON objects: the transformation record's parts.

A :class:`JsonObject` subclass declares its keys as dataclass fields made with :func:`key`, in
the order they are written. Definition of the two directions:

- ``to_json()``: a dict with exactly the declared keys, in declaration order, each value as
  stored (a nested object as its own ``to_json()``), an *optional* key left out when its value
  is None (as when it was never written), then the keys it did not declare (``extra``), in the
  order they were read. Values are the object's own, not copies: copy before changing them.
- ``from_json(data, where)``: every declared key checked against its kind (integer, number,
  text, list, object) and turned into the field; a missing required key or a value of the wrong
  kind raises one :class:`~anon_dagster.errors.DataError` naming ``where`` (the file or the
  record) and the dotted key. Undeclared keys are kept in ``extra``, never dropped, so a record
  that gained a key in a later release is read and written back whole.

Values are not converted (``1.0`` stays a float), so a file read and written again is the same.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields
from numbers import Integral, Real
from typing import Any, ClassVar, Self

from ..errors import DataError

_META = "json_key"
_KINDS: dict[str, tuple[str, Any]] = {
    "int": ("an integer", lambda v: isinstance(v, Integral) and not isinstance(v, bool)),
    "number": ("a number", lambda v: isinstance(v, Real) and not isinstance(v, bool)),
    "str": ("a text", lambda v: isinstance(v, str)),
    "bool": ("true or false", lambda v: isinstance(v, bool)),
    "list": ("a list", lambda v: isinstance(v, list | tuple)),
    "object": ("an object", lambda v: isinstance(v, Mapping)),
    "any": ("any value", lambda v: True),
}


@dataclass(frozen=True)
class _Key:
    kind: str
    nullable: bool
    optional: bool
    section: type[JsonObject] | None


def key(kind: str = "any", *, nullable: bool = False, optional: bool = False,
        section: type[JsonObject] | None = None) -> Any:
    """A declared key: its ``kind`` (see ``_KINDS``), or a nested ``section`` object.

    ``nullable``: null is a valid value. ``optional``: the key may be absent (the field is then
    None, and None is not written).
    """
    if kind not in _KINDS:
        raise ValueError(f"unknown JSON kind {kind!r}")
    meta = {_META: _Key(kind, nullable or optional, optional, section)}
    return field(default=None, metadata=meta) if optional else field(default=MISSING, metadata=meta)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


@dataclass(frozen=True, kw_only=True)
class JsonObject:
    """A JSON object with declared keys (the fields made with :func:`key`) and kept ``extra`` ones."""

    #: what the object is called in messages about its own (top-level) keys
    label: ClassVar[str] = "transformation record"

    extra: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def _declared(cls) -> list[tuple[str, _Key]]:
        return [(f.name, f.metadata[_META]) for f in fields(cls) if _META in f.metadata]

    @classmethod
    def from_json(cls, data: Any, where: str | None = None, prefix: str = "") -> Self:
        """The object of a JSON object ``data`` (see the module docstring); ``where`` names the
        file or record in messages, ``prefix`` the dotted key of a nested object."""
        where = where or cls.label
        if not isinstance(data, Mapping):
            what = f"key {prefix[:-1]!r}" if prefix else "the record"
            raise DataError(f"{where}: {what} must be a JSON object, not {_short(data)}")
        values: dict[str, Any] = {}
        for name, spec in cls._declared():
            dotted = prefix + name
            if name not in data:
                if spec.optional:
                    continue
                raise DataError(f"{where}: key {dotted!r} is missing")
            value = data[name]
            if value is None:
                if not spec.nullable:
                    raise DataError(f"{where}: key {dotted!r} must not be null")
                values[name] = None
            elif spec.section is not None:
                values[name] = spec.section.from_json(value, where, dotted + ".")
            else:
                what, ok = _KINDS[spec.kind]
                if not ok(value):
                    raise DataError(f"{where}: key {dotted!r} must be {what}, not {_short(value)}")
                values[name] = value
        declared = {name for name, _ in cls._declared()}
        return cls(**values, extra={k: v for k, v in data.items() if k not in declared})

    def to_json(self) -> dict[str, Any]:
        """The object as a JSON dict (see the module docstring)."""
        out: dict[str, Any] = {}
        for name, spec in self._declared():
            value = getattr(self, name)
            if value is None and spec.optional:
                continue
            out[name] = value.to_json() if isinstance(value, JsonObject) else value
        out.update(self.extra)
        return out

    def to_dict(self) -> dict[str, Any]:
        """Same as :meth:`to_json`: what :func:`anon_dagster.io.plain_json` writes for the object."""
        return self.to_json()


__all__ = ["JsonObject", "key"]
