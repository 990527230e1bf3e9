"""The NVPTX device target: gpu.module programs lowered to LLVM IR and PTX, every PTX checked by
`ptxas -arch=sm_90` when ptxas is installed (the check is skipped, not faked, without it)."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest

from nova.backends.device import DeviceLowering, DeviceTarget, lower_device_module
from nova.backends.nvptx.ptx import assemble_cubin, emit_ptx, ptxas_path
from nova.errors import BackendError, UnsupportedError
from nova.ir.parser import parse_mlir

HAVE_PTXAS = ptxas_path() is not None


@dataclass
class Compiled:
    lowering: DeviceLowering
    llvm: str
    ptx: str

    def kernel(self, name: str):  # type: ignore[no-untyped-def]
        return next(k for k in self.lowering.kernels if k.name == name)


def compile_module(body: str, check_ptxas: bool = True) -> Compiled:
    """Wrap `body` in a gpu.module, lower it for NVPTX, emit PTX and (if present) run ptxas."""
    text = f"module attributes {{gpu.container_module}} {{\n gpu.module @m {{\n{body}\n }}\n}}"
    module = parse_mlir(text, "nvptx-test.mlir")
    gpu_module = next(op for op in module.body.block.ops if op.name == "gpu.module")
    lowering = lower_device_module(gpu_module, DeviceTarget.NVPTX, "sm_90")
    llvm_ir = str(lowering.llvm_module)
    ptx = emit_ptx(llvm_ir, "sm_90")
    if check_ptxas and HAVE_PTXAS:
        cubin = assemble_cubin(ptx, "sm_90")
        assert cubin is not None and cubin[:4] == b"\x7fELF"
    return Compiled(lowering, llvm_ir, ptx)


def kernel(args: str, body: str, attrs: str = "", name: str = "k") -> str:
    return f"""
    gpu.func @{name}({args}) kernel {attrs} {{
      {body}
      gpu.return
    }}"""


def test_kernel_parameters_follow_the_runtime_abi() -> None:
    c = compile_module(kernel(
        "%a: memref<?x4xf32>, %n: index, %x: f64, %b: memref<i32>",
        """%c0 = arith.constant 0 : index
           %v = memref.load %a[%n, %c0] : memref<?x4xf32>""",
        "attributes {known_block_size = array<i32: 64, 2, 1>}"))
    k = c.kernel("k")
    assert [p.llvm_type for p in k.params] == (
        ["ptr", "ptr", "i64", "i64", "i64", "i64", "i64", "i64", "double", "ptr", "ptr", "i64"])
    assert [p.arg_index for p in k.params] == [0] * 7 + [1, 2, 3, 3, 3]
    assert [p.size for p in k.params] == [8] * 8 + [8, 8, 8, 8]
    assert [a.kind for a in k.args] == ["memref", "scalar", "scalar", "memref"]
    assert k.args[0].shape == (-1, 4) and k.args[0].dtype == "f32"
    assert ".entry k(" in c.ptx and ".reqntid 64, 2, 1" in c.ptx
    assert 'define external ptx_kernel void @"k"' in c.llvm
    assert not k.uses_barriers and k.static_shared_bytes == 0


def test_index_ops_read_special_registers() -> None:
    names = ["thread_id x", "block_id y", "block_dim z", "grid_dim x", "global_id y",
             "cluster_id x", "cluster_dim y", "cluster_block_id z", "cluster_dim_blocks x"]
    body = "\n".join(f"%v{i} = gpu.{n}" for i, n in enumerate(names))
    body += """
      %l = gpu.lane_id
      %s = gpu.subgroup_id : index
      %ns = gpu.num_subgroups : index
      %sz = gpu.subgroup_size : index"""
    total = "%t0 = arith.addi %v0, %v1 : index\n"
    for i in range(2, len(names)):
        total += f"%t{i - 1} = arith.addi %t{i - 2}, %v{i} : index\n"
    last = f"%t{len(names) - 2}"
    body += f"""
      {total}
      %a = arith.addi {last}, %l : index
      %b = arith.addi %a, %s : index
      %d = arith.addi %b, %ns : index
      %e = arith.addi %d, %sz : index
      %c0 = arith.constant 0 : index
      memref.store %e, %out[%c0] : memref<1xindex>"""
    c = compile_module(kernel("%out: memref<1xindex>", body))
    for reg in ("%tid.x", "%ctaid.y", "%ntid.z", "%nctaid.x", "%clusterid.x", "%nclusterid.y",
                "%cluster_ctaid.z", "%cluster_nctaid.x", "%laneid"):
        assert reg in c.ptx, reg


@pytest.mark.parametrize("ty", ["i32", "f32", "i64", "f64"])
@pytest.mark.parametrize("mode", ["xor", "up", "down", "idx"])
def test_shuffles(ty: str, mode: str) -> None:
    c = compile_module(kernel(f"%m: memref<64x{ty}>, %ok: memref<64xi1>", f"""
      %t = gpu.thread_id x
      %v = memref.load %m[%t] : memref<64x{ty}>
      %o = arith.constant 3 : i32
      %w = arith.constant 16 : i32
      %r, %valid = gpu.shuffle {mode} %v, %o, %w : {ty}
      memref.store %r, %m[%t] : memref<64x{ty}>
      memref.store %valid, %ok[%t] : memref<64xi1>"""))
    ptx_mode = {"xor": "bfly"}.get(mode, mode)
    lines = re.findall(rf"shfl\.sync\.{ptx_mode}\.b32\s+[^;]+;", c.ptx)
    assert len(lines) == (2 if ty in ("i64", "f64") else 1)
    # up: clamp 0 (source lane >= 0); the others: MLIR's clamp width - 1; every mode also
    # checks `laneid < width`, exact for any width.
    clamp = 0 if mode == "up" else 15
    assert all(f", 3, {clamp}, " in line for line in lines), lines
    assert "%laneid" in c.ptx


def test_shuffle_of_narrow_types_and_dynamic_width() -> None:
    compile_module(kernel("%m: memref<32xf16>, %w: i32", """
      %t = gpu.thread_id x
      %v = memref.load %m[%t] : memref<32xf16>
      %o = arith.constant 1 : i32
      %r, %valid = gpu.shuffle xor %v, %o, %w : f16
      memref.store %r, %m[%t] : memref<32xf16>"""))


REDUCTIONS = [("add", "i32"), ("mul", "i32"), ("and", "i32"), ("or", "i32"), ("xor", "i32"),
              ("minsi", "i32"), ("maxsi", "i32"), ("minui", "i32"), ("maxui", "i32"),
              ("add", "f32"), ("mul", "f32"), ("minnumf", "f32"), ("maxnumf", "f32"),
              ("minimumf", "f32"), ("maximumf", "f32"), ("add", "f64"), ("add", "i64")]


@pytest.mark.parametrize(("op", "ty"), REDUCTIONS)
def test_all_reduce_ops(op: str, ty: str) -> None:
    c = compile_module(kernel(f"%m: memref<1024x{ty}>", f"""
      %t = gpu.thread_id x
      %v = memref.load %m[%t] : memref<1024x{ty}>
      %r = gpu.all_reduce {op} %v uniform {{}} : ({ty}) -> ({ty})
      memref.store %r, %m[%t] : memref<1024x{ty}>"""))
    k = c.kernel("k")
    assert k.uses_barriers
    width = {"i32": 4, "f32": 4, "i64": 8, "f64": 8}[ty]
    assert k.static_shared_bytes == 33 * width
    assert "bar.sync" in c.ptx and "shfl.sync.down" in c.ptx and "shfl.sync.idx" not in c.ptx


def test_all_reduce_custom_region_3d_block_in_a_loop() -> None:
    c = compile_module(kernel("%m: memref<8x8x4xf32>, %n: index", """
      %x = gpu.thread_id x
      %y = gpu.thread_id y
      %z = gpu.thread_id z
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %v = memref.load %m[%x, %y, %z] : memref<8x8x4xf32>
      %acc = scf.for %i = %c0 to %n step %c1 iter_args(%a = %v) -> (f32) {
        %r = gpu.all_reduce %a {
        ^bb0(%p: f32, %q: f32):
          %s = arith.addf %p, %q : f32
          %h = arith.constant 0.5 : f32
          %t = arith.mulf %s, %h : f32
          gpu.yield %t : f32
        } : (f32) -> (f32)
        scf.yield %r : f32
      }
      memref.store %acc, %m[%x, %y, %z] : memref<8x8x4xf32>""",
        "attributes {known_block_size = array<i32: 8, 8, 4>}"))
    assert c.ptx.count("bar.sync") >= 2


def test_all_reduce_within_one_warp_needs_no_shared_memory() -> None:
    c = compile_module(kernel("%m: memref<20xi32>", """
      %t = gpu.thread_id x
      %v = memref.load %m[%t] : memref<20xi32>
      %r = gpu.all_reduce maxsi %v uniform {} : (i32) -> (i32)
      memref.store %r, %m[%t] : memref<20xi32>""",
        "attributes {known_block_size = array<i32: 20, 1, 1>}"))
    assert "bar.sync" not in c.ptx and ".shared" not in c.ptx
    assert "shfl.sync.idx" in c.ptx
    assert c.kernel("k").static_shared_bytes == 0


@pytest.mark.parametrize("cluster", ["", "cluster(size = 4)", "cluster(size = 8, stride = 2)",
                                     "cluster(size = 32)"])
def test_subgroup_reduce(cluster: str) -> None:
    c = compile_module(kernel("%m: memref<100xf32>", f"""
      %t = gpu.thread_id x
      %v = memref.load %m[%t] : memref<100xf32>
      %r = gpu.subgroup_reduce add %v {cluster} : (f32) -> f32
      memref.store %r, %m[%t] : memref<100xf32>"""))
    assert "shfl.sync.down" in c.ptx and "shfl.sync.idx" in c.ptx
    assert c.kernel("k").uses_barriers


def test_printf_promotes_varargs() -> None:
    c = compile_module(kernel("%m: memref<4xf32>", """
      %t = gpu.thread_id x
      %v = memref.load %m[%t] : memref<4xf32>
      %b = arith.constant true
      %s = arith.constant 7 : i16
      gpu.printf "t=%lld v=%f b=%d s=%d\\n", %t, %v, %b, %s : index, f32, i1, i16"""))
    assert "vprintf" in c.ptx
    assert "fpext float" in c.llvm and "{i64, double, i32, i32}" in c.llvm
    assert "t=%lld v=%f b=%d s=%d" in c.llvm


def test_printf_without_arguments() -> None:
    c = compile_module(kernel("", 'gpu.printf "hello\\n"'))
    assert "vprintf" in c.ptx


def test_assert_calls_assertfail_and_traps() -> None:
    c = compile_module(kernel("%m: memref<4xi32>", """
      %t = gpu.thread_id x
      %v = memref.load %m[%t] : memref<4xi32>
      %z = arith.constant 0 : i32
      %ok = arith.cmpi sgt, %v, %z : i32
      cf.assert %ok, "value must be positive"
      memref.store %z, %m[%t] : memref<4xi32>"""))
    assert "__assertfail" in c.ptx and "trap;" in c.ptx
    assert "value must be positive" in c.llvm and "nvptx-test.mlir" in c.llvm


def test_workgroup_and_private_attributions_and_shared_globals() -> None:
    c = compile_module("""
    memref.global "private" @tile : memref<16x16xf32, 3>
    """ + kernel("%m: memref<256xf32>", """
      %t = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %v = memref.load %m[%t] : memref<256xf32>
      memref.store %v, %wg[%t] : memref<256xf32, 3>
      memref.store %v, %pv[%c0] : memref<8xf32>
      %g = memref.get_global @tile : memref<16x16xf32, 3>
      memref.store %v, %g[%c0, %c0] : memref<16x16xf32, 3>
      gpu.barrier
      %w = memref.load %wg[%c0] : memref<256xf32, 3>
      %p = memref.load %pv[%c0] : memref<8xf32>
      %s = arith.addf %w, %p : f32
      memref.store %s, %m[%t] : memref<256xf32>""").replace(
        "kernel", "workgroup(%wg: memref<256xf32, 3>) private(%pv: memref<8xf32>) kernel", 1))
    k = c.kernel("k")
    assert k.static_shared_bytes == 256 * 4 + 16 * 16 * 4
    assert k.uses_barriers
    assert c.ptx.count(".shared") >= 2 and "bar.sync" in c.ptx


ATOMIC_KINDS = [("addf", "f32"), ("addi", "i32"), ("andi", "i32"), ("assign", "f32"),
                ("maximumf", "f32"), ("maxnumf", "f32"), ("maxs", "i32"), ("maxu", "i32"),
                ("minimumf", "f32"), ("minnumf", "f32"), ("mins", "i32"), ("minu", "i32"),
                ("mulf", "f32"), ("muli", "i32"), ("ori", "i32"), ("xori", "i64"),
                ("addf", "f64")]


@pytest.mark.parametrize(("kind", "ty"), ATOMIC_KINDS)
def test_atomic_rmw_on_global_memory(kind: str, ty: str) -> None:
    c = compile_module(kernel(f"%m: memref<4x{ty}>, %v: {ty}", f"""
      %c0 = arith.constant 0 : index
      %old = memref.atomic_rmw {kind} %v, %m[%c0] : ({ty}, memref<4x{ty}>) -> {ty}
      memref.store %old, %m[%c0] : memref<4x{ty}>"""))
    assert re.search(r"\batom\.", c.ptx)


@pytest.mark.parametrize(("kind", "ty"), ATOMIC_KINDS)
def test_atomic_rmw_on_shared_memory(kind: str, ty: str) -> None:
    body = kernel(f"%m: memref<32x{ty}>, %v: {ty}", f"""
      %c0 = arith.constant 0 : index
      %t = gpu.thread_id x
      %old = memref.atomic_rmw {kind} %v, %sh[%c0] : ({ty}, memref<4x{ty}, 3>) -> {ty}
      gpu.barrier
      %x = memref.load %sh[%c0] : memref<4x{ty}, 3>
      memref.store %x, %m[%t] : memref<32x{ty}>""")
    c = compile_module(body.replace("kernel", f"workgroup(%sh: memref<4x{ty}, 3>) kernel", 1))
    assert re.search(r"\batom\.[a-z_.]*shared", c.ptx)


MATH = ["sqrt", "absf", "floor", "ceil", "trunc", "round", "roundeven", "exp", "exp2", "expm1",
        "log", "log2", "log10", "log1p", "sin", "cos", "tan", "tanh", "sinh", "cosh", "atan",
        "asin", "acos", "cbrt", "rsqrt"]


@pytest.mark.parametrize("ty", ["f32", "f64", "f16"])
def test_math_functions_compile_without_libdevice(ty: str) -> None:
    body = [f"%x = memref.load %m[%c0] : memref<4x{ty}>"]
    prev = "%x"
    for i, name in enumerate(MATH):
        body.append(f"%r{i} = math.{name} {prev} : {ty}")
        prev = f"%r{i}"
    body.append(f"%p = math.powf {prev}, %x : {ty}")
    body.append(f"%q = math.atan2 %p, %x : {ty}")
    body.append(f"%f = math.fma %q, %x, %p : {ty}")
    body.append(f"%cs = math.copysign %f, %x : {ty}")
    if ty != "f64":
        body.append(f"%e = math.erf %cs : {ty}")
        prev = "%e"
    else:
        prev = "%cs"
    body.append(f"memref.store {prev}, %m[%c0] : memref<4x{ty}>")
    c = compile_module(kernel(f"%m: memref<4x{ty}>", "%c0 = arith.constant 0 : index\n"
                              + "\n".join(body)))
    assert "call" not in re.sub(r"//.*", "", c.ptx).replace("call.uni", "")


def test_f64_erf_is_rejected_with_a_located_error() -> None:
    with pytest.raises(UnsupportedError) as info:
        compile_module(kernel("%m: memref<4xf64>", """
      %c0 = arith.constant 0 : index
      %x = memref.load %m[%c0] : memref<4xf64>
      %e = math.erf %x : f64
      memref.store %e, %m[%c0] : memref<4xf64>"""))
    assert "math.erf" in str(info.value) and "nvptx-test.mlir:" in str(info.value)


def test_device_functions_calls_scf_and_heap() -> None:
    c = compile_module("""
    func.func @twice(%m: memref<?xf32>, %i: index) -> f32 {
      %v = memref.load %m[%i] : memref<?xf32>
      %w = arith.addf %v, %v : f32
      return %w : f32
    }
    """ + kernel("%m: memref<?xf32>, %n: index", """
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %tmp = memref.alloc(%n) : memref<?xf32>
      scf.for %i = %c0 to %n step %c1 {
        %v = func.call @twice(%m, %i) : (memref<?xf32>, index) -> f32
        memref.store %v, %tmp[%i] : memref<?xf32>
      }
      %t = gpu.thread_id x
      %w:2 = scf.while (%k = %c0, %s = %c0) : (index, index) -> (index, index) {
        %more = arith.cmpi slt, %k, %t : index
        scf.condition(%more) %k, %s : index, index
      } do {
      ^bb0(%a: index, %b: index):
        %a1 = arith.addi %a, %c1 : index
        %b1 = arith.addi %b, %a : index
        scf.yield %a1, %b1 : index, index
      }
      %x = memref.load %tmp[%w#1] : memref<?xf32>
      memref.store %x, %m[%c0] : memref<?xf32>
      memref.dealloc %tmp : memref<?xf32>"""))
    assert "malloc" in c.ptx and "free" in c.ptx
    assert ".func twice" not in c.ptx  # internal device functions are inlined away


def test_unsupported_op_in_a_kernel_is_located() -> None:
    with pytest.raises(UnsupportedError) as info:
        compile_module(kernel("%m: memref<4xf32>", """
      %c0 = arith.constant 0 : index
      %t = "test.op"() : () -> index"""))
    text = str(info.value)
    assert "test.op" in text and "gpu" in text and "nvptx-test.mlir:" in text


def test_backend_errors() -> None:
    with pytest.raises(BackendError, match="invalid device LLVM IR"):
        emit_ptx("define void @f( {", "sm_90")
    with pytest.raises(BackendError, match="invalid GPU architecture"):
        emit_ptx("", "volta")
    if HAVE_PTXAS:
        with pytest.raises(BackendError, match="ptxas failed"):
            assemble_cubin(".version 8.0\n.target sm_90\n.address_size 64\nbogus;", "sm_90")


def test_vector_print_uses_runner_formats() -> None:
    c = compile_module(kernel("%x: f32, %i: i32, %n: index", """
      vector.print %x : f32
      vector.print %i : i32 punctuation <comma>
      vector.print %n : index
      vector.print str "100%\\n"
      vector.print punctuation <open>"""))
    for spelled in ('c"%g\\0a\\00"', 'c"%lld, \\00"', 'c"%llu\\0a\\00"', 'c"100%%\\0a\\00"',
                    'c"( \\00"'):
        assert spelled in c.llvm, spelled
    assert c.ptx.count("vprintf") >= 5


def test_gpu_address_space_attributes() -> None:
    c = compile_module("""
    memref.global "private" @buf : memref<32xf32, #gpu.address_space<workgroup>>
    """ + kernel("%m: memref<32xf32, #gpu.address_space<global>>", """
      %t = gpu.thread_id x
      %v = memref.load %m[%t] : memref<32xf32, #gpu.address_space<global>>
      %g = memref.get_global @buf : memref<32xf32, #gpu.address_space<workgroup>>
      memref.store %v, %g[%t] : memref<32xf32, #gpu.address_space<workgroup>>
      memref.store %v, %pv[%t] : memref<32xf32, #gpu.address_space<private>>
      gpu.barrier
      %w = memref.load %g[%t] : memref<32xf32, #gpu.address_space<workgroup>>
      memref.store %w, %m[%t] : memref<32xf32, #gpu.address_space<global>>""").replace(
        "kernel", "private(%pv: memref<32xf32, #gpu.address_space<private>>) kernel", 1))
    assert "ptr addrspace(1)" in c.llvm and "ptr addrspace(3)" in c.llvm
    assert c.kernel("k").static_shared_bytes == 128
    assert "ld.global" in c.ptx and "st.shared" in c.ptx


