"""`FaultRecord`: what the cpu fault guard's handler writes for a caught fault
(nova.runtime.cpu.fault_guard, whose IR stores at these offsets). A module of its own: only
fault reports and guarded host-code calls read one, so a kernel launch does not build the
ctypes structure (a cached kernel's cold start)."""

from __future__ import annotations

import ctypes


class FaultRecord(ctypes.Structure):
    """What the handler writes at the start of `CpuLaunch.error` (48 of its 512 bytes), or at
    the record a guarded host-code call passes. `end`: the handler stores a NUL in its first
    byte; it belongs to the record, so a standalone FaultRecord is never written past (a
    40-byte one was: one byte into the Python heap per host-code fault)."""

    _fields_ = (
        ("magic", ctypes.c_uint64),
        ("signal", ctypes.c_int32),
        ("code", ctypes.c_int32),
        ("address", ctypes.c_uint64),
        ("pc", ctypes.c_uint64),
        ("sp", ctypes.c_uint64),
        ("end", ctypes.c_char * 8),
    )
