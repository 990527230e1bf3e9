"""Golden tests of the MLIR the Python-kernel translator generates (FileCheck patterns, run with
the `filecheck` package), plus validity checks: the text re-parses with Nova's parser and, where
LLVM's mlir-opt is installed, upstream MLIR accepts it too."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import kernel_programs as P
import pytest

import nova
from nova.ir.parser import parse_mlir

# ruff: noqa: E501  (FileCheck patterns quote whole lines of generated MLIR)

I32, U8, I64, F32 = nova.int32[:], nova.uint8[:], nova.int64[:], nova.float32[:]
M32 = nova.float32[:, :]

GOLDEN = {
    "block_sum": (P.block_sum, (F32, F32), """
// CHECK:      gpu.module @nova_kernels {
// CHECK-NEXT:   gpu.func @block_sum(%0: memref<?xf32>, %1: memref<?xf32>) workgroup(%2 : memref<128xf32, 3>) kernel {
// CHECK:          memref.alloca() : memref<f32>
// CHECK:          cf.br ^bb1
// CHECK:          gpu.thread_id  x
// CHECK:          gpu.grid_dim  x
// CHECK:          gpu.block_dim  x
// The grid-stride loop: compare, branch, accumulate in float32 (acc widened from the literal 0).
// CHECK:        ^bb2:
// CHECK:          memref.dim %1
// CHECK:          arith.cmpi slt
// CHECK-NEXT:     cf.cond_br
// CHECK:          arith.addf {{.*}} : f32
// CHECK:          memref.store {{.*}}, %2[{{.*}}] : memref<128xf32, 3>
// CHECK-NEXT:     gpu.barrier
// The tree loop with a barrier inside it; `s //= 2` is floor division.
// CHECK:          arith.cmpi sgt
// CHECK:          gpu.barrier
// CHECK:          arith.floordivsi
// CHECK:          gpu.block_id  x
// CHECK:          gpu.return
"""),
    "histogram": (P.histogram, (I32, U8), """
// CHECK:      gpu.func @histogram(%0: memref<?xi32>, %1: memref<?xi8>) kernel {
// CHECK:        %[[V:.*]] = memref.load %1[{{.*}}] : memref<?xi8>
// uint8 % 16 is an unsigned remainder and indexes with a zero extension
// CHECK-NEXT:   %[[C:.*]] = arith.constant 16 : i8
// CHECK-NEXT:   %[[R:.*]] = arith.remui %[[V]], %[[C]] : i8
// CHECK-NEXT:   %[[I:.*]] = arith.index_castui %[[R]] : i8 to index
// CHECK-NEXT:   %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-NEXT:   memref.atomic_rmw addi %[[ONE]], %0[%[[I]]] : (i32, memref<?xi32>) -> i32
"""),
    "warp_scan": (P.warp_scan, (I32, I32), """
// CHECK:      gpu.func @warp_scan(%0: memref<?xi32>, %1: memref<?xi32>) kernel {
// CHECK:        gpu.lane_id
// CHECK:        arith.constant 32 : i64
// CHECK:        %[[D:.*]] = arith.trunci {{.*}} : i64 to i32
// CHECK-NEXT:   %[[W:.*]] = arith.constant 32 : i32
// CHECK-NEXT:   {{.*}}:2 = gpu.shuffle  up {{.*}}, %[[D]], %[[W]] : i32
// CHECK:        arith.cmpi sge
// CHECK:        arith.addi {{.*}} : i32
"""),
    "matmul": (P.matmul, (M32, M32, M32), """
