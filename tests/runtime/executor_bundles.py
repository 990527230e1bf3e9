"""Hand-made .nova bundles for the executor tests (no compiler needed).

The host code is hand-written LLVM IR that calls the runtime ABI the way the host lowering does
(status checks followed by `nova_rt_raise`); the device module has a hand-written CPU object with
two kernels. The bundle writer embeds the images and the manifest, and seals the object.
"""

from __future__ import annotations

import llvmlite.binding as llvm
from llvmlite import ir

from nova.abi import CPU_LAUNCH_LLVM
from nova.bundle.format import EntryPoint, Kernel, KernelParam, TypeSpec
from nova.bundle.writer import DeviceImages, embed_device_images, seal_bundle

_LAUNCH = CPU_LAUNCH_LLVM

CPU_KERNELS_IR = f"""
define i32 @fill(ptr %params, ptr %launch) {{
entry:
  %slot = getelementptr ptr, ptr %params, i64 1
  %aligned.at = load ptr, ptr %slot
  %aligned = load ptr, ptr %aligned.at
  %bx.at = getelementptr {_LAUNCH}, ptr %launch, i32 0, i32 1, i32 0
  %bx = load i64, ptr %bx.at
  %begin.at = getelementptr {_LAUNCH}, ptr %launch, i32 0, i32 3
  %begin = load i64, ptr %begin.at
  %end.at = getelementptr {_LAUNCH}, ptr %launch, i32 0, i32 4
  %end = load i64, ptr %end.at
  br label %blocks
blocks:
  %b = phi i64 [ %begin, %entry ], [ %b.next, %threads.done ]
  %more = icmp slt i64 %b, %end
  br i1 %more, label %threads, label %exit
threads:
  %t = phi i64 [ 0, %blocks ], [ %t.next, %threads ]
  %base = mul i64 %b, %bx
  %i = add i64 %base, %t
  %f = sitofp i64 %i to float
  %v = fmul float %f, 2.0
  %at = getelementptr float, ptr %aligned, i64 %i
  store float %v, ptr %at
  %t.next = add i64 %t, 1
  %t.more = icmp slt i64 %t.next, %bx
  br i1 %t.more, label %threads, label %threads.done
threads.done:
  %b.next = add i64 %b, 1
  br label %blocks
exit:
  ret i32 0
}}

define i32 @faulty(ptr %params, ptr %launch) {{
entry:
  %error = getelementptr {_LAUNCH}, ptr %launch, i32 0, i32 7
  store [23 x i8] c"block 0 thread 0: oops\\00", ptr %error
  ret i32 1
}}
"""

KERNELS_PTX = """.version 8.0
.target sm_90
.address_size 64

.visible .entry fill(
	.param .u64 p0,
	.param .u64 p1,
	.param .u64 p2,
	.param .u64 p3,
	.param .u64 p4
)
{
	.reg .b32 %r<5>;
	.reg .b64 %rd<5>;
	.reg .f32 %f<3>;
	ld.param.u64 %rd1, [p1];
	cvta.to.global.u64 %rd2, %rd1;
	mov.u32 %r1, %ctaid.x;
	mov.u32 %r2, %ntid.x;
	mov.u32 %r3, %tid.x;
	mad.lo.s32 %r4, %r1, %r2, %r3;
	cvt.rn.f32.s32 %f1, %r4;
	add.f32 %f2, %f1, %f1;
	mul.wide.s32 %rd3, %r4, 4;
	add.s64 %rd4, %rd2, %rd3;
	st.global.f32 [%rd4], %f2;
	ret;
}

.visible .entry faulty()
{
	trap;
}
"""
"""The same two kernels for the GPU (PTX, JIT-compiled by the driver)."""

