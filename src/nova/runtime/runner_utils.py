"""MLIR runner utilities (printMemrefF32, printF64, ...) with mlir-runner's exact text.

Compiled host code calls these through the runtime ABI (`nova_rt_print_*`, see
`nova.abi.RUNNER_UTILS`). The text matches upstream's CRunnerUtils/MemRefUtils
(`printMemRef`, `MemRefDataPrinter`) byte for byte, so tests written for mlir-runner pass unchanged.
All output goes through libc's stdio `stdout` (not Python's `sys.stdout`), so that it interleaves in
program order with `printf` from CPU kernels; the executor calls `flush_stdout()` after each entry
of a program that can print (`program_may_print`, decided once when the program is loaded).

One deliberate difference: for a memref with a zero-sized dimension upstream reads (and prints) an
element that does not exist; Nova prints `[]` for that dimension instead of reading out of bounds.
"""

from __future__ import annotations

import ctypes
import math
import re
from _ctypes import CFuncPtr
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from nova.abi import ABI_BY_NAME
from nova.bundle.format import PayloadKind
from nova.errors import BundleFormatError
from nova.runtime.linker import undefined_symbols

if TYPE_CHECKING:
    import numpy as np
else:  # NumPy is imported on first use (nova.runtime.lazy_numpy)
    from nova.runtime.lazy_numpy import np

if TYPE_CHECKING:
    from nova.bundle.reader import Bundle
    from nova.runtime.device import Device

_LIBC = ctypes.CDLL(None, use_errno=True)  # the process's namespace: libc's own stdout
_LIBC.fwrite.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_void_p)
_LIBC.fwrite.restype = ctypes.c_size_t
_LIBC.fflush.argtypes = (ctypes.c_void_p,)
_LIBC.fflush.restype = ctypes.c_int
_C_STDOUT = ctypes.c_void_p.in_dll(_LIBC, "stdout")

MEMREF_DTYPES: dict[str, str] = {
    "f32": "float32", "f64": "float64", "i8": "int8", "i16": "int16", "i32": "int32",
    "i64": "int64",
}
"""Element types (NumPy names) of the printMemref* functions, keyed by the ABI function's
suffix."""


def write_stdout(text: str) -> None:
    """Write `text` to C's `stdout` (buffered by libc, in order with kernel printf output)."""
    data = text.encode()
    if data:
        _LIBC.fwrite(data, 1, len(data), _C_STDOUT)


def flush_stdout() -> None:
    """Flush every C stdio stream (`fflush(NULL)`), so output reaches fd 1 before Python's."""
    _LIBC.fflush(None)


STDIO_WRITERS: frozenset[str] = frozenset({
    "stdout", "stderr", "printf", "vprintf", "puts", "putchar", "putchar_unlocked", "putc",
    "putc_unlocked", "fputc", "fputc_unlocked", "fputs", "fputs_unlocked", "fwrite",
    "fwrite_unlocked", "fprintf", "vfprintf", "__printf_chk", "__vprintf_chk", "__fprintf_chk",
    "__vfprintf_chk", "putwchar", "putwc", "fputwc", "fputws", "wprintf", "vwprintf", "fwprintf",
    "vfwprintf", "putw", "perror",
})
"""libc symbols through which x86-64 code can leave text in a stdio buffer: every printf/puts/
put*/fwrite variant (LLVM rewrites `printf("x\\n")` into `puts`, `printf("%c")` into `putchar`,
a constant `fprintf` into `fwrite`) and the `stdout`/`stderr` streams themselves."""

_PRINT_ABI_PREFIX = "nova_rt_print_"
_VPRINTF = re.compile(rb"\bvprintf\b")


def object_may_print(obj: bytes, name: str) -> bool:
    """An x86-64 object calls a runtime print function or a libc stdio writer (a malformed
    object counts as printing: loading it reports the problem, not this check)."""
    try:
        symbols = undefined_symbols(obj, name)
    except BundleFormatError:
        return True
    return any(s.startswith(_PRINT_ABI_PREFIX) or s in STDIO_WRITERS for s in symbols)