def test_half_and_bfloat_arithmetic_math_and_shuffles() -> None:
    c = compile_module(kernel("%m: memref<4xbf16>, %n: memref<4xf16>", """
      %c0 = arith.constant 0 : index
      %a = memref.load %m[%c0] : memref<4xbf16>
      %b = memref.load %n[%c0] : memref<4xf16>
      %k = arith.constant 1.5 : bf16
      %h = arith.constant 2.25 : f16
      %s = arith.addf %a, %k : bf16
      %t = arith.mulf %b, %h : f16
      %e = arith.extf %s : bf16 to f32
      %f = arith.truncf %e : f32 to f16
      %g = arith.addf %f, %t : f16
      %x = math.exp %g : f16
      %y = math.sin %s : bf16
      %c1 = arith.constant 1 : i32
      %c32 = arith.constant 32 : i32
      %r, %ok = gpu.shuffle xor %y, %c1, %c32 : bf16
      memref.store %x, %n[%c0] : memref<4xf16>
      memref.store %r, %m[%c0] : memref<4xbf16>"""))
    assert "fadd bfloat %" in c.llvm and ", 0xR3FC0" in c.llvm
    assert "fmul half" in c.llvm
    assert c.kernel("k").args[0].dtype == "bf16"


@pytest.mark.parametrize(("arch", "version"), [("sm_80", "8.0"), ("sm_90", "8.0"),
                                               ("sm_90a", "8.0"), ("sm_100", "8.6")])
