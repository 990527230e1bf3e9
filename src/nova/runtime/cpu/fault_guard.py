"""Faults in CPU-device kernels raise `KernelFault` instead of killing the process.

Why: on the cpu device a kernel is native code running inside the Python process. A store through a
bad pointer, an integer division by zero or a fiber stack overflow would otherwise end the process
with SIGSEGV/SIGFPE/SIGBUS, where the same bug on a GPU gives a catchable error. A small native
module (LLVM IR below, JIT-compiled once per process with llvmlite: no C compiler at run time)
turns such a fault into a failed launch. The module is compiled once into an object file kept in
the cache directory (`<cache_dir>/runtime/`), which later processes place with
`nova.runtime.objload` without importing llvmlite at all (cold start of cached kernels):

- `nova_cpu_fault_guard_install()` installs one handler for SIGSEGV, SIGBUS, SIGFPE and SIGILL with
  `sigaction` (SA_SIGINFO | SA_ONSTACK), remembering the handlers it replaces.
- `nova_cpu_guarded_call(kernel, params, launch)` calls `i32 kernel(params, launch)` after a
  `__sigsetjmp(buf, 0)` whose buffer it publishes in the thread's state (a pthread key: MCJIT
  cannot place thread-local globals), marked "in kernel" for the duration of the call. On its
  first use in a thread it maps the thread's state and an alternate signal stack (`sigaltstack`,
  unless the thread has one already), so a fault with an exhausted stack (a fiber overflowed by a
  huge alloca) can still be handled; a pthread key destructor unmaps them when the thread exits.
  They are mmap'd, not malloc'd, so a fiber stack overflow that overwrote the thread's malloc
  arena (the fiber stacks come from it) does not take the handler's own state with it.
- The handler: when the faulting thread is in a guarded kernel call it writes a `FaultRecord`
  (signal, si_code, faulting address, pc and sp from the ucontext, then a NUL) at the start of
  `launch->error` and `siglongjmp`s back to the guarded call, which returns `FAULT_STATUS`. The
  jump leaves the fiber stack (kernels with barriers run GPU threads as fibers, on stacks of their
  own) for the guarded-call frame on the thread's real stack. The mask is not saved by the
  setjmp (a syscall per call); the handler unblocks its signal itself before jumping.
  Otherwise it chains to the handler it replaced (Python's faulthandler, which pytest enables,
  or SIG_DFL: the action is reinstated and the fault re-raised), so ordinary crashes behave as
  before.

Layouts are glibc's x86-64 ones (tests/runtime/test_cpu_faults.py checks them against gcc where
present): struct sigaction is 152 bytes (handler at 0, sa_mask 128 bytes at 8, sa_flags at 136,
sa_restorer at 144); siginfo_t has si_code at 8 and si_addr at 16; a sigjmp_buf is 200 bytes;
stack_t is {ptr ss_sp, i32 ss_flags, i64 ss_size}; ucontext_t's saved rsp/rip are at 160/168.
Elsewhere (other libcs or architectures) `guard()` returns None and kernels run unguarded.

What a caught fault leaves behind: the kernel stopped in the middle, so memory it wrote may be
partially updated, and the small per-call scratch it had malloc'd (thread contexts, workgroup
memory) is leaked; its fiber stacks, published in the CpuLaunch, are released by
`release_after_fault`. The device itself stays usable. A fault while the kernel held a libc lock
(inside malloc or printf) could leave that lock held; kernels call libc rarely, so this is a
documented limit, not a handled case.

Reports (`describe_fault`) name the exact block from `CpuLaunch.current_block` (kept up to date by
the kernel entry), and call a fault in the no-access guard zone below the fiber stacks
(`CpuLaunch.fiber_stacks`) what it is: a fiber stack overflow.
"""

from __future__ import annotations

import _thread
import ctypes
import os
import sys
from collections.abc import Callable
from typing import Any

from nova.abi import CpuLaunch
from nova.records import Record

FAULT_STATUS = -0x4E46
"""What `nova_cpu_guarded_call` returns after a caught fault (kernels return 0 or small positive
statuses); `launch->error` then starts with a FaultRecord."""

FAULT_MAGIC = int.from_bytes(b"NVAFAULT", "little")
"""First 8 bytes of a FaultRecord (a kernel's own messages are text that never starts so)."""
ALT_STACK_BYTES = 256 * 1024
"""Alternate signal stack per kernel thread: the handler needs little, but the kernel's signal
frame holds the full XSAVE state (several KiB with AVX-512, more with AMX)."""
STATE_PAGE = 4096
"""The first page of each thread's mapping holds its guard state; the alternate stack follows."""

