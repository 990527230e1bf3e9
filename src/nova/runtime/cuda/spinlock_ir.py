"""LLVM IR of the spin locks that guard the native cuda ABI's tables (open streams, cached
blocks): an i32 global taken with an atomic exchange (acquire) and released with an atomic
store (release). The critical sections are a few loads and stores, never a driver call that
could block, so spinning is cheaper than a futex."""

from __future__ import annotations


def spinlock_ir(lock: str, acquire: str, release: str, internal: bool = False) -> str:
    """The lock global `@lock` (0: free) and `void @acquire()` / `void @release()`."""
    linkage = "internal global" if internal else "global"
    return f"""
@{lock} = {linkage} i32 0

define internal void @{acquire}() {{
entry:
  br label %spin
spin:
  %old = atomicrmw xchg ptr @{lock}, i32 1 acquire
  %free = icmp eq i32 %old, 0
  br i1 %free, label %done, label %spin
done:
  ret void
}}

define internal void @{release}() {{
entry:
  store atomic i32 0, ptr @{lock} release, align 4
  ret void
}}
"""
