"""Errors of `nova.lz4`: one base class, and one subclass per kind of bad input.

Why separate classes: the CLI turns each into a one-line message with exit code 1, and tests
check that every corrupt-input path raises the specific kind (bad magic, truncation, checksum,
out-of-bounds block) rather than some incidental exception.
"""

from __future__ import annotations

import nova


class Lz4Error(nova.NovaError):
    """Base class of every error `nova.lz4` raises on purpose."""


class Lz4ArgumentError(Lz4Error, ValueError):
    """A caller passed something unusable (bad page size, wrong dtype, ragged pages...)."""


class CorruptDataError(Lz4Error):
    """Compressed input is invalid: a block that decodes out of bounds or to the wrong size, a
    size table that does not match the payload."""


class BadMagicError(CorruptDataError):
    """The input does not start with an LZ4 frame (or Nova header) magic number."""


class TruncatedError(CorruptDataError):
    """The input ends before the frame does."""


class ChecksumError(CorruptDataError):
    """A header, block or content checksum does not match the data."""