SIGILL, SIGBUS, SIGFPE, SIGSEGV = 4, 7, 8, 11
GUARDED_SIGNALS = (SIGILL, SIGBUS, SIGFPE, SIGSEGV)

SA_SIGINFO = 0x4
SA_ONSTACK = 0x08000000
SS_DISABLE = 2
SIG_UNBLOCK = 1
SIGACTION_BYTES = 152
SIGACTION_FLAGS_OFFSET = 136
SIGINFO_CODE_OFFSET = 8
SIGINFO_ADDR_OFFSET = 16
SIGJMP_BUF_BYTES = 200
STACK_T_BYTES = 24
UCONTEXT_RSP_OFFSET = 160
UCONTEXT_RIP_OFFSET = 168

GUARDED_CALL = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
GUARDED_ENTRY = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                 ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint32)


RECORD_END_OFFSET = 40
"""Where FaultRecord's `end` byte lies (after magic, signal, code, address, pc and sp): the
handler stores a NUL there. FaultRecord itself (nova.runtime.cpu.fault_record) is made where a
record is read: fault reports and guarded host code."""


_ERROR_OFFSET = CpuLaunch.error.offset


def _install_calls() -> str:
    """IR lines installing the handler for each guarded signal, jumping to %fail on error."""
    lines = []
    for i, sig in enumerate(GUARDED_SIGNALS):
        nxt = f"sig{i + 1}" if i + 1 < len(GUARDED_SIGNALS) else "installed"
        lines += [f"  %rc{i} = call i32 @nova_fg_install_one(i32 {sig})",
                  f"  %ok{i} = icmp eq i32 %rc{i}, 0",
                  f"  br i1 %ok{i}, label %{nxt}, label %fail",
                  f"{nxt}:"]
    return "\n".join(lines)


# The per-thread state, mapped on first use: { i32 active, ptr jmpbuf, ptr record, ptr altstack }
# (record: where the handler writes the FaultRecord)
def _guarded(signature: str, call: str, first: str, restore: str = "") -> str:
    """IR of one guarded call (`i32 @name(...) noinline`): unguarded where the thread has no
    guard state; else the state's jump buffer and record pointer are saved and pointed at this
    frame and `record`, `call` runs between a sigsetjmp and the restore of the saved words, and a
    fault (the handler's siglongjmp) restores them too, runs `restore` and returns FAULT_STATUS.
    `first` is the guard block's first instruction (it defines %record where the signature does
    not). The saved words are volatile: they live across the sigsetjmp."""
    extra = f"  {restore}\n" if restore else ""
    return f"""define i32 {signature} noinline {{
entry:
  %jb = alloca [{SIGJMP_BUF_BYTES} x i8], align 16
  %st = call ptr @nova_fg_thread_state()
  %none = icmp eq ptr %st, null
  br i1 %none, label %unguarded, label %guard
unguarded:
  %r0 = call i32 {call}
  ret i32 %r0
guard:
  {first}
  %jb.at = getelementptr inbounds %State, ptr %st, i32 0, i32 1
  %rec.at = getelementptr inbounds %State, ptr %st, i32 0, i32 2
  %prev.active = load volatile i32, ptr %st
  %prev.jb = load volatile ptr, ptr %jb.at
  %prev.rec = load volatile ptr, ptr %rec.at
  store volatile ptr %jb, ptr %jb.at
  store volatile ptr %record, ptr %rec.at
  %jumped = call i32 @__sigsetjmp(ptr %jb, i32 0) returns_twice
  %first = icmp eq i32 %jumped, 0
  br i1 %first, label %run, label %faulted
run:
  store volatile i32 1, ptr %st
  %r = call i32 {call}
  store volatile i32 %prev.active, ptr %st
  store volatile ptr %prev.jb, ptr %jb.at
  store volatile ptr %prev.rec, ptr %rec.at
  ret i32 %r
faulted:
  store volatile i32 %prev.active, ptr %st
  store volatile ptr %prev.jb, ptr %jb.at
  store volatile ptr %prev.rec, ptr %rec.at
{extra}  ret i32 {FAULT_STATUS}
}}"""


