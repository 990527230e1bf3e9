"""Errors of nova.models, all NovaErrors so callers can catch Nova's failures in one place."""

from __future__ import annotations

from nova.errors import NovaError


class ModelError(NovaError):
    """A graph that cannot be built, imported, compiled or run: the message names the node (name
    and op type), the attribute or the input at fault."""


class UnsupportedOpError(ModelError):
    """An op, opset, dtype or attribute value that nova.models does not implement."""


class InputError(ModelError):
    """A forward() argument whose shape or dtype does not match the model's input."""
