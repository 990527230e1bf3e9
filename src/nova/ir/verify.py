"""`verify_located(op)`: xDSL verification that reports the failing op and its source location.

xDSL's `Operation.verify()` raises from deep inside a walk with a message that reprints the
whole IR and without saying which op failed; this walk checks each op on its own (structure,
then the op's IRDL constraints and custom verifier) and raises `nova.errors.VerifyError` located
at the first failing op (its location, else its nearest located ancestor's).
"""

from __future__ import annotations

from xdsl.ir import Operation
from xdsl.traits import IsTerminator, NoTerminator
from xdsl.utils.exceptions import DiagnosticException

from nova.errors import NovaError, VerifyError
from nova.ir.locations import nearest_location


class _StructureError(DiagnosticException):
    """A block-structure violation (its message is complete, without an op-name prefix)."""


def _check_structure(op: Operation) -> None:
    """The block-structure rules xDSL's `Operation.verify` checks before `verify_`."""
    block = op.parent
    region = None if block is None else block.parent
    if op.successors:
        if block is None or region is None or block.last_op is not op:
            raise DiagnosticException(f"'{op.name}' op with successors must terminate its "
                                      "parent block")
        for succ in op.successors:
            if succ.parent is not region:
                raise DiagnosticException(f"'{op.name}' op branches to a block of another "
                                          "region")
    if block is None or region is None or block.last_op is not op:
        return
    parent = region.parent
    needs_terminator = len(region.blocks) > 1 or (
        parent is not None and not parent.has_trait(NoTerminator))
    if needs_terminator and not op.has_trait(IsTerminator, value_if_unregistered=True):
        raise _StructureError(f"block with no terminator, has '{op.name}' as its last "
                                      "op")


def verify_located(root: Operation) -> None:
    """Verify `root` and everything nested; raise a located VerifyError on the first failure."""
    for op in root.walk():
        try:
            _check_structure(op)
            op.verify_()
        except NovaError:
            raise
        except Exception as err:  # some xDSL verifiers raise a bare Exception
            # One line, as MLIR diagnostics are (IRDL constraint messages span several).
            message = " ".join(str(err).split())
            prefix = "Operation does not verify: "
            if message.startswith(prefix):
                message = message[len(prefix):]
            if not message.startswith("'") and not isinstance(err, _StructureError):
                message = f"'{op.name}' op {message}"
            raise VerifyError(message, nearest_location(op)) from err
