"""MLIR generation for nova.models: kernels per fusion group (pointwise, matmul, rows, pool) and
the host program (program)."""
