"""The kernel language's located errors, made on first use: `KernelTypeError` and
`KernelSyntaxError` (both served as `nova.lang.source.<Name>` and `nova.lang.<Name>`).

Translating a kernel raises them; a kernel found in the cache is never translated, so its first
call does not create these classes, nor their bases `VerifyError` and `UnsupportedError`
(nova.errors.rare): an exception class costs ~0.1 million instructions to create.
"""

from __future__ import annotations

from nova.errors import UnsupportedError, VerifyError


class KernelTypeError(VerifyError, TypeError):
    """A type error in a kernel (operands, assignments, arguments), located in its source."""

    __module__ = "nova.lang.source"


class KernelSyntaxError(UnsupportedError):
    """A Python construct kernels do not support, located in its source; names what is."""

    __module__ = "nova.lang.source"
