"""`Record`: frozen value classes without the cost of `@dataclass` at import time.

`@dataclass` compiles every generated method (`__init__`, `__repr__`, `__eq__`, `__hash__`,
`__setattr__`, `__delattr__`) with `exec` when its module is imported: 0.3-1 ms per class, and the
`dataclasses` module itself pulls in `inspect`. Modules on the cold-start paths (a cached kernel's
first call, `nova-translate` cache hits, `nova-run` of a bundle) define their value classes as
Records instead: the subclass lists its field names in `_fields` and writes its own `__init__`
(setting each field once with `object.__setattr__`); Record supplies what `@dataclass(frozen=True)`
generates, with the same behaviour: a repr naming every field, equality and hashing by the field
values (instances of the same class only), and `dataclasses.FrozenInstanceError` on assignment or
deletion. Records carry no `__slots__`, so they pickle and copy like frozen dataclasses.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported at run time (cold start)
if TYPE_CHECKING:
    from typing import Any


class Record:
    """Base of frozen value classes (see the module docstring)."""

    _fields: tuple[str, ...] = ()
    _repr_fields: tuple[str, ...] | None = None  # None: every field (`field(repr=False)` else)

    def _values(self) -> tuple[Any, ...]:
        return tuple([getattr(self, name) for name in self._fields])

    def __repr__(self) -> str:
        shown = self._fields if self._repr_fields is None else self._repr_fields
        inner = ", ".join([f"{name}={getattr(self, name)!r}" for name in shown])
        return f"{type(self).__qualname__}({inner})"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return self._values() == other._values()
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._values())

    def __setattr__(self, name: str, value: object) -> None:
        from dataclasses import FrozenInstanceError

        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        from dataclasses import FrozenInstanceError

        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def _replace(self, **changes: Any) -> Any:
        """A copy with some fields changed (`dataclasses.replace`)."""
        values = {name: getattr(self, name) for name in self._fields}
        unknown = set(changes) - set(values)
        if unknown:
            raise TypeError(f"{type(self).__name__} has no fields {sorted(unknown)}")
        values.update(changes)
        return type(self)(**values)


class MutableRecord:
    """Base of mutable value classes: what `@dataclass` (not frozen) generates, i.e. a repr
    naming every field and equality by the field values; like such dataclasses, instances are
    unhashable."""

    _fields: tuple[str, ...] = ()
    _repr_fields: tuple[str, ...] | None = None
    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        shown = self._fields if self._repr_fields is None else self._repr_fields
        inner = ", ".join([f"{name}={getattr(self, name)!r}" for name in shown])
        return f"{type(self).__qualname__}({inner})"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return tuple([getattr(self, n) for n in self._fields]) == \
                tuple([getattr(other, n) for n in self._fields])
        return NotImplemented


def as_dict(value: Any) -> Any:
    """`dataclasses.asdict` for Records: Records become dicts of their fields (recursively,
    through lists, tuples and dicts, which keep their types); other values are returned as they
    are (asdict deep-copies them: callers here hold only immutable leaves)."""
    if isinstance(value, Record | MutableRecord):
        return {name: as_dict(getattr(value, name)) for name in value._fields}
    if isinstance(value, list | tuple):
        return type(value)(as_dict(v) for v in value)
    if isinstance(value, dict):
        return {as_dict(k): as_dict(v) for k, v in value.items()}
    return value
