"""Load an x86-64 ELF relocatable object into executable memory without LLVM.

Why: a warm-cache launch of a Python kernel on the cpu device must not pay for importing llvmlite
(tens of milliseconds, most of a cold start) only to place a few kilobytes of code. The objects
Nova writes for the CPU device (and the fault guard's) use LLVM's large code model with static
relocations, so placing them needs little: every allocatable section is copied into one anonymous
mapping, each on pages of its own (code first, made read+execute; an access just past a
section's declared end stays in its own slack, as with MCJIT), NOBITS sections are zeroed, and the
only relocation types are `R_X86_64_64` (S + A) and `R_X86_64_PC64` (S + A - P), exactly those
`nova.bundle.verify` admits. External symbols resolve to the caller's
`bindings` (the runtime ABI of a host object), else in the process (libc, libm: `dlopen(NULL)`) and
libgcc_s (compiler builtins), as MCJIT resolves them.

`compiled_ir(name, ir)` gives the object of a runtime module written in LLVM IR (the cpu fault
guard, the native unwind frame): compiled once with llvmlite and kept in `<cache_dir>/runtime/`,
so later processes place it without importing llvmlite.

Callers verify the object first (`nova.bundle.verify.verify_object`, which returns the parsed file
used here). An object this loader cannot place (an unknown relocation type, a symbol it cannot
resolve) raises `ObjectLoadError` naming it; `nova.runtime.cpu.module` then falls back to MCJIT.
EH frames are copied but not registered: nothing unwinds through kernels (faults leave them by
`siglongjmp`).
"""

from __future__ import annotations

import _thread
import contextlib
import ctypes
import struct
from typing import TYPE_CHECKING

from nova.bundle.elf import SHN_UNDEF, SHT_NOBITS, ElfFile, ElfSection, ElfSymbol
from nova.errors import DeviceError
from nova.hashing import sha256

if TYPE_CHECKING:
    from collections.abc import Mapping

SHT_RELA = 4
SHF_ALLOC = 0x2
SHF_EXECINSTR = 0x4
SHN_ABS = 0xFFF1
R_X86_64_64 = 1
R_X86_64_PC64 = 24
PROT_READ, PROT_WRITE, PROT_EXEC = 1, 2, 4
MAP_PRIVATE, MAP_ANONYMOUS = 0x02, 0x20
PAGE = 4096
_RELA = struct.Struct("<QQq")
_U64 = (1 << 64) - 1
_U64_FIELD = struct.Struct("<Q")


class ObjectLoadError(DeviceError):
    """The object holds something this loader does not place (MCJIT may still load it)."""


_libc: ctypes.CDLL | None = None
_more_libraries: list[ctypes.CDLL] | None = None
_lock = _thread.allocate_lock()
_MORE_SONAMES = ("libm.so.6", "libgcc_s.so.1")
"""Searched, in this order, for symbols the process's global namespace lacks (opened on the
first such symbol: Nova's objects rarely need one, and dlopen costs a cold start)."""


def _libraries() -> tuple[ctypes.CDLL, list[ctypes.CDLL]]:
    """(the process's global namespace with mmap/mprotect typed, libraries to resolve in)."""
    global _libc
    with _lock:
        if _libc is None:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.mmap.restype = ctypes.c_void_p
            libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                                  ctypes.c_int, ctypes.c_long)
            libc.mprotect.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
            libc.munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
            _libc = libc
        return _libc, [_libc]


def _more() -> list[ctypes.CDLL]:
    global _more_libraries
    with _lock:
        if _more_libraries is None:
            found = []
            for soname in _MORE_SONAMES:
                try:
                    found.append(ctypes.CDLL(soname))
                except OSError:
                    continue
            _more_libraries = found
        return _more_libraries


def _address_in(library: ctypes.CDLL, name: str) -> int | None:
    try:
        return ctypes.cast(getattr(library, name), ctypes.c_void_p).value or 0
    except AttributeError:
        return None


def _external(name: str, what: str) -> int:
    libc, _ = _libraries()
    found = _address_in(libc, name)
    if found is not None:
        return found
    for library in _more():
        found = _address_in(library, name)
        if found is not None:
            return found
    raise ObjectLoadError(f"{what}: undefined symbol {name!r} is not in libc, libm or libgcc_s")


def _align(value: int, alignment: int) -> int:
    return (value + alignment - 1) // alignment * alignment if alignment > 1 else value


