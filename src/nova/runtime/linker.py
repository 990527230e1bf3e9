"""Link a .nova file's host object into the process (no C compiler, no files): placed by
`nova.runtime.objload` (no llvmlite import), or by llvmlite MCJIT for an object that loader does
not handle.

Before linking, every undefined symbol of the object is checked: it must be a runtime ABI function
(bound with `llvm.add_symbol` to the chosen device's implementation), or come from libc, libm or
libgcc_s (compiler builtins); anything else is rejected with a BundleFormatError naming it, since
MCJIT would otherwise abort the whole process on an unresolved relocation. `add_symbol` is process
wide, so binding and linking happen under one lock: each program keeps the addresses it was linked
against even when a later program binds the same names to another device.
"""

from __future__ import annotations

import ctypes
import functools
import struct
import threading
from collections.abc import Mapping

from nova.abi import ABI_BY_NAME
from nova.errors import BundleFormatError
from nova.records import MutableRecord

_LINK_LOCK = threading.Lock()
LINK_LOCK = _LINK_LOCK
"""Held while any object is linked (`add_symbol` bindings are process wide): other JIT links that
resolve libc's heap functions (the cpu device's kernel objects) take it too."""
HEAP_SYMBOLS = ("malloc", "aligned_alloc", "free")
"""libc's heap functions, which a device may rebind for host code (the cpu device's guarded
heap); every other link resolves them to libc's, restored after each link."""
_SYSTEM_LIBRARIES = (("libc.so.6", "c"), ("libm.so.6", "m"), ("libgcc_s.so.1", "gcc_s"))
"""(glibc soname, short name for find_library when the soname does not load)."""

_LINKER_DEFINED = frozenset({"_GLOBAL_OFFSET_TABLE_"})  # provided by the JIT linker itself
_SHT_SYMTAB = 2
_STB_LOCAL = 0


def undefined_symbols(obj: bytes, name: str = "<bundle>") -> list[str]:
    """Names of the global symbols an ELF64 relocatable object references but does not define."""
    try:
        return _undefined_symbols(obj)
    except (struct.error, IndexError, ValueError) as exc:
        raise BundleFormatError(f"{name}: malformed host object (symbol table: {exc})") from None