_GUARDED_CALL = _guarded("@nova_cpu_guarded_call(ptr %kernel, ptr %params, ptr %launch)",
                         "%kernel(ptr %params, ptr %launch)",
                         f"%record = getelementptr inbounds i8, ptr %launch, i64 {_ERROR_OFFSET}")
_GUARDED_ENTRY = _guarded(
    "@nova_cpu_guarded_entry(ptr %call_entry, ptr %target, ptr %args, ptr %results,\n"
    "                                   ptr %record, i32 %unwind_key)",
    "%call_entry(ptr %target, ptr %args, ptr %results)",
    "%frames = call ptr @pthread_getspecific(i32 %unwind_key)",
    "%restored = call i32 @pthread_setspecific(i32 %unwind_key, ptr %frames)")

_IR = f"""
%State = type {{ i32, ptr, ptr, ptr }}
%Actions = type [32 x [{SIGACTION_BYTES} x i8]]  ; the replaced sigaction of each signal number

@nova_fg_key = internal global i32 0
@nova_fg_installed = internal global i32 0
@nova_fg_old = internal global %Actions zeroinitializer, align 16

declare i32 @__sigsetjmp(ptr, i32) returns_twice
declare void @siglongjmp(ptr, i32) noreturn
declare i32 @sigaction(i32, ptr, ptr)
declare i32 @sigaltstack(ptr, ptr)
declare i32 @raise(i32)
declare i32 @pthread_sigmask(i32, ptr, ptr)
declare i32 @pthread_key_create(ptr, ptr)
declare ptr @pthread_getspecific(i32)
declare i32 @pthread_setspecific(i32, ptr)
declare ptr @mmap(ptr, i64, i32, i32, i32, i64)
declare i32 @munmap(ptr, i64)
declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)

; ---- the signal handler -----------------------------------------------------------------------
define internal void @nova_fg_handler(i32 %sig, ptr %info, ptr %uc) nounwind {{
entry:
  %key = load volatile i32, ptr @nova_fg_key
  %st = call ptr @pthread_getspecific(i32 %key)
  %has = icmp ne ptr %st, null
  br i1 %has, label %check, label %chain
check:
  %active = load volatile i32, ptr %st
  %inside = icmp ne i32 %active, 0
  br i1 %inside, label %caught, label %chain
caught:
  store volatile i32 0, ptr %st
  %rec.at = getelementptr inbounds %State, ptr %st, i32 0, i32 2
  %rec = load volatile ptr, ptr %rec.at
  store volatile i64 {FAULT_MAGIC}, ptr %rec
  %rec.sig = getelementptr inbounds i8, ptr %rec, i64 8
  store volatile i32 %sig, ptr %rec.sig
  %code.at = getelementptr inbounds i8, ptr %info, i64 {SIGINFO_CODE_OFFSET}
  %code = load i32, ptr %code.at
  %rec.code = getelementptr inbounds i8, ptr %rec, i64 12
  store volatile i32 %code, ptr %rec.code
  %addr.at = getelementptr inbounds i8, ptr %info, i64 {SIGINFO_ADDR_OFFSET}
  %addr = load i64, ptr %addr.at
  %rec.addr = getelementptr inbounds i8, ptr %rec, i64 16
  store volatile i64 %addr, ptr %rec.addr
  %pc.at = getelementptr inbounds i8, ptr %uc, i64 {UCONTEXT_RIP_OFFSET}
  %pc = load i64, ptr %pc.at
  %rec.pc = getelementptr inbounds i8, ptr %rec, i64 24
  store volatile i64 %pc, ptr %rec.pc
  %sp.at = getelementptr inbounds i8, ptr %uc, i64 {UCONTEXT_RSP_OFFSET}
  %sp = load i64, ptr %sp.at
  %rec.sp = getelementptr inbounds i8, ptr %rec, i64 32
  store volatile i64 %sp, ptr %rec.sp
  %rec.nul = getelementptr inbounds i8, ptr %rec, i64 {RECORD_END_OFFSET}
  store volatile i8 0, ptr %rec.nul
  ; the jump does not restore the signal mask (saving it would cost a syscall per call), so
  ; unblock the signal the kernel blocked for this handler (sa_mask is empty)
  %set = alloca [16 x i64], align 8
  call void @llvm.memset.p0.i64(ptr %set, i8 0, i64 128, i1 false)
  %bitpos = sub i32 %sig, 1
  %bitpos64 = zext i32 %bitpos to i64
  %bit = shl i64 1, %bitpos64
  store i64 %bit, ptr %set
  %unblocked = call i32 @pthread_sigmask(i32 {SIG_UNBLOCK}, ptr %set, ptr null)
  %jb.at = getelementptr inbounds %State, ptr %st, i32 0, i32 1
  %jb = load volatile ptr, ptr %jb.at
  call void @siglongjmp(ptr %jb, i32 1)
  unreachable
chain:
  %old = getelementptr inbounds %Actions, ptr @nova_fg_old, i32 0, i32 %sig, i32 0
  %h = load ptr, ptr %old
  %hi = ptrtoint ptr %h to i64
  %default = icmp ule i64 %hi, 1
  br i1 %default, label %restore, label %call
call:
  %flags.at = getelementptr inbounds i8, ptr %old, i64 {SIGACTION_FLAGS_OFFSET}
  %flags = load i32, ptr %flags.at
  %siginfo = and i32 %flags, {SA_SIGINFO}
  %three = icmp ne i32 %siginfo, 0
  br i1 %three, label %call3, label %call1
call3:
  call void %h(i32 %sig, ptr %info, ptr %uc)
  ret void
call1:
  call void %h(i32 %sig)
  ret void
restore:
  ; SIG_DFL / SIG_IGN: reinstate it; a hardware fault re-executes and meets it, a signal sent by
  ; kill/raise (si_code <= 0) is sent again (delivered once this handler returns)
  %ignored = call i32 @sigaction(i32 %sig, ptr %old, ptr null)
  %code2.at = getelementptr inbounds i8, ptr %info, i64 {SIGINFO_CODE_OFFSET}
  %code2 = load i32, ptr %code2.at
  %user = icmp sle i32 %code2, 0
  br i1 %user, label %resend, label %done
resend:
  %ignored2 = call i32 @raise(i32 %sig)
  br label %done
done:
  ret void
}}

; ---- per-thread state and alternate signal stack ---------------------------------------------
; One private mapping per thread: the State in its first page, the alternate signal stack after
; it. Not malloc'd: a fiber stack overflow can overwrite the thread's malloc arena (fiber stacks
; come from it), and the handler must still find intact state and a usable stack.
define internal void @nova_fg_thread_exit(ptr %st) nounwind {{
entry:
  %alt.at = getelementptr inbounds %State, ptr %st, i32 0, i32 3
  %alt = load ptr, ptr %alt.at
  %own = icmp ne ptr %alt, null
  br i1 %own, label %release, label %done
release:
  %cur = alloca [{STACK_T_BYTES} x i8], align 8
  %q = call i32 @sigaltstack(ptr null, ptr %cur)
  %cur.sp = load ptr, ptr %cur
  %ours = icmp eq ptr %cur.sp, %alt
  br i1 %ours, label %disable, label %done
disable:
  %off = alloca [{STACK_T_BYTES} x i8], align 8
  call void @llvm.memset.p0.i64(ptr %off, i8 0, i64 {STACK_T_BYTES}, i1 false)
  %off.flags = getelementptr inbounds i8, ptr %off, i64 8
  store i32 {SS_DISABLE}, ptr %off.flags
  %d = call i32 @sigaltstack(ptr %off, ptr null)
  br label %done
done:
  %u = call i32 @munmap(ptr %st, i64 {STATE_PAGE + ALT_STACK_BYTES})
  ret void
}}

define internal ptr @nova_fg_thread_state() nounwind {{
entry:
  %key = load volatile i32, ptr @nova_fg_key
  %st = call ptr @pthread_getspecific(i32 %key)
  %known = icmp ne ptr %st, null
  br i1 %known, label %have, label %create
have:
  ret ptr %st
create:
  ; PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS; zero-filled
  %new = call ptr @mmap(ptr null, i64 {STATE_PAGE + ALT_STACK_BYTES}, i32 3, i32 34, i32 -1,
                        i64 0)
  %new.int = ptrtoint ptr %new to i64
  %failed = icmp eq i64 %new.int, -1
  br i1 %failed, label %none, label %altstack
none:
  ret ptr null
altstack:
  %cur = alloca [{STACK_T_BYTES} x i8], align 8
  %q = call i32 @sigaltstack(ptr null, ptr %cur)
  %cur.flags.at = getelementptr inbounds i8, ptr %cur, i64 8
  %cur.flags = load i32, ptr %cur.flags.at
  %dis = and i32 %cur.flags, {SS_DISABLE}
  %needed = icmp ne i32 %dis, 0
  br i1 %needed, label %install, label %publish
install:
  %mem = getelementptr inbounds i8, ptr %new, i64 {STATE_PAGE}
  %ss = alloca [{STACK_T_BYTES} x i8], align 8
  call void @llvm.memset.p0.i64(ptr %ss, i8 0, i64 {STACK_T_BYTES}, i1 false)
  store ptr %mem, ptr %ss
  %ss.size = getelementptr inbounds i8, ptr %ss, i64 16
  store i64 {ALT_STACK_BYTES}, ptr %ss.size
  %rc = call i32 @sigaltstack(ptr %ss, ptr null)
  %ok = icmp eq i32 %rc, 0
  br i1 %ok, label %keep, label %publish
keep:
  %alt.at = getelementptr inbounds %State, ptr %new, i32 0, i32 3
  store ptr %mem, ptr %alt.at
  br label %publish
publish:
  %set = call i32 @pthread_setspecific(i32 %key, ptr %new)
  %set.ok = icmp eq i32 %set, 0
  br i1 %set.ok, label %done, label %undo
undo:
  call void @nova_fg_thread_exit(ptr %new)
  ret ptr null
done:
  ret ptr %new
}}

; ---- the guarded calls ------------------------------------------------------------------------
{_GUARDED_CALL}

; Host code: `i32 call_entry(target, args, results)` (nova_rt_call_entry) guarded the same way, the
; FaultRecord written at %record. A fault skips nova_rt_call_entry's own epilogue, so the unwind
; frame list (pthread key %unwind_key) is put back as it was before the call.
{_GUARDED_ENTRY}

; The calling thread's state (mapped on first use; null if that failed): Python code called back
; from guarded host code clears its `active` word for the duration, so a fault in the interpreter
; is never jumped out of (it crashes as it would without Nova).
define ptr @nova_cpu_fault_state() {{
entry:
  %st = call ptr @nova_fg_thread_state()
  ret ptr %st
}}

; ---- installation (once per process; 0 on success) ----------------------------------------
define internal i32 @nova_fg_install_one(i32 %sig) {{
entry:
  %act = alloca [{SIGACTION_BYTES} x i8], align 16
  call void @llvm.memset.p0.i64(ptr %act, i8 0, i64 {SIGACTION_BYTES}, i1 false)
  store ptr @nova_fg_handler, ptr %act
  %flags.at = getelementptr inbounds i8, ptr %act, i64 {SIGACTION_FLAGS_OFFSET}
  store i32 {SA_SIGINFO | SA_ONSTACK}, ptr %flags.at
  %old = getelementptr inbounds %Actions, ptr @nova_fg_old, i32 0, i32 %sig, i32 0
  %rc = call i32 @sigaction(i32 %sig, ptr %act, ptr %old)
  ret i32 %rc
}}

define i32 @nova_cpu_fault_guard_install() {{
entry:
  %done = load volatile i32, ptr @nova_fg_installed
  %again = icmp ne i32 %done, 0
  br i1 %again, label %ok, label %key
key:
  %k = call i32 @pthread_key_create(ptr @nova_fg_key, ptr @nova_fg_thread_exit)
  %k.ok = icmp eq i32 %k, 0
  br i1 %k.ok, label %signals, label %fail
signals:
{_install_calls()}
  store volatile i32 1, ptr @nova_fg_installed
  br label %ok
ok:
  ret i32 0
fail:
  ret i32 1
}}
"""


