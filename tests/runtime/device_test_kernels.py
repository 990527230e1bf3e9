"""Tiny hand-written kernels for the device-layer tests, as PTX (cuda) and an x86-64 object built
with llvmlite implementing the CPU kernel contract (`i32 k(ptr params, ptr launch)`, see
nova.abi.CpuLaunch). Kernels use 1-D grids and blocks.

- scale(ptr out, ptr in, float factor, i64 n): out[i] = in[i] * factor
- fault(): block 3 fails with "assertion failed: block 3" (cpu only)
- spin_wait(ptr flag, ptr out): waits for *flag != 0 (out = 1) or gives up (out = 2)
- set_flag(ptr flag): *flag = 1
- dyn_shared(ptr out): out[block] = block + dynamic shared bytes (round trip through scratch)
"""

from __future__ import annotations

import functools

from nova.abi import CPU_LAUNCH_LLVM
from nova.bundle.format import Kernel, KernelParam
from nova.runtime.device import Device, DeviceModule, ModuleImages

PTR = KernelParam("ptr", 8, 0)


def _params(*types: str) -> tuple[KernelParam, ...]:
    sizes = {"ptr": 8, "i64": 8, "float": 4, "i32": 4}
    return tuple(KernelParam(t, sizes[t], i) for i, t in enumerate(types))


KERNELS: dict[str, Kernel] = {
    "scale": Kernel("scale", (), _params("ptr", "ptr", "float", "i64")),
    "fault": Kernel("fault", (), ()),
    "spin_wait": Kernel("spin_wait", (), _params("ptr", "ptr")),
    "set_flag": Kernel("set_flag", (), _params("ptr")),
    "dyn_shared": Kernel("dyn_shared", (), _params("ptr")),
}

CPU_IR = r"""
%Launch = type LAUNCH

@msg = private constant [26 x i8] c"assertion failed: block 3\00"
declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)
declare void @llvm.x86.sse2.pause()

define internal ptr @param(ptr %params, i64 %i) {
  %slot = getelementptr ptr, ptr %params, i64 %i
  %p = load ptr, ptr %slot
  ret ptr %p
}

; i64 fields by byte offset: block_begin 72, block_end 80, dynamic_shared_bytes 96
define internal i64 @field(ptr %launch, i64 %offset) {
  %p = getelementptr i8, ptr %launch, i64 %offset
  %v = load i64, ptr %p
  ret i64 %v
}

define i32 @scale(ptr %params, ptr %launch) {
entry:
  %a0 = call ptr @param(ptr %params, i64 0)
  %out = load ptr, ptr %a0
  %a1 = call ptr @param(ptr %params, i64 1)
  %inp = load ptr, ptr %a1
  %a2 = call ptr @param(ptr %params, i64 2)
  %factor = load float, ptr %a2
  %a3 = call ptr @param(ptr %params, i64 3)
  %n = load i64, ptr %a3
  %bxp = getelementptr %Launch, ptr %launch, i32 0, i32 1, i32 0
  %bx = load i64, ptr %bxp
  %bb = call i64 @field(ptr %launch, i64 72)
  %be = call i64 @field(ptr %launch, i64 80)
  %start = mul i64 %bb, %bx
  %end0 = mul i64 %be, %bx
  %lt = icmp ult i64 %end0, %n
  %end = select i1 %lt, i64 %end0, i64 %n
  br label %loop
loop:
  %i = phi i64 [ %start, %entry ], [ %next, %body ]
  %c = icmp ult i64 %i, %end
  br i1 %c, label %body, label %done
body:
  %src = getelementptr float, ptr %inp, i64 %i
  %v = load float, ptr %src
  %m = fmul float %v, %factor
  %dst = getelementptr float, ptr %out, i64 %i
  store float %m, ptr %dst
  %next = add i64 %i, 1
  br label %loop
done:
  ret i32 0
}

define i32 @fault(ptr %params, ptr %launch) {
  %bb = call i64 @field(ptr %launch, i64 72)
  %be = call i64 @field(ptr %launch, i64 80)
  %c1 = icmp sle i64 %bb, 3
  %c2 = icmp sgt i64 %be, 3
  %c = and i1 %c1, %c2
  br i1 %c, label %bad, label %ok
bad:
  %err = getelementptr %Launch, ptr %launch, i32 0, i32 7
  call void @llvm.memcpy.p0.p0.i64(ptr %err, ptr @msg, i64 26, i1 false)
  ret i32 1
ok:
  ret i32 0
}

define i32 @spin_wait(ptr %params, ptr %launch) {
entry:
  %a0 = call ptr @param(ptr %params, i64 0)
  %flag = load ptr, ptr %a0
  %a1 = call ptr @param(ptr %params, i64 1)
  %out = load ptr, ptr %a1
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %inext, %cont ]
  %v = load atomic i32, ptr %flag acquire, align 4
  %seen = icmp ne i32 %v, 0
  br i1 %seen, label %yes, label %cont
cont:
  call void @llvm.x86.sse2.pause()
  %inext = add i64 %i, 1
  %more = icmp ult i64 %inext, 200000000
  br i1 %more, label %loop, label %timeout
yes:
  store i32 1, ptr %out
  ret i32 0
timeout:
  store i32 2, ptr %out
  ret i32 0
}

define i32 @set_flag(ptr %params, ptr %launch) {
  %a0 = call ptr @param(ptr %params, i64 0)
  %flag = load ptr, ptr %a0
  store atomic i32 1, ptr %flag release, align 4
  ret i32 0
}

define i32 @dyn_shared(ptr %params, ptr %launch) {
entry:
  %a0 = call ptr @param(ptr %params, i64 0)
  %out = load ptr, ptr %a0
  %sp = getelementptr %Launch, ptr %launch, i32 0, i32 5
  %shared = load ptr, ptr %sp
  %bytes = call i64 @field(ptr %launch, i64 96)
  %bb = call i64 @field(ptr %launch, i64 72)
  %be = call i64 @field(ptr %launch, i64 80)
  br label %loop
loop:
  %b = phi i64 [ %bb, %entry ], [ %next, %body ]
  %c = icmp slt i64 %b, %be
  br i1 %c, label %body, label %done
body:
  store volatile i64 %b, ptr %shared
  %back = load volatile i64, ptr %shared
  %val = add i64 %back, %bytes
  %dst = getelementptr i64, ptr %out, i64 %b
  store i64 %val, ptr %dst
  %next = add i64 %b, 1
  br label %loop
done:
  ret i32 0
}
""".replace("LAUNCH", CPU_LAUNCH_LLVM)