// CHECK:      gpu.func @matmul(%0: memref<?x?xf32>, %1: memref<?x?xf32>, %2: memref<?x?xf32>) workgroup(%3 : memref<16x16xf32, 3>, %4 : memref<16x16xf32, 3>) kernel {
// CHECK:        gpu.thread_id  x
// CHECK:        gpu.thread_id  y
// CHECK:        gpu.block_id  y
// CHECK:        arith.floordivsi
// CHECK:        memref.store {{.*}}, %3[{{.*}}, {{.*}}] : memref<16x16xf32, 3>
// CHECK:        memref.store {{.*}}, %4[{{.*}}, {{.*}}] : memref<16x16xf32, 3>
// CHECK:        gpu.barrier
// `acc += sa[ty, j] * sb[j, tx]` contracts to a fused multiply-add
// CHECK:        %[[ACC:.*]] = memref.load %[[SLOT:.*]][] : memref<f32>
// CHECK:        %[[A:.*]] = memref.load %3[{{.*}}, {{.*}}] : memref<16x16xf32, 3>
// CHECK:        %[[B:.*]] = memref.load %4[{{.*}}, {{.*}}] : memref<16x16xf32, 3>
// CHECK-NEXT:   %[[F:.*]] = math.fma %[[A]], %[[B]], %[[ACC]] : f32
// CHECK-NEXT:   memref.store %[[F]], %[[SLOT]][] : memref<f32>
// CHECK:        gpu.barrier
// CHECK:        memref.store {{.*}}, %0[{{.*}}, {{.*}}] : memref<?x?xf32>
"""),
    "rle": (P.rle, (U8, I32, I64, U8), """
// CHECK:      gpu.func @rle(%0: memref<?xi8>, %1: memref<?xi32>, %2: memref<?xi64>, %3: memref<?xi8>) kernel {
// CHECK:        arith.minsi
// ballot: one vote over the warp (vote.sync.ballot on the GPU)
// CHECK:        nvvm.vote.sync  ballot {{.*}} -> i32
// CHECK:        math.ctpop {{.*}} : i32
// the run-length loop leaves through `break`
// CHECK:        arith.cmpi ne, {{.*}} : i8
// CHECK:        memref.store {{.*}}, %0[{{.*}}] : memref<?xi8>
// CHECK:        memref.store {{.*}}, %1[{{.*}}] : memref<?xi32>
// CHECK:        memref.store {{.*}}, %2[{{.*}}] : memref<?xi64>
"""),
    "grid2d": (P.grid2d, (nova.int64[:, :],), """
// CHECK:      gpu.func @grid2d(%0: memref<?x?xi64>) kernel {
// CHECK:        gpu.global_id  x
// CHECK:        gpu.global_id  y
// CHECK:        memref.store {{.*}}, %0[{{.*}}, {{.*}}] : memref<?x?xi64>
"""),
    "grid3d": (P.grid3d, (nova.int32[:, :, :],), """
// CHECK:      gpu.func @grid3d(%0: memref<?x?x?xi32>) kernel {
// the inlined device function returns through a result slot of the entry block
// CHECK:        %[[RES:.*]] = memref.alloca() : memref<i64>
// CHECK:        gpu.block_id  z
// CHECK:        gpu.block_dim  z
// CHECK:        gpu.thread_id  z
// CHECK:        arith.trunci {{.*}} : i64 to i32
// CHECK:        memref.store {{.*}}, %0[{{.*}}, {{.*}}, {{.*}}] : memref<?x?x?xi32>
// the blocks of the inlined clamp() follow; each return stores the result slot
// CHECK:        memref.store {{.*}}, %[[RES]][] : memref<i64>
// CHECK:        arith.constant 250 : i64
"""),
    "mma_matmul": (P.mma_matmul, (M32, nova.float16[:, :], nova.float16[:, :]), """
