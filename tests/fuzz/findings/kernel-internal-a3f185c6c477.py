import math

import nova


@nova.kernel
def k(out, a, n):
    i = nova.thread_id(0)
    x = nova.int32(0)
    while x < n and min < 10:
        x += 1
    out[i] = float(x) + min(a[i], 1.0)
