// RUN: nova-opt %s -p async-to-sync --split-input-file | FileCheck %s
// RUN: nova-opt %s -p async-to-sync,outline-kernels --split-input-file | FileCheck %s --check-prefix=OUTLINED

// async-to-sync: every async.execute region runs inline where it is written, in program order;
// its block arguments become the unwrapped operand values, its yields its value results, and
// tokens, groups and awaits disappear (docs/async.md).

// A fork/join of values: the regions' bodies appear in program order, the second and third
// reading the first's buffer, the kernel reading all three.
// CHECK-LABEL: func.func @fork_join
// CHECK-SAME: ([[H:%[^:]+]]: memref<?xi32>, [[N:%[^:]+]]: index, [[C1:%[^:]+]]: index)
// CHECK-NEXT: [[B0:%[^ ]+]] = gpu.alloc  ([[N]]) : memref<?xi32>
// CHECK-NEXT: gpu.memcpy  [[B0]], [[H]] : memref<?xi32>, memref<?xi32>
// CHECK-NEXT: [[B1:%[^ ]+]] = gpu.alloc  ([[N]]) : memref<?xi32>
// CHECK-NEXT: gpu.memcpy  [[B1]], [[B0]] : memref<?xi32>, memref<?xi32>
// CHECK-NEXT: [[B2:%[^ ]+]] = gpu.alloc  ([[N]]) : memref<?xi32>
// CHECK-NEXT: gpu.memcpy  [[B2]], [[B0]] : memref<?xi32>, memref<?xi32>
// CHECK-NEXT: gpu.launch
// CHECK-NEXT: memref.load [[B0]]
// CHECK-NEXT: memref.load [[B1]]
// CHECK-NEXT: memref.load [[B2]]
// CHECK: gpu.terminator
// CHECK-NEXT: }
// CHECK-NEXT: return
// CHECK-NOT: async.
// OUTLINED-LABEL: func.func @fork_join
// OUTLINED: gpu.launch_func  @fork_join_kernel::@fork_join_kernel
// OUTLINED-NOT: async.
func.func @fork_join(%h: memref<?xi32>, %n: index, %c1: index) {
  %t0, %f0 = async.execute -> !async.value<memref<?xi32>> {
    %b0 = gpu.alloc (%n) : memref<?xi32>
    gpu.memcpy %b0, %h : memref<?xi32>, memref<?xi32>
    async.yield %b0 : memref<?xi32>
  }
  %t1, %f1 = async.execute [%t0] (%f0 as %b0: !async.value<memref<?xi32>>) -> !async.value<memref<?xi32>> {
    %b1 = gpu.alloc (%n) : memref<?xi32>
    gpu.memcpy %b1, %b0 : memref<?xi32>, memref<?xi32>
    async.yield %b1 : memref<?xi32>
  }
  %t2, %f2 = async.execute [%t0] (%f0 as %b0: !async.value<memref<?xi32>>) -> !async.value<memref<?xi32>> {
    %b2 = gpu.alloc (%n) : memref<?xi32>
    gpu.memcpy %b2, %b0 : memref<?xi32>, memref<?xi32>
    async.yield %b2 : memref<?xi32>
  }
  %t3 = async.execute [%t1, %t2] (%f0 as %b0: !async.value<memref<?xi32>>, %f1 as %b1: !async.value<memref<?xi32>>, %f2 as %b2: !async.value<memref<?xi32>>) {
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %n, %sy = %c1, %sz = %c1) {
      %x0 = memref.load %b0[%tx] : memref<?xi32>
      %x1 = memref.load %b1[%tx] : memref<?xi32>
      %x2 = memref.load %b2[%tx] : memref<?xi32>
      %s = arith.addi %x0, %x1 : i32
      %s2 = arith.addi %s, %x2 : i32
      memref.store %s2, %h[%tx] : memref<?xi32>
      gpu.terminator
    }
    async.yield
  }
  async.await %t3 : !async.token
  return
}

// -----

// await of a value becomes the yielded value; groups, add_to_group (rank unused) and
// await_all disappear; a nested region runs inside its parent's body, in place; GPU tokens
// inside a region are kept as written.
// CHECK-LABEL: func.func @values_groups_nested
// CHECK-SAME: ([[A:%[^:]+]]: i32, [[N:%[^:]+]]: index)
// CHECK-NEXT: [[S:%[^ ]+]] = arith.addi [[A]], [[A]] : i32
// CHECK-NEXT: [[W:%[^ ]+]] = gpu.wait async
// CHECK-NEXT: [[M:%[^ ]+]] = arith.muli [[S]], [[S]] : i32
// CHECK-NEXT: gpu.wait [[[W]]]
// CHECK-NEXT: [[R:%[^ ]+]] = arith.subi [[M]], [[S]] : i32
// CHECK-NEXT: return [[R]] : i32
func.func @values_groups_nested(%a: i32, %n: index) -> i32 {
  %g = async.create_group %n : !async.group
  %t0, %v0 = async.execute -> !async.value<i32> {
    %s = arith.addi %a, %a : i32
    async.yield %s : i32
  }
  %i0 = async.add_to_group %t0, %g : !async.token
  %t1, %v1 = async.execute [%t0] (%v0 as %s: !async.value<i32>) -> !async.value<i32> {
    %w = gpu.wait async
    %t2, %v2 = async.execute -> !async.value<i32> {
      %m = arith.muli %s, %s : i32
      async.yield %m : i32
    }
    %m2 = async.await %v2 : !async.value<i32>
    gpu.wait [%w]
    async.yield %m2 : i32
  }
  %i1 = async.add_to_group %t1, %g : !async.token
  async.await_all %g
  %m = async.await %v1 : !async.value<i32>
  %s0 = async.await %v0 : !async.value<i32>
  %r = arith.subi %m, %s0 : i32
  return %r : i32
}

// -----

// A module without async ops is unchanged.
// CHECK-LABEL: func.func @no_async
// CHECK-NEXT: return
func.func @no_async() {
  return
}