class FaultGuard(Record):
    """The process's fault guard: `call(kernel_address, params, launch)` runs a kernel entry
    and returns its status, or FAULT_STATUS with a FaultRecord in `launch.error`."""

    __match_args__ = ("engine", "call", "address", "entry", "state")
    _fields = __match_args__

    engine: object  # what owns the code (a LoadedObject or an llvmlite engine; kept alive here)
    call: Callable[..., int]
    address: int
    entry: Callable[..., int]
    """`entry(call_entry, target, args, results, record, unwind_key)`: host code through
    `nova_rt_call_entry`, guarded; FAULT_STATUS with a FaultRecord at `record` on a fault."""
    state: Callable[[], int | None]
    """The calling thread's guard state (its first i32 is the `active` word), or None."""

    def __init__(self, engine: object, call: Callable[..., int], address: int,
                 entry: Callable[..., int], state: Callable[[], int | None]) -> None:
        object.__setattr__(self, "engine", engine)
        object.__setattr__(self, "call", call)
        object.__setattr__(self, "address", address)
        object.__setattr__(self, "entry", entry)
        object.__setattr__(self, "state", state)


_lock = _thread.allocate_lock()
_guard: FaultGuard | None = None
_unsupported: str | None = None


def supported() -> str | None:
    """None when the guard can work here; else why not (glibc x86-64 Linux only)."""
    machine = os.uname().machine if hasattr(os, "uname") else "?"
    if not sys.platform.startswith("linux") or machine not in ("x86_64", "AMD64"):
        return f"the CPU fault guard needs x86-64 Linux (this is {sys.platform} {machine})"
    try:
        libc = os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (ValueError, OSError):
        libc = ""
    if not libc.startswith("glibc"):
        return "the CPU fault guard needs glibc (its struct layouts are glibc's)"
    return None