HOST_IR = """
declare i32 @nova_rt_module_load(ptr, ptr)
declare i32 @nova_rt_module_get_function(ptr, ptr, ptr)
declare i32 @nova_rt_launch(ptr, i64, i64, i64, i64, i64, i64, i32, ptr, ptr, i64)
declare i32 @nova_rt_stream_synchronize(ptr)
declare i32 @nova_rt_mem_alloc(ptr, i64, ptr, i32)
declare i32 @nova_rt_mem_free(ptr, ptr)
declare i32 @nova_rt_memset32(ptr, i32, i64, ptr)
declare i32 @nova_rt_memcpy(ptr, ptr, i64, ptr)
declare i32 @nova_rt_host_assert_fail(ptr)
declare void @nova_rt_raise()
declare void @nova_rt_print_memref_f32(i64, ptr)
declare void @nova_rt_print_i64(i64)
declare void @nova_rt_print_newline()

@__nova_modhandle_kmod = private global ptr null
@name.fill = private constant [5 x i8] c"fill\\00"
@name.faulty = private constant [7 x i8] c"faulty\\00"
@message = private constant [13 x i8] c"x must be >0\\00"

define private ptr @kernel(ptr %name) {
entry:
  %cached = load ptr, ptr @__nova_modhandle_kmod
  %have = icmp ne ptr %cached, null
  br i1 %have, label %lookup, label %load
load:
  %s0 = call i32 @nova_rt_module_load(ptr @__nova_modhandle_kmod, ptr @__nova_devmod_kmod)
  %f0 = icmp ne i32 %s0, 0
  br i1 %f0, label %fail, label %lookup
lookup:
  %module = load ptr, ptr @__nova_modhandle_kmod
  %out = alloca ptr
  %s1 = call i32 @nova_rt_module_get_function(ptr %out, ptr %module, ptr %name)
  %f1 = icmp ne i32 %s1, 0
  br i1 %f1, label %fail, label %done
done:
  %function = load ptr, ptr %out
  ret ptr %function
fail:
  call void @nova_rt_raise()
  unreachable
}

; main(memref<8xf32>): fill it with 2*i on the device (2 blocks of 4), then print it.
define void @__nova_entry_main(ptr %args, ptr %results) {
entry:
  %desc = load ptr, ptr %args
  %function = call ptr @kernel(ptr @name.fill)
  %params = alloca [5 x ptr]
  br label %fill
fill:
  %i = phi i64 [ 0, %entry ], [ %i.next, %fill ]
  %field = getelementptr i64, ptr %desc, i64 %i
  %slot = getelementptr ptr, ptr %params, i64 %i
  store ptr %field, ptr %slot
  %i.next = add i64 %i, 1
  %more = icmp slt i64 %i.next, 5
  br i1 %more, label %fill, label %launch
launch:
  %s0 = call i32 @nova_rt_launch(ptr %function, i64 2, i64 1, i64 1, i64 4, i64 1, i64 1,
                                 i32 0, ptr null, ptr %params, i64 5)
  %f0 = icmp ne i32 %s0, 0
  br i1 %f0, label %fail, label %sync
sync:
  %s1 = call i32 @nova_rt_stream_synchronize(ptr null)
  %f1 = icmp ne i32 %s1, 0
  br i1 %f1, label %fail, label %print
print:
  call void @nova_rt_print_memref_f32(i64 1, ptr %desc)
  ret void
fail:
  call void @nova_rt_raise()
  unreachable
}

; fill_async(memref<8xf32>): launch only (the executor synchronizes after the call).
define void @__nova_entry_fill_async(ptr %args, ptr %results) {
entry:
  %desc = load ptr, ptr %args
  %function = call ptr @kernel(ptr @name.fill)
  %params = alloca [5 x ptr]
  br label %fill
fill:
  %i = phi i64 [ 0, %entry ], [ %i.next, %fill ]
  %field = getelementptr i64, ptr %desc, i64 %i
  %slot = getelementptr ptr, ptr %params, i64 %i
  store ptr %field, ptr %slot
  %i.next = add i64 %i, 1
  %more = icmp slt i64 %i.next, 5
  br i1 %more, label %fill, label %launch
launch:
  %s0 = call i32 @nova_rt_launch(ptr %function, i64 2, i64 1, i64 1, i64 4, i64 1, i64 1,
                                 i32 0, ptr null, ptr %params, i64 5)
  %f0 = icmp ne i32 %s0, 0
  br i1 %f0, label %fail, label %done
done:
  ret void
fail:
  call void @nova_rt_raise()
  unreachable
}

; show(): prints 42 (an entry without arguments, for nova-run).
define void @__nova_entry_show(ptr %args, ptr %results) {
entry:
  call void @nova_rt_print_i64(i64 42)
  call void @nova_rt_print_newline()
  ret void
}

; add(i64, i64) -> i64, printing its result.
define void @__nova_entry_add(ptr %args, ptr %results) {
entry:
  %a.at = load ptr, ptr %args
  %b.slot = getelementptr ptr, ptr %args, i64 1
  %b.at = load ptr, ptr %b.slot
  %a = load i64, ptr %a.at
  %b = load i64, ptr %b.at
  %sum = add i64 %a, %b
  call void @nova_rt_print_i64(i64 %sum)
  call void @nova_rt_print_newline()
  %r.at = load ptr, ptr %results
  store i64 %sum, ptr %r.at
  ret void
}

; scale(f32) -> f64 (x * 2) with a host assert that x > 0.
define void @__nova_entry_scale(ptr %args, ptr %results) {
entry:
  %x.at = load ptr, ptr %args
  %x = load float, ptr %x.at
  %ok = fcmp ogt float %x, 0.0
  br i1 %ok, label %good, label %bad
good:
  %y = fpext float %x to double
  %z = fmul double %y, 2.0
  %r.at = load ptr, ptr %results
  store double %z, ptr %r.at
  ret void
bad:
  %s = call i32 @nova_rt_host_assert_fail(ptr @message)
  call void @nova_rt_raise()
  unreachable
}

; bad_free(): frees a pointer the runtime never allocated -> the call fails and unwinds.
define void @__nova_entry_bad_free(ptr %args, ptr %results) {
entry:
  %s = call i32 @nova_rt_mem_free(ptr inttoptr (i64 4660 to ptr), ptr null)
  %f = icmp ne i32 %s, 0
  br i1 %f, label %fail, label %done
done:
  ret void
fail:
  call void @nova_rt_raise()
  unreachable
}

; fault(): a kernel that fails; the fault surfaces at the stream synchronization.
define void @__nova_entry_fault(ptr %args, ptr %results) {
entry:
  %function = call ptr @kernel(ptr @name.faulty)
  %s0 = call i32 @nova_rt_launch(ptr %function, i64 1, i64 1, i64 1, i64 1, i64 1, i64 1,
                                 i32 0, ptr null, ptr null, i64 0)
  %f0 = icmp ne i32 %s0, 0
  br i1 %f0, label %fail, label %sync
sync:
  %s1 = call i32 @nova_rt_stream_synchronize(ptr null)
  %f1 = icmp ne i32 %s1, 0
  br i1 %f1, label %fail, label %done
done:
  ret void
fail:
  call void @nova_rt_raise()
  unreachable
}

; sevens(index n) -> memref<?xi32>: device memory set to 7 (memset32), copied into a second
; allocation (memcpy), the first one freed; the result is the second.
define void @__nova_entry_sevens(ptr %args, ptr %results) {
entry:
  %n.at = load ptr, ptr %args
  %n = load i64, ptr %n.at
  %bytes = mul i64 %n, 4
  %a.out = alloca ptr
  %b.out = alloca ptr
  %s0 = call i32 @nova_rt_mem_alloc(ptr %a.out, i64 %bytes, ptr null, i32 0)
  %f0 = icmp ne i32 %s0, 0
  br i1 %f0, label %fail, label %b
b:
  %s1 = call i32 @nova_rt_mem_alloc(ptr %b.out, i64 %bytes, ptr null, i32 0)
  %f1 = icmp ne i32 %s1, 0
  br i1 %f1, label %fail, label %set
set:
  %a = load ptr, ptr %a.out
  %bp = load ptr, ptr %b.out
  %s2 = call i32 @nova_rt_memset32(ptr %a, i32 7, i64 %n, ptr null)
  %f2 = icmp ne i32 %s2, 0
  br i1 %f2, label %fail, label %copy
copy:
  %s3 = call i32 @nova_rt_memcpy(ptr %bp, ptr %a, i64 %bytes, ptr null)
  %f3 = icmp ne i32 %s3, 0
  br i1 %f3, label %fail, label %free
free:
  %s4 = call i32 @nova_rt_mem_free(ptr %a, ptr null)
  %f4 = icmp ne i32 %s4, 0
  br i1 %f4, label %fail, label %result
result:
  %r = load ptr, ptr %results
  store ptr %bp, ptr %r
  %r1 = getelementptr i64, ptr %r, i64 1
  store ptr %bp, ptr %r1
  %r2 = getelementptr i64, ptr %r, i64 2
  store i64 0, ptr %r2
  %r3 = getelementptr i64, ptr %r, i64 3
  store i64 %n, ptr %r3
  %r4 = getelementptr i64, ptr %r, i64 4
  store i64 1, ptr %r4
  ret void
fail:
  call void @nova_rt_raise()
  unreachable
}
"""