def gpu_images_may_print(bundle: Bundle) -> bool:
    """A kernel calls `vprintf` (CUDA printf, and `vector.print` in kernels), whose output the
    driver writes through C stdio at synchronization points: in the PTX text, or in the cubin's
    symbol names."""
    for module in bundle.manifest.modules:
        for kind in (PayloadKind.PTX, PayloadKind.CUBIN):
            image = bundle.payload(module.name, kind)
            if image is not None and _VPRINTF.search(image):
                return True
    return False


def program_may_print(bundle: Bundle, device: Device) -> bool:
    """Whether running `bundle` on `device` can leave output
    in C's stdio buffers, so that the executor must `fflush` after each call: the host code calls
    a `nova_rt_print_*` function or libc stdio, or a kernel image the device runs prints (CPU
    device objects: libc stdio; cuda: `vprintf`). Reading the images' symbols once at load time
    saves an `fflush(NULL)` per call of programs that never print."""
    return (object_may_print(bundle.object_bytes, bundle.name)
            or device.images_may_print(bundle))


def cpu_images_may_print(bundle: Bundle) -> bool:
    """Whether a CPU-device object of `bundle` calls libc stdio."""
    for module in bundle.manifest.modules:
        image = bundle.payload(module.name, PayloadKind.CPU_OBJECT)
        if image is not None and object_may_print(image, f"{bundle.name}:{module.name}"):
            return True
    return False


def format_float(value: float) -> str:
    """A float as C's `%g` (and C++ `std::cout << x`) spells it: 6 significant digits,
    `inf`/`-inf`, `nan`/`-nan` (sign of the NaN kept), `-0` for negative zero."""
    if math.isnan(value):
        return "-nan" if math.copysign(1.0, value) < 0 else "nan"
    return f"{value:g}"


def _format_pointer(address: int) -> str:
    """A pointer as libstdc++'s `operator<<(void*)` prints it (`0x...`, or `0` for null)."""
    return f"{address:#x}" if address else "0"


def read_descriptor(rank: int,
                    desc_address: int) -> tuple[int, int, tuple[int, ...], tuple[int, ...]]:
    """Read a ranked memref descriptor at `desc_address`: (aligned, offset, sizes, strides)."""
    words = (ctypes.c_int64 * (3 + 2 * rank)).from_address(desc_address)
    aligned = words[1] & 0xFFFFFFFFFFFFFFFF
    return aligned, words[2], tuple(words[3:3 + rank]), tuple(words[3 + rank:3 + 2 * rank])


