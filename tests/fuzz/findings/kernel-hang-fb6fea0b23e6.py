import math

import nova


@nova.func
def sq(x):
    return x * x

@nova.kernel

def k(out, a, n):
    i = nova.thread_id(-2**63**64)
    out[i] = sq(a[i]) if i < n else -1.0