def _load() -> tuple[object, Callable[[str], int]]:
    """(owner, address of a symbol): the cached object placed by objload, or (an object objload
    cannot place) JIT-compiled by MCJIT as before."""
    from nova.runtime.objload import load_ir

    loaded = load_ir("fault-guard", _IR)
    if loaded is not None:
        return loaded, loaded.address
    import llvmlite.binding as llvm

    from nova.runtime.native_support import host_target_machine

    module = llvm.parse_assembly(_IR)
    module.verify()
    engine = llvm.create_mcjit_compiler(module, host_target_machine())
    engine.finalize_object()
    return engine, engine.get_function_address


def _keep_forever(owner: object) -> None:
    """Never free `owner` (one extra reference that nothing drops): once installed, the signal
    handler and the pthread key destructor in its code are called by the kernel and by glibc,
    not Python, until the process ends. Interpreter shutdown clears module globals (freeing a
    LoadedObject unmaps its code) before the daemon stream threads are gone; such a thread that
    ran a guarded call and exits afterwards (woken by its stream's finalizer, it calls
    pthread_exit) ran its key destructor at an unmapped address: SIGSEGV at process exit."""
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(owner))


def _compile() -> FaultGuard:
    from nova.errors import DeviceError

    owner, address_of = _load()
    _keep_forever(owner)
    install = ctypes.CFUNCTYPE(ctypes.c_int32)(address_of("nova_cpu_fault_guard_install"))
    if install() != 0:
        raise DeviceError("cannot install the CPU device's fault handlers (sigaction or "
                          "pthread_key_create failed)")
    address = address_of("nova_cpu_guarded_call")
    entry = GUARDED_ENTRY(address_of("nova_cpu_guarded_entry"))
    state = ctypes.CFUNCTYPE(ctypes.c_void_p)(address_of("nova_cpu_fault_state"))
    return FaultGuard(owner, GUARDED_CALL(address), address, entry, state)


