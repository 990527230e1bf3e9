"""Run one compiled model's forward a few times, for a profiler (ncu) to time every kernel:
    ncu --metrics gpu__time_duration.sum --print-summary per-kernel \
        python scripts/models-profile.py [mlp|encoder|conv] [fp16|fp32] [auto|nova|library]
            [conv policy: auto|nova|library]
            [attention: auto|fused|unfused|fused-wmma|fused-mma|fused-mma-BMxBN]
(`fused-mma-BMxBN`: the FlashAttention-2 style kernel with BM 64/128 query rows per block and
BN 32/64 keys per tile, passes/attention.py)"""
import sys

import numpy as np

import nova.models as nm
from nova.models import examples

which = sys.argv[1] if len(sys.argv) > 1 else "mlp"
dtype = {"fp16": "float16", "fp32": "float32"}[sys.argv[2] if len(sys.argv) > 2 else "fp16"]
gemm = sys.argv[3] if len(sys.argv) > 3 else "auto"
conv = sys.argv[4] if len(sys.argv) > 4 else "auto"
attention = sys.argv[5] if len(sys.argv) > 5 else "auto"
if which == "mlp":
    example, shape = examples.mlp((1024, 4096, 4096, 1024)), (4096, 1024)
elif which == "conv":
    example, shape = examples.conv_block((64, 64)), (32, 64, 56, 56)
else:
    example, shape = examples.encoder_layer(768, 12, 3072), (8, 512, 768)
model = nm.compile(example.graph, device="cuda", dtype=dtype, gemm=gemm, conv=conv,
                   attention=attention)
x = np.random.default_rng(0).standard_normal(shape).astype(
    np.float16 if dtype == "float16" else np.float32)
for _ in range(3):
    y = model(x)
print("output", np.asarray(y).shape)