def _undefined_symbols(obj: bytes) -> list[str]:
    if obj[:4] != b"\x7fELF" or obj[4] != 2 or obj[5] != 1:
        raise ValueError("not a little-endian ELF64 object")
    shoff, = struct.unpack_from("<Q", obj, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", obj, 0x3A)
    names: list[str] = []
    for index in range(shnum):
        header = struct.unpack_from("<IIQQQQIIQQ", obj, shoff + index * shentsize)
        if header[1] != _SHT_SYMTAB:
            continue
        sym_offset, sym_size, strtab_index, entsize = header[4], header[5], header[6], header[9]
        strtab = struct.unpack_from("<IIQQQQIIQQ", obj, shoff + strtab_index * shentsize)
        str_offset = strtab[4]
        for sym in range(sym_offset, sym_offset + sym_size, entsize or 24):
            st_name, st_info, _other, st_shndx = struct.unpack_from("<IBBH", obj, sym)
            if st_shndx != 0 or st_name == 0 or (st_info >> 4) == _STB_LOCAL:
                continue
            end = obj.index(b"\0", str_offset + st_name)
            names.append(obj[str_offset + st_name:end].decode())
    return names


def _open(path: str | None) -> ctypes.CDLL | None:
    if path is None:
        return None
    try:
        return ctypes.CDLL(path)
    except OSError:
        return None


@functools.cache
def _system_libraries() -> list[ctypes.CDLL]:
    """The allowed libraries, opened for the symbol check and made visible to the JIT linker
    (libgcc_s, home of compiler builtins such as `__truncsfhf2`, is often not loaded yet)."""
    libraries = []
    for soname, short in _SYSTEM_LIBRARIES:
        library = _open(soname)
        if library is None:
            import ctypes.util

            library = _open(ctypes.util.find_library(short))
        if library is not None:
            libraries.append(library)
    return libraries


@functools.cache
def _mcjit_libraries() -> None:
    """Make the allowed libraries visible to MCJIT's symbol resolution."""
    import llvmlite.binding as llvm

    for library in _system_libraries():
        try:
            llvm.load_library_permanently(library._name)
        except RuntimeError:
            continue


def _in_system_library(symbol: str) -> bool:
    for library in _system_libraries():
        try:
            getattr(library, symbol)
        except AttributeError:
            continue
        return True
    return False


def check_symbols(obj: bytes, bindings: Mapping[str, int], name: str = "<bundle>") -> None:
    """Raise BundleFormatError unless every undefined symbol of `obj` resolves as allowed."""
    for symbol in undefined_symbols(obj, name):
        if symbol in bindings or symbol in _LINKER_DEFINED:
            continue
        if symbol in ABI_BY_NAME:
            raise BundleFormatError(
                f"{name}: host code calls runtime function '{symbol}', which this device "
                "does not provide")
        if symbol.startswith("nova_rt_"):
            raise BundleFormatError(
                f"{name}: host code references unknown runtime function '{symbol}' (not in the "
                "runtime ABI of this Nova; was the file built by another version?)")
        if not _in_system_library(symbol):
            raise BundleFormatError(
                f"{name}: host code references undefined symbol '{symbol}', which is neither a "
                "runtime ABI function nor in libc/libm")


class LinkedObject(MutableRecord):
    """A host object linked into the process. Keep it alive as long as its code may run."""

    __match_args__ = ("engine", "name")
    _fields = __match_args__

    engine: object  # a LoadedObject, or an llvmlite ExecutionEngine
    name: str

    def __init__(self, engine: object, name: str) -> None:
        self.engine = engine
        self.name = name

    def _address(self, symbol: str, function: bool) -> int:
        from nova.runtime.objload import LoadedObject

        engine = self.engine
        if isinstance(engine, LoadedObject):
            address = engine.address(symbol)
        elif function:
            address = engine.get_function_address(symbol)  # type: ignore[attr-defined]
        else:
            address = engine.get_global_value_address(symbol)  # type: ignore[attr-defined]
        if not address:
            raise BundleFormatError(f"{self.name}: host object does not define '{symbol}'")
        return int(address)

    def function_address(self, symbol: str) -> int:
        """Address of a defined function; BundleFormatError when the object lacks it."""
        return self._address(symbol, True)

    def global_address(self, symbol: str) -> int:
        """Address of a defined global variable; BundleFormatError when the object lacks it."""
        return self._address(symbol, False)


def _libc_heap() -> dict[str, int]:
    libc = ctypes.CDLL(None)
    return {n: ctypes.cast(getattr(libc, n), ctypes.c_void_p).value or 0 for n in HEAP_SYMBOLS}


_LIBC_HEAP = _libc_heap()


def link_object(obj: bytes, bindings: Mapping[str, int], name: str = "<bundle>") -> LinkedObject:
    """Check and link `obj` against `bindings` (runtime ABI name -> address); returns the live
    object holding its code. objload places it (bindings first, then the process's symbols);
    MCJIT (`llvm.add_symbol`) is the fallback. `bindings` may rebind HEAP_SYMBOLS for this
    object (the cpu device's host heap); in MCJIT's process-wide table they are libc's again
    afterwards."""
    check_symbols(obj, bindings, name)
    from nova.bundle.verify import verify_object
    from nova.runtime.objload import LoadedObject, ObjectLoadError

    try:
        return LinkedObject(LoadedObject(verify_object(obj, name), name, bindings), name)
    except ObjectLoadError:
        pass
    import llvmlite.binding as llvm

    from nova.runtime.native_support import host_target_machine

    _mcjit_libraries()
    with _LINK_LOCK:
        for symbol, address in {**_LIBC_HEAP, **bindings}.items():
            llvm.add_symbol(symbol, address)
        engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), host_target_machine())
        try:
            engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
            engine.finalize_object()
        except RuntimeError as exc:
            raise BundleFormatError(f"{name}: cannot link host object: {exc}") from None
        finally:
            for symbol, address in _LIBC_HEAP.items():
                llvm.add_symbol(symbol, address)
    return LinkedObject(engine, name)