def test_ptx_for_other_architectures(arch: str, version: str) -> None:
    llvm_ir = ('target triple = "nvptx64-nvidia-cuda"\n'
               "define ptx_kernel void @k(ptr %p) {\n  store i32 1, ptr %p\n  ret void\n}\n")
    ptx = emit_ptx(llvm_ir, arch)
    assert f".version {version}" in ptx and f".target {arch}" in ptx
    if HAVE_PTXAS:
        assert assemble_cubin(ptx, arch)


def test_fpowi_compiles_and_wide_integer_division_is_rejected() -> None:
    compile_module(kernel("%m: memref<4xf32>, %n: i32", """
      %c0 = arith.constant 0 : index
      %x = memref.load %m[%c0] : memref<4xf32>
      %r = math.fpowi %x, %n : f32, i32
      memref.store %r, %m[%c0] : memref<4xf32>"""))
    with pytest.raises(UnsupportedError, match="i128"):
        compile_module(kernel("%a: i128, %m: memref<4xi64>", """
      %c0 = arith.constant 0 : index
      %c7 = arith.constant 7 : i128
      %q = arith.divsi %a, %c7 : i128
      %t = arith.trunci %q : i128 to i64
      memref.store %t, %m[%c0] : memref<4xi64>"""))


def test_memref_copy_between_global_and_shared_memory() -> None:
    body = kernel("%m: memref<?xf32>, %s: memref<4x8xf32, strided<[16, 2]>>", """
      %sub = memref.subview %m[0] [64] [1] : memref<?xf32> to memref<64xf32, strided<[1]>>
      %cast = memref.cast %sub : memref<64xf32, strided<[1]>> to memref<64xf32>
      memref.copy %cast, %wg : memref<64xf32> to memref<64xf32, 3>
      gpu.barrier
      memref.copy %wg, %cast : memref<64xf32, 3> to memref<64xf32>
      %t = memref.alloca() : memref<4x8xf32>
      memref.copy %s, %t : memref<4x8xf32, strided<[16, 2]>> to memref<4x8xf32>""")
    c = compile_module(body.replace("kernel", "workgroup(%wg: memref<64xf32, 3>) kernel", 1))
    assert "llvm.memcpy.p3.p0.i64" in c.llvm and "llvm.memcpy.p0.p3.i64" in c.llvm
    assert "copy.header" in c.llvm  # the strided copy loops


def test_libdevice_declarations_get_inline_bodies() -> None:
    c = compile_module("""
    func.func private @__nv_expf(f32) -> f32
    func.func private @__nv_pow(f64, f64) -> f64
    """ + kernel("%m: memref<4xf32>, %d: memref<4xf64>", """
      %c0 = arith.constant 0 : index
      %x = memref.load %m[%c0] : memref<4xf32>
      %y = memref.load %d[%c0] : memref<4xf64>
      %e = func.call @__nv_expf(%x) : (f32) -> f32
      %p = func.call @__nv_pow(%y, %y) : (f64, f64) -> f64
      memref.store %e, %m[%c0] : memref<4xf32>
      memref.store %p, %d[%c0] : memref<4xf64>"""))
    assert "__nv_" not in c.ptx  # inlined: no extern declarations left
    with pytest.raises(UnsupportedError, match="__nv_lgammaf"):
        compile_module("func.func private @__nv_lgammaf(f32) -> f32" + kernel("", ""))
    with pytest.raises(UnsupportedError, match="declared but not defined"):
        compile_module("func.func private @external(f32) -> f32" + kernel("", ""))
