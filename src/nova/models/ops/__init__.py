"""The op table of nova.models (see registry): importing this package registers every op."""

from nova.models.ops import elementwise, nn, shape  # noqa: F401  (registration)
from nova.models.ops.registry import OPS, REQUIRED, OpDef, check_node, get_op, unsupported_attr

__all__ = ["OPS", "REQUIRED", "OpDef", "check_node", "get_op", "unsupported_attr"]