def _spec(kind: str, dtype: str, mlir: str, shape: tuple[int, ...] = ()) -> TypeSpec:
    return TypeSpec(kind, dtype, mlir, shape)


F32x8 = _spec("memref", "f32", "memref<8xf32>", (8,))
I64 = _spec("scalar", "i64", "i64")
F32 = _spec("scalar", "f32", "f32")
F64 = _spec("scalar", "f64", "f64")
INDEX = _spec("scalar", "index", "index")
I32xN = _spec("memref", "i32", "memref<?xi32>", (-1,))

ENTRIES = (
    EntryPoint("main", "__nova_entry_main", (F32x8,), ()),
    EntryPoint("fill_async", "__nova_entry_fill_async", (F32x8,), ()),
    EntryPoint("show", "__nova_entry_show", (), ()),
    EntryPoint("add", "__nova_entry_add", (I64, I64), (I64,)),
    EntryPoint("scale", "__nova_entry_scale", (F32,), (F64,)),
    EntryPoint("bad_free", "__nova_entry_bad_free", (), ()),
    EntryPoint("fault", "__nova_entry_fault", (), ()),
    EntryPoint("sevens", "__nova_entry_sevens", (INDEX,), (I32xN,)),
)

_MEMREF_PARAMS = (KernelParam("ptr", 8, 0), KernelParam("ptr", 8, 0), KernelParam("i64", 8, 0),
                  KernelParam("i64", 8, 0), KernelParam("i64", 8, 0))