def memref_view(dtype: np.dtype, aligned: int, offset: int, sizes: tuple[int, ...],
                strides: tuple[int, ...]) -> np.ndarray:
    """A read-only NumPy view of a strided memref's elements (no copy). Empty memrefs read
    nothing."""
    if any(s == 0 for s in sizes):
        return np.empty(sizes, dtype=dtype)
    low = offset + sum(min(0, (n - 1) * st) for n, st in zip(sizes, strides, strict=True))
    high = offset + sum(max(0, (n - 1) * st) for n, st in zip(sizes, strides, strict=True))
    count = high - low + 1
    raw = (ctypes.c_char * (count * dtype.itemsize)).from_address(aligned + low * dtype.itemsize)
    # numpy's stubs (Python < 3.12) do not list ctypes arrays among buffers
    flat = np.frombuffer(raw, dtype=dtype, count=count)  # type: ignore[call-overload]
    byte_strides = tuple(st * dtype.itemsize for st in strides)
    start = (offset - low) * dtype.itemsize
    return np.lib.stride_tricks.as_strided(
        flat[start // dtype.itemsize:], shape=sizes, strides=byte_strides, writeable=False)


def _format_elements(values: np.ndarray) -> list:
    """Elements as nested lists of strings (floats via %g, integers as decimal numbers)."""
    if values.dtype.kind == "f":
        formatter: Callable[[Any], str] = lambda v: format_float(float(v))  # noqa: E731
    else:
        formatter = lambda v: str(int(v))  # noqa: E731
    flat = [formatter(v) for v in values.ravel().tolist()]
    if values.ndim == 0:
        return flat
    return np.array(flat, dtype=object).reshape(values.shape).tolist()


def _render(node: object, dim: int, rank: int) -> str:
    """Upstream's MemRefDataPrinter: brackets per level, `, ` between elements (plus a newline
    above the innermost level), each element after the first indented by rank - dim + 1."""
    if dim == 0:
        return str(node)
    assert isinstance(node, list)
    if not node:
        return "[]"
    separator = ", \n" if dim > 1 else ", "
    indent = " " * (rank - dim + 1)
    parts = [_render(node[0], dim - 1, rank)]
    parts += [indent + _render(child, dim - 1, rank) for child in node[1:]]
    return "[" + separator.join(parts) + "]"


def format_memref(dtype: np.dtype, rank: int, desc_address: int) -> str:
    """The full text `printMemref*` writes for an unranked memref (rank, descriptor)."""
    aligned, offset, sizes, strides = read_descriptor(rank, desc_address)
    header = (f"Unranked Memref base@ = {_format_pointer(aligned)} rank = {rank} "
              f"offset = {offset} sizes = [{', '.join(map(str, sizes))}] "
              f"strides = [{', '.join(map(str, strides))}] data = \n")
    values = memref_view(dtype, aligned, offset, sizes, strides)
    nested = _format_elements(values)
    body = f"[{nested[0]}]" if rank == 0 else _render(nested, rank, rank)
    return header + body + "\n"


def format_array(array: np.ndarray) -> str:
    """`printMemref*` text for a NumPy array (its data pointer, offset 0, element strides)."""
    rank = array.ndim
    strides = tuple(s // array.itemsize for s in array.strides)
    desc = (ctypes.c_int64 * (3 + 2 * rank))(
        array.ctypes.data, array.ctypes.data, 0, *array.shape, *strides)
    return format_memref(array.dtype, rank, ctypes.addressof(desc))


# --- the ABI implementations (ctypes callbacks, shared by both devices) -----------------------

def _print_memref(dtype_name: str) -> Callable[[int, int], None]:
    def print_memref(rank: int, desc: int) -> None:
        try:
            write_stdout(format_memref(np.dtype(dtype_name), rank, desc))
        except Exception as exc:  # never let an exception cross the C boundary
            write_stdout(f"<nova: cannot print memref: {exc}>\n")
    return print_memref


def _f32(value: float) -> None:
    # ctypes hands a c_float as a Python float already widened to double: %g of that is C's.
    write_stdout(format_float(value))


def _u64(value: int) -> None:
    write_stdout(str(value & 0xFFFFFFFFFFFFFFFF))


def _string(text: int) -> None:
    if text:
        write_stdout(ctypes.string_at(text).decode(errors="replace"))


_IMPLEMENTATIONS: dict[str, Callable[..., None]] = {
    **{f"nova_rt_print_memref_{k}": _print_memref(v) for k, v in MEMREF_DTYPES.items()},
    "nova_rt_print_f32": _f32,
    "nova_rt_print_f64": lambda v: write_stdout(format_float(v)),
    "nova_rt_print_i64": lambda v: write_stdout(str(v)),
    "nova_rt_print_u64": _u64,
    "nova_rt_print_newline": lambda: write_stdout("\n"),
    "nova_rt_print_comma": lambda: write_stdout(", "),
    "nova_rt_print_open": lambda: write_stdout("( "),
    "nova_rt_print_close": lambda: write_stdout(" )"),
    "nova_rt_print_string": _string,
}

_CALLBACKS: dict[str, CFuncPtr] = {}


def runner_util_symbols() -> dict[str, int]:
    """ABI name -> address of its implementation, for `llvm.add_symbol`. The ctypes callbacks
    live for the whole process (kept in a module-level table)."""
    if not _CALLBACKS:
        for name, impl in _IMPLEMENTATIONS.items():
            _CALLBACKS[name] = ABI_BY_NAME[name].ctypes_prototype()(impl)
    return {name: ctypes.cast(cb, ctypes.c_void_p).value or 0 for name, cb in _CALLBACKS.items()}

