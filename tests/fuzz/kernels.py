"""Seed kernels for the Python-frontend fuzzer. Every kernel is called `k` and takes
(out: float32[:], a: float32[:], n: int32); a mutated seed is written to a module file that
starts with HEADER, so `inspect.getsource` finds it."""

from __future__ import annotations

HEADER = "import math\n\nimport nova\n\n\n"

SEEDS: dict[str, str] = {
    "axpy": """@nova.kernel
def k(out, a, n):
    i = nova.block_id(0) * nova.block_dim(0) + nova.thread_id(0)
    if i < n:
        out[i] = 2.0 * a[i] + out[i]
""",
    "loop": """@nova.kernel
def k(out, a, n):
    acc = 0.0
    for j in range(n):
        acc += a[j] * a[j]
    out[0] = math.sqrt(acc)
""",
    "shared": """@nova.kernel
def k(out, a, n):
    buf = nova.shared_array(64, nova.float32)
    tid = nova.thread_id(0)
    buf[tid] = a[tid]
    nova.syncthreads()
    if tid == 0:
        x = 0.0
        for j in range(64):
            x += buf[j]
        out[0] = x
""",
    "atomic": """@nova.kernel
def k(out, a, n):
    i = nova.thread_id(0)
    if i < n and a[i] > 0.0:
        nova.atomic_add(out, 0, a[i])
""",
    "while": """@nova.kernel
def k(out, a, n):
    i = nova.thread_id(0)
    x = nova.int32(0)
    while x < n and x < 10:
        x += 1
    out[i] = float(x) + min(a[i], 1.0)
""",
    "func": """@nova.func
def sq(x):
    return x * x


@nova.kernel
def k(out, a, n):
    i = nova.thread_id(0)
    out[i] = sq(a[i]) if i < n else -1.0
""",
}