KERNELS = (
    Kernel("fill", (F32x8,), _MEMREF_PARAMS),
    Kernel("faulty", (), ()),
)


def _target_machine() -> llvm.TargetMachine:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    return llvm.Target.from_default_triple().create_target_machine(reloc="static",
                                                                   codemodel="large")


def cpu_object() -> bytes:
    """The hand-written kernels as an x86-64 object (what the CPU kernel target would emit)."""
    module = llvm.parse_assembly(CPU_KERNELS_IR)
    module.verify()
    return _target_machine().emit_object(module)


def build_bundle(host_ir: str = HOST_IR, entries: tuple[EntryPoint, ...] = ENTRIES,
                 with_cpu_object: bool = True, arch: str = "sm_90") -> bytes:
    """A sealed .nova bundle of the hand-written host code and device module `kmod` (PTX for
    cuda, and the CPU object unless `with_cpu_object` is False)."""
    holder = ir.Module(name="host")
    holder.triple = llvm.get_process_triple()
    images = [DeviceImages("kmod", KERNELS, KERNELS_PTX, None,
                           cpu_object() if with_cpu_object else None)]
    embed_device_images(holder, images, entries, arch, "handmade.mlir")
    module = llvm.parse_assembly(str(holder) + host_ir)
    module.verify()
    return seal_bundle(_target_machine().emit_object(module))
