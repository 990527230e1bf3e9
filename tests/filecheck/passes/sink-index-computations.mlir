// RUN: nova-opt %s -p sink-index-computations --split-input-file | FileCheck %s
// RUN: nova-opt %s -p sink-index-computations,outline-kernels --split-input-file | FileCheck %s --check-prefix=OUTLINED

// Constants used in the body are cloned to its top in MLIR's order (post-order first use);
// values that are not constants stay captured; launch operands keep the outer constants.

// CHECK-LABEL: func.func @sink
// CHECK-SAME: ([[BUF:%[^:]+]]: memref<?xf32>, [[N:%[^:]+]]: index)
// CHECK: [[C1:%[^ ]+]] = arith.constant 1 : index
// CHECK: [[TWO:%[^ ]+]] = arith.addi
// CHECK: gpu.launch blocks({{.*}}) in ({{%[^ ]+}} = [[N]], {{%[^ ]+}} = [[C1]], {{%[^ ]+}} = [[C1]])
// CHECK-NEXT: [[CST:%[^ ]+]] = arith.constant 2.000000e+00 : f32
// CHECK-NEXT: [[IC1:%[^ ]+]] = arith.constant 1 : index
// CHECK-NEXT: scf.for {{%[^ ]+}} = [[IC1]] to [[N]] step [[TWO]] {
// CHECK-NEXT: memref.store [[CST]], [[BUF]]

// OUTLINED-LABEL: func.func @sink
// OUTLINED: gpu.launch_func  @sink_kernel::@sink_kernel {{.*}} args({{%[^ ]+}} : memref<?xf32>, {{%[^ ]+}} : index, {{%[^ ]+}} : index)
// OUTLINED: gpu.func @sink_kernel({{%[^:]+}}: memref<?xf32>, {{%[^:]+}}: index, {{%[^:]+}}: index) kernel
// OUTLINED: gpu.block_dim  z
// OUTLINED-NEXT: arith.constant 2.000000e+00 : f32
// OUTLINED-NEXT: arith.constant 1 : index
func.func @sink(%buf: memref<?xf32>, %n: index) {
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %cst = arith.constant 2.0 : f32
  %two = arith.addi %c1, %c1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    scf.for %i = %c1 to %n step %two {
      memref.store %cst, %buf[%i] : memref<?xf32>
    }
    gpu.terminator
  }
  return
}

// -----

// memref.dim, arith.cmpi and arith.select are sunk too (with the constants they need) when
// that adds no captured value; an op with an operand that would become a new argument
// (the addi's %n) stays outside.

// CHECK-LABEL: func.func @sink_index_ops
// CHECK-SAME: ([[BUF:%[^:]+]]: memref<?xf32>, [[N:%[^:]+]]: index)
// CHECK: [[SUM:%[^ ]+]] = arith.addi [[N]]
// CHECK: gpu.launch
// CHECK-NEXT: [[C0:%[^ ]+]] = arith.constant 0 : index
// CHECK-NEXT: [[DIM:%[^ ]+]] = memref.dim [[BUF]], [[C0]] : memref<?xf32>
// CHECK-NEXT: [[CMP:%[^ ]+]] = arith.cmpi slt, [[DIM]], [[C0]] : index
// CHECK-NEXT: [[SEL:%[^ ]+]] = arith.select [[CMP]], [[C0]], [[DIM]] : index
// CHECK-NEXT: memref.load [[BUF]]{{\[}}[[SEL]]]
// CHECK-NEXT: memref.load [[BUF]]{{\[}}[[SUM]]]
func.func @sink_index_ops(%buf: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %dim = memref.dim %buf, %c0 : memref<?xf32>
  %neg = arith.cmpi slt, %dim, %c0 : index
  %idx = arith.select %neg, %c0, %dim : index
  %sum = arith.addi %n, %dim : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %a = memref.load %buf[%idx] : memref<?xf32>
    %b = memref.load %buf[%sum] : memref<?xf32>
    gpu.terminator
  }
  return
}
