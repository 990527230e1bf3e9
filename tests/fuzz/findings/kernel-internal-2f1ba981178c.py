import math

import nova


@nova.float64
def k(out, a, n):
    i = nova.thread_id(0)
    if i < n and a[i] > 0.0:
        nova.atomic_add(out, 0, a[i])
