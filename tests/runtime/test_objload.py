"""nova.runtime.objload: placing x86-64 objects without LLVM (code, data, relocations, external
symbols and bindings), its clear refusals, the MCJIT fallback of the cpu device, and the runtime
objects it reads from the cache directory."""

from __future__ import annotations

import ctypes
import struct

import llvmlite.binding as llvm
import numpy as np
import pytest

import nova
from nova import config
from nova.bundle.elf import parse_elf
from nova.bundle.verify import verify_object
from nova.runtime import objload
from nova.runtime.cpu import module as cpu_module
from nova.runtime.objload import LoadedObject, ObjectLoadError

IR = r"""
@table = global [4 x i64] [i64 10, i64 20, i64 30, i64 40]
@counter = global i64 0
@message = private constant [6 x i8] c"hello\00"

declare i64 @labs(i64)
declare i64 @strlen(ptr)
declare i64 @nova_test_bound(i64)

define i64 @pick(i64 %i) {
  %p = getelementptr [4 x i64], ptr @table, i64 0, i64 %i
  %v = load i64, ptr %p
  %old = load i64, ptr @counter
  %new = add i64 %old, 1
  store i64 %new, ptr @counter
  %n = call i64 @labs(i64 %v)
  %len = call i64 @strlen(ptr @message)
  %s = add i64 %n, %len
  ret i64 %s
}

define i64 @bound(i64 %x) {
  %r = call i64 @nova_test_bound(i64 %x)
  ret i64 %r
}
"""


def _object(ir: str = IR) -> bytes:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    module = llvm.parse_assembly(ir)
    machine = llvm.Target.from_triple(llvm.get_process_triple()).create_target_machine(
        opt=2, reloc="static", codemodel="large")
    return bytes(machine.emit_object(module))


BOUND = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)(lambda x: 3 * x)


def _load(data: bytes) -> LoadedObject:
    bindings = {"nova_test_bound": ctypes.cast(BOUND, ctypes.c_void_p).value or 0}
    return LoadedObject(verify_object(data, "test object"), "test object", bindings)


def test_places_code_data_and_resolves_symbols() -> None:
    loaded = _load(_object())
    pick = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)(loaded.address("pick"))
    assert [pick(i) for i in range(4)] == [15, 25, 35, 45]  # table + strlen("hello")
    assert ctypes.c_int64.from_address(loaded.address("counter")).value == 4  # writable data
    bound = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)(loaded.address("bound"))
    assert bound(14) == 42  # an undefined symbol bound by the caller
    assert loaded.address("no_such_symbol") == 0


def _retype_relocations(data: bytes, kind: int) -> bytes:
    elf = parse_elf(data)
    out = bytearray(data)
    for section in elf.sections:
        if section.type == objload.SHT_RELA:
            for pos in range(section.offset, section.offset + section.size, 24):
                _, info, _ = struct.unpack_from("<QQq", out, pos)
                struct.pack_into("<Q", out, pos + 8, (info >> 32) << 32 | kind)
    return bytes(out)


def test_refuses_relocations_it_does_not_place() -> None:
    data = _retype_relocations(_object(), 2)  # R_X86_64_PC32
    with pytest.raises(ObjectLoadError, match="relocation type 2 is not supported"):
        LoadedObject(parse_elf(data), "test object", {"nova_test_bound": 1})


def test_refuses_unresolved_symbols_by_name() -> None:
    with pytest.raises(ObjectLoadError, match="undefined symbol 'nova_test_bound'"):
        LoadedObject(verify_object(_object(), "test object"), "test object")


def _scale(out, x):
    i = nova.global_id(0)
    if i < out.shape[0]:
        out[i] = x[i] * 3


def test_cpu_device_falls_back_to_mcjit(cpu_device, monkeypatch) -> None:
    class Refusing(LoadedObject):
        def __init__(self, *args: object, **kwargs: object) -> None:
            raise ObjectLoadError("refused for the test")

    monkeypatch.setattr(cpu_module, "LoadedObject", Refusing)
    kern = nova.kernel(_scale, device=cpu_device)
    x = np.arange(10, dtype=np.float32)
    out = np.zeros_like(x)
    kern[1, 32](out, x)
    np.testing.assert_array_equal(out, x * 3)
    (plan,) = kern._plans.values()
    engine = plan.function.module._engine  # type: ignore[attr-defined]
    assert isinstance(engine, llvm.ExecutionEngine)


def test_runtime_objects_are_compiled_once_and_read_back(tmp_path) -> None:
    ir = "define i64 @seven() {\n  ret i64 7\n}\n"
    with config.scoped(cache_dir=tmp_path, cache_enabled=True):
        first = objload.compiled_ir("test-module", ir)
        (entry,) = (tmp_path / "runtime").iterdir()
        assert entry.name.startswith("test-module-")
        assert objload.compiled_ir("test-module", ir) == first
        entry.write_bytes(b"torn")  # a damaged entry is compiled again, not trusted
        assert objload.compiled_ir("test-module", ir) == first
        loaded = objload.load_ir("test-module", ir)
    assert loaded is not None
    assert ctypes.CFUNCTYPE(ctypes.c_int64)(loaded.address("seven"))() == 7


SLACK_IR = r"""
@buf = internal global [16 x i8] zeroinitializer
@tag = internal constant [4 x i8] c"abcd", align 1

define i32 @poke() {
  %last = getelementptr [16 x i8], ptr @buf, i64 0, i64 15
  store volatile i8 7, ptr %last
  %t = load volatile i32, ptr @tag
  ret i32 %t
}
"""


def test_a_section_shorter_than_its_accesses_does_not_spill_into_the_next() -> None:
    # regression (the full mutation sweep): a resealed .lbss one byte short must not let the
    # kernel's write land in the next section, as it does not under MCJIT
    data = bytearray(_object(SLACK_IR))
    elf = parse_elf(bytes(data))
    (bss,) = [s for s in elf.sections if s.name.endswith("bss")]
    assert bss.size == 16
    shoff = struct.unpack_from("<Q", data, 40)[0]
    struct.pack_into("<Q", data, shoff + bss.index * 64 + 32, 15)
    loaded = LoadedObject(parse_elf(bytes(data)), "test object")
    poke = ctypes.CFUNCTYPE(ctypes.c_int32)(loaded.address("poke"))
    assert poke().to_bytes(4, "little") == b"abcd"