class LoadedObject:
    """One object placed in memory: `address(name)` of its global symbols; the mapping lives as
    long as this object (kernels of it must not run after it is dropped)."""

    def __init__(self, elf: ElfFile, what: str, bindings: Mapping[str, int] | None = None) -> None:
        self.what = what
        self._bindings = bindings or {}
        self._base = 0
        self._size = 0
        sections = [s for s in elf.sections if s.flags & SHF_ALLOC]
        code = [s for s in sections if s.flags & SHF_EXECINSTR]
        data = [s for s in sections if not s.flags & SHF_EXECINSTR]
        # each section on pages of its own (alignment <= PAGE, verify's MAX_ALIGN), as MCJIT
        # places them: an access just past a section's declared end stays in its own slack
        offsets: dict[int, int] = {}
        end = 0
        for section in code:
            offsets[section.index] = end
            end = _align(end + max(section.size, 1), PAGE)
        code_bytes = end
        for section in data:
            offsets[section.index] = end
            end = _align(end + max(section.size, 1), PAGE)
        self._map(max(end, PAGE))
        # each section's bytes, relocated here, then copied into the mapping once
        contents = {s.index: bytearray(elf.section_data(s)) for s in sections
                    if s.type != SHT_NOBITS and s.size}  # the mapping starts zeroed
        symbols = elf.symbols()
        self._relocate(elf, symbols, offsets, contents)
        for index, patched in contents.items():
            ctypes.memmove(self._base + offsets[index], bytes(patched), len(patched))
        self.symbols = {s.name: self._base + offsets[s.shndx] + s.value for s in symbols
                        if s.is_global and s.defined and s.shndx in offsets}
        if code_bytes:
            libc, _ = _libraries()
            if libc.mprotect(self._base, code_bytes, PROT_READ | PROT_EXEC) != 0:
                raise ObjectLoadError(f"{what}: mprotect failed (errno {ctypes.get_errno()})")

    def _map(self, size: int) -> None:
        libc, _ = _libraries()
        base = libc.mmap(None, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        if base is None or base == ctypes.c_void_p(-1).value:
            raise DeviceError(f"{self.what}: cannot map {size} bytes for its code "
                              f"(errno {ctypes.get_errno()})")
        self._base, self._size = base, size

    def _relocate(self, elf: ElfFile, symbols: tuple[ElfSymbol, ...], offsets: dict[int, int],
                  contents: dict[int, bytearray]) -> None:
        resolved: dict[int, int] = {}  # symbol index -> address
        for rela in elf.sections:
            if rela.type != SHT_RELA or rela.info not in offsets:
                continue  # relocations of a section that is not loaded (none in Nova's objects)
            target = elf.sections[rela.info]
            data = contents.get(target.index)
            if data is None:
                raise ObjectLoadError(f"{self.what}: relocations of {target.name}, which has no "
                                      f"contents")
            section_base = self._base + offsets[target.index]
            raw = elf.section_data(rela)
            for offset, info, addend in _RELA.iter_unpack(raw[:len(raw) - len(raw) % _RELA.size]):
                index = info >> 32
                symbol = resolved.get(index)
                if symbol is None:
                    symbol = resolved[index] = self._symbol_address(symbols, index, offsets)
                self._apply(target, data, section_base, offset, info & 0xFFFFFFFF, symbol,
                            addend)

    def _symbol_address(self, symbols: tuple[ElfSymbol, ...], index: int,
                        offsets: dict[int, int]) -> int:
        if index >= len(symbols):
            raise ObjectLoadError(f"{self.what}: relocation symbol {index} is out of range")
        symbol = symbols[index]
        if symbol.shndx == SHN_UNDEF:
            bound = self._bindings.get(symbol.name)
            return bound if bound is not None else _external(symbol.name, self.what)
        if symbol.shndx == SHN_ABS:
            return symbol.value
        if symbol.shndx not in offsets:
            raise ObjectLoadError(f"{self.what}: symbol {symbol.name!r} lies in a section that "
                                  "is not loaded")
        return self._base + offsets[symbol.shndx] + symbol.value

    def _apply(self, target: ElfSection, data: bytearray, section_base: int, offset: int,
               kind: int, symbol: int, addend: int) -> None:
        if offset + 8 > target.size:
            raise ObjectLoadError(f"{self.what}: a relocation patches bytes outside "
                                  f"{target.name}")
        if kind == R_X86_64_64:
            value = symbol + addend
        elif kind == R_X86_64_PC64:
            value = symbol + addend - (section_base + offset)
        else:
            raise ObjectLoadError(f"{self.what}: relocation type {kind} is not supported")
        _U64_FIELD.pack_into(data, offset, value & _U64)

    def address(self, name: str) -> int:
        """The address of a global symbol the object defines, or 0."""
        return self.symbols.get(name, 0)

    def __del__(self) -> None:
        if getattr(self, "_base", 0) and _libc is not None:
            _libc.munmap(self._base, self._size)
            self._base = 0


def compiled_ir(name: str, ir: str) -> bytes:
    """`ir` compiled to an x86-64 object (large code model, static relocations: what this loader
    places), read from `<cache_dir>/runtime/` when an earlier process compiled it."""
    from nova import config
    from nova.runtime.digested import read_digested, write_digested

    cfg = config.get()
    key = sha256(f"{name}/1/x86_64-large-static\n{ir}".encode()).hexdigest()
    path = cfg.cache_path("runtime", f"{name}-{key[:32]}.o")
    if cfg.cache_enabled:
        cached = read_digested(path)
        if cached is not None:
            return cached
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    module = llvm.parse_assembly(ir)
    module.verify()
    machine = llvm.Target.from_triple(llvm.get_process_triple()).create_target_machine(
        opt=2, reloc="static", codemodel="large")
    data = bytes(machine.emit_object(module))
    if cfg.cache_enabled:
        with contextlib.suppress(OSError):  # an unwritable cache only costs compiling again
            write_digested(path, data)
    return data


def load_ir(name: str, ir: str) -> LoadedObject | None:
    """The runtime module `ir` placed in memory, or None when this loader cannot place it (the
    caller then JIT-compiles it with MCJIT)."""
    from nova.bundle.verify import verify_object
    from nova.errors import BundleFormatError

    try:
        return LoadedObject(verify_object(compiled_ir(name, ir), name), name)
    except (ObjectLoadError, BundleFormatError):
        return None