def guard() -> FaultGuard | None:
    """The process-wide fault guard, compiled and installed on first use; None where the platform
    is not supported (kernels then run unguarded, as before)."""
    global _guard, _unsupported
    if _guard is not None:
        return _guard
    with _lock:
        if _guard is None and _unsupported is None:
            _unsupported = supported()
            if _unsupported is None:
                _guard = _compile()
        return _guard


def prepare(launch: CpuLaunch) -> None:
    """Initialise the fields a kernel writes for fault reports, once per CpuLaunch (a CPU object
    that predates them leaves them so, and reports fall back to the block range). Reusing the
    struct for disjoint block ranges needs no reset: a stale `current_block` lies outside the
    next range, and the fiber stack fields are cleared by the kernel or release_after_fault."""
    launch.current_block = -1
    launch.fiber_stacks = None
    launch.fiber_stacks_bytes = 0
    launch.fiber_guard_bytes = 0


# ---- Python called back from guarded host code -------------------------------------------------

_local = _thread._local()


def _active_word() -> ctypes.c_int32 | None:
    """This thread's `active` word (cached per thread), or None without a guard."""
    try:
        return _local.word
    except AttributeError:
        g = guard()
        address = g.state() if g is not None else None
        _local.word = ctypes.c_int32.from_address(address) if address else None
        return _local.word


def outside_guard(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn`, run with the thread's guard inactive: a callback from guarded host code into Python
    must never be jumped out of (that would skip interpreter frames); a fault there crashes as it
    would without Nova. Kernels it launches inline guard themselves again."""

    def unguarded(*args: Any) -> Any:
        word = _active_word()
        if word is None or not word.value:
            return fn(*args)
        word.value = 0
        try:
            return fn(*args)
        finally:
            word.value = 1

    return unguarded