// CHECK:      gpu.func @mma_matmul(%0: memref<?x?xf32>, %1: memref<?x?xf16>, %2: memref<?x?xf16>) workgroup(%3 : memref<32x16xf16, 3>, %4 : memref<16x32xf16, 3>, %5 : memref<32x32xf32, 3>) kernel {
// Two float32 accumulators of zeros enter the k loop as block arguments (no memory slots).
// CHECK:        [[ZERO:%[0-9]+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:   [[L0:%[0-9]+]] = gpu.subgroup_mma_constant_matrix [[ZERO]] : !gpu.mma_matrix<16x16xf32, "COp">
// CHECK:        [[R0:%[0-9]+]] = gpu.subgroup_mma_constant_matrix {{%[0-9]+}} : !gpu.mma_matrix<16x16xf32, "COp">
// CHECK:        cf.br ^bb2([[L0]], [[R0]] : !gpu.mma_matrix<16x16xf32, "COp">, !gpu.mma_matrix<16x16xf32, "COp">)
// CHECK-NEXT: ^bb2([[L:%[0-9]+]]: !gpu.mma_matrix<16x16xf32, "COp">, [[R:%[0-9]+]]: !gpu.mma_matrix<16x16xf32, "COp">):
// The loop's latch passes the updated accumulators back.
// CHECK:        cf.br ^bb2([[L1:%[0-9]+]], [[R1:%[0-9]+]] : !gpu.mma_matrix<16x16xf32, "COp">, !gpu.mma_matrix<16x16xf32, "COp">)
// After the loop: both accumulators go to the shared C tile (leadDimension from its shape).
// CHECK:        gpu.subgroup_mma_store_matrix [[L]], %5[{{%[0-9]+}}, {{%[0-9]+}}] {leadDimension = 32 : index} : !gpu.mma_matrix<16x16xf32, "COp">, memref<32x32xf32, 3>
// CHECK:        gpu.subgroup_mma_store_matrix [[R]], %5[{{%[0-9]+}}, {{%[0-9]+}}] {leadDimension = 32 : index} : !gpu.mma_matrix<16x16xf32, "COp">, memref<32x32xf32, 3>
// CHECK-NEXT:   gpu.barrier
// The loop body: one A fragment, two B fragments, two multiplies into the accumulators.
// CHECK:        gpu.barrier
// CHECK:        [[A:%[0-9]+]] = gpu.subgroup_mma_load_matrix %3[{{%[0-9]+}}, {{%[0-9]+}}] {leadDimension = 16 : index} : memref<32x16xf16, 3> -> !gpu.mma_matrix<16x16xf16, "AOp">
// CHECK:        [[B0:%[0-9]+]] = gpu.subgroup_mma_load_matrix %4[{{%[0-9]+}}, {{%[0-9]+}}] {leadDimension = 32 : index} : memref<16x32xf16, 3> -> !gpu.mma_matrix<16x16xf16, "BOp">
// CHECK-NEXT:   [[L1]] = gpu.subgroup_mma_compute [[A]], [[B0]], [[L]] : !gpu.mma_matrix<16x16xf16, "AOp">, !gpu.mma_matrix<16x16xf16, "BOp"> -> !gpu.mma_matrix<16x16xf32, "COp">
// CHECK:        [[B1:%[0-9]+]] = gpu.subgroup_mma_load_matrix %4[{{%[0-9]+}}, {{%[0-9]+}}] {leadDimension = 32 : index} : memref<16x32xf16, 3> -> !gpu.mma_matrix<16x16xf16, "BOp">
// CHECK-NEXT:   [[R1]] = gpu.subgroup_mma_compute [[A]], [[B1]], [[R]] : !gpu.mma_matrix<16x16xf16, "AOp">, !gpu.mma_matrix<16x16xf16, "BOp"> -> !gpu.mma_matrix<16x16xf32, "COp">
// CHECK-NEXT:   gpu.barrier
// CHECK-NOT:    nova_lang
"""),
}


def _filecheck() -> list[str]:
    exe = shutil.which("filecheck", path=os.path.dirname(sys.executable)) or \
        shutil.which("filecheck")
    return [exe] if exe else [sys.executable, "-m", "filecheck"]


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_generated_mlir_matches_golden(name: str, tmp_path: Path) -> None:
    kern, sig, checks = GOLDEN[name]
    text = kern.mlir(*sig)
    check_file = tmp_path / "checks.txt"
    check_file.write_text(checks)
    input_file = tmp_path / "input.mlir"
    input_file.write_text(text)
    proc = subprocess.run([*_filecheck(), str(check_file), "--input-file", str(input_file)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}\n--- generated:\n{text}"


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_generated_mlir_reparses(name: str) -> None:
    kern, sig, _ = GOLDEN[name]
    text = kern.mlir(*sig)
    module = parse_mlir(text, f"{name}.mlir")
    from nova.ir.parser import print_mlir

    assert print_mlir(module) == text


MLIR_OPT = Path("/usr/lib/llvm-22/bin/mlir-opt")


@pytest.mark.skipif(not MLIR_OPT.exists(), reason="upstream mlir-opt is not installed")
@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_generated_mlir_is_valid_upstream(name: str, tmp_path: Path) -> None:
    kern, sig, _ = GOLDEN[name]
    path = tmp_path / f"{name}.mlir"
    path.write_text(kern.mlir(*sig))
    proc = subprocess.run([str(MLIR_OPT), str(path)], capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 0, proc.stderr