PTX = r"""
.version 7.0
.target sm_70
.address_size 64

.extern .shared .align 8 .b8 dsmem[];

.visible .entry scale(.param .u64 out, .param .u64 inp, .param .f32 factor, .param .u64 n)
{
    .reg .pred %p<2>;
    .reg .b32 %r<5>;
    .reg .f32 %f<3>;
    .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [out];
    ld.param.u64 %rd2, [inp];
    ld.param.f32 %f1, [factor];
    ld.param.u64 %rd3, [n];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mad.lo.u32 %r4, %r1, %r2, %r3;
    cvt.u64.u32 %rd4, %r4;
    setp.ge.u64 %p1, %rd4, %rd3;
    @%p1 bra DONE;
    shl.b64 %rd5, %rd4, 2;
    add.s64 %rd6, %rd2, %rd5;
    ld.global.f32 %f2, [%rd6];
    mul.f32 %f2, %f2, %f1;
    add.s64 %rd7, %rd1, %rd5;
    st.global.f32 [%rd7], %f2;
DONE:
    ret;
}

.visible .entry spin_wait(.param .u64 flag, .param .u64 out)
{
    .reg .pred %p<3>;
    .reg .b32 %r<3>;
    .reg .b64 %rd<6>;
    ld.param.u64 %rd1, [flag];
    ld.param.u64 %rd2, [out];
    mov.u64 %rd3, %globaltimer;
LOOP:
    ld.volatile.global.u32 %r1, [%rd1];
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra SEEN;
    mov.u64 %rd4, %globaltimer;
    sub.u64 %rd5, %rd4, %rd3;
    setp.lt.u64 %p2, %rd5, 5000000000;
    @%p2 bra LOOP;
    mov.u32 %r2, 2;
    st.global.u32 [%rd2], %r2;
    ret;
SEEN:
    mov.u32 %r2, 1;
    st.global.u32 [%rd2], %r2;
    ret;
}

.visible .entry set_flag(.param .u64 flag)
{
    .reg .b32 %r<2>;
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [flag];
    mov.u32 %r1, 1;
    st.volatile.global.u32 [%rd1], %r1;
    ret;
}

.visible .entry dyn_shared(.param .u64 out)
{
    .reg .pred %p<2>;
    .reg .b32 %r<4>;
    .reg .b64 %rd<8>;
    mov.u32 %r1, %tid.x;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra DONE;
    ld.param.u64 %rd1, [out];
    mov.u32 %r2, %ctaid.x;
    cvt.u64.u32 %rd2, %r2;
    st.volatile.shared.u64 [dsmem], %rd2;
    ld.volatile.shared.u64 %rd3, [dsmem];
    mov.u32 %r3, %dynamic_smem_size;
    cvt.u64.u32 %rd4, %r3;
    add.u64 %rd5, %rd3, %rd4;
    shl.b64 %rd6, %rd2, 3;
    add.s64 %rd7, %rd1, %rd6;
    st.global.u64 [%rd7], %rd5;
DONE:
    ret;
}

.visible .entry trap_kernel()
{
    trap;
    ret;
}
"""


@functools.cache
def cpu_object() -> bytes:
    """The CPU_IR kernels as an x86-64 ELF object (static relocations, large code model), as
    the CPU kernel target emits."""
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    module = llvm.parse_assembly(CPU_IR)
    module.triple = llvm.get_default_triple()
    module.verify()
    machine = llvm.Target.from_default_triple().create_target_machine(
        reloc="static", codemodel="large", opt=2)
    return machine.emit_object(module)


def images(name: str = "testk") -> ModuleImages:
    return ModuleImages(name=name, ptx=PTX, cpu_object=cpu_object())


def load(device: Device) -> DeviceModule:
    return device.load_module(images())


def function(device: Device, name: str):
    return load(device).get_function(name, KERNELS[name])
