// RUN: nova-run %s --device cpu | FileCheck %s
// RUN: nova-translate %s --emit=outlined | FileCheck %s --check-prefix=OUTLINED

// The affine dialect inside a gpu.launch body (lowered before outlining, as upstream's
// lower-affine then gpu-kernel-outlining): affine.load / affine.store with maps over block and
// thread ids, affine.apply mod / floordiv of negative values, an affine.for whose lower bound is
// the thread id, and affine.if on the block id. The host fills in[k] = k * k - 50 with affine.for.
func.func @main() {
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c8 = arith.constant 8 : index
  %in = memref.alloc() : memref<24xi32>
  %tr = memref.alloc() : memref<8x3xi32>
  %md = memref.alloc() : memref<24xi32>
  %fd = memref.alloc() : memref<24xi32>
  %ps = memref.alloc() : memref<8xi32>
  affine.for %k = 0 to 24 {
    %ki = arith.index_cast %k : index to i32
    %sq = arith.muli %ki, %ki : i32
    %c50 = arith.constant 50 : i32
    %v = arith.subi %sq, %c50 : i32
    affine.store %v, %in[%k] : memref<24xi32>
  }
  %inc = memref.cast %in : memref<24xi32> to memref<*xi32>
  %trc = memref.cast %tr : memref<8x3xi32> to memref<*xi32>
  %mdc = memref.cast %md : memref<24xi32> to memref<*xi32>
  %fdc = memref.cast %fd : memref<24xi32> to memref<*xi32>
  %psc = memref.cast %ps : memref<8xi32> to memref<*xi32>
  gpu.host_register %inc : memref<*xi32>
  gpu.host_register %trc : memref<*xi32>
  gpu.host_register %mdc : memref<*xi32>
  gpu.host_register %fdc : memref<*xi32>
  gpu.host_register %psc : memref<*xi32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c3, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1) {
    %v = affine.load %in[%bx * 8 + %tx] : memref<24xi32>
    affine.store %v, %tr[%tx, %bx] : memref<8x3xi32>
    %m = affine.apply affine_map<(d0, d1) -> ((d0 * 8 + d1 - 10) mod 7)>(%bx, %tx)
    %f = affine.apply affine_map<(d0, d1) -> ((d0 * 8 + d1 - 13) floordiv 4)>(%bx, %tx)
    %mi = arith.index_cast %m : index to i32
    %fi = arith.index_cast %f : index to i32
    affine.store %mi, %md[%bx * 8 + %tx] : memref<24xi32>
    affine.store %fi, %fd[%bx * 8 + %tx] : memref<24xi32>
    affine.if affine_set<(d0) : (d0 == 0)>(%bx) {
      %zero = arith.constant 0 : i32
      %sum = affine.for %k = affine_map<(d0) -> (d0)>(%tx) to 24 step 8 iter_args(%acc = %zero) -> (i32) {
        %x = affine.load %in[%k] : memref<24xi32>
        %next = arith.addi %acc, %x : i32
        affine.yield %next : i32
      }
      affine.store %sum, %ps[%tx] : memref<8xi32>
    }
    gpu.terminator
  }
  call @printMemrefI32(%trc) : (memref<*xi32>) -> ()
  call @printMemrefI32(%mdc) : (memref<*xi32>) -> ()
  call @printMemrefI32(%fdc) : (memref<*xi32>) -> ()
  call @printMemrefI32(%psc) : (memref<*xi32>) -> ()
  return
}

func.func private @printMemrefI32(memref<*xi32>)

// lower-affine runs before outlining: neither the host nor the kernel keeps an affine op.
// OUTLINED-NOT: affine.
// OUTLINED: gpu.launch_func  @main_kernel::@main_kernel
// OUTLINED-NOT: affine.
// OUTLINED: gpu.func @main_kernel(
// OUTLINED-NOT: affine.

// tr[t, b] = in[8b + t]
// CHECK: Unranked Memref base@ = {{.*}} rank = 2 offset = 0 sizes = [8, 3] strides = [3, 1] data =
// CHECK-NEXT: {{^\[\[}}-50,   14,   206],
// CHECK-NEXT: {{^}} [-49,   31,   239],
// CHECK-NEXT: {{^}} [-46,   50,   274],
// CHECK-NEXT: {{^}} [-41,   71,   311],
// CHECK-NEXT: {{^}} [-34,   94,   350],
// CHECK-NEXT: {{^}} [-25,   119,   391],
// CHECK-NEXT: {{^}} [-14,   146,   434],
// CHECK-NEXT: {{^}} [-1,   175,   479{{\]\]}}
// md[g] = (g - 10) mod 7, fd[g] = (g - 13) floordiv 4 for g = 8b + t
// CHECK: Unranked Memref base@ = {{.*}} rank = 1 offset = 0 sizes = [24] strides = [1] data =
// CHECK-NEXT: [4,  5,  6,  0,  1,  2,  3,  4,  5,  6,  0,  1,  2,  3,  4,  5,  6,  0,  1,  2,  3,  4,  5,  6]
// CHECK: Unranked Memref base@ = {{.*}} rank = 1 offset = 0 sizes = [24] strides = [1] data =
// CHECK-NEXT: [-4,  -3,  -3,  -3,  -3,  -2,  -2,  -2,  -2,  -1,  -1,  -1,  -1,  0,  0,  0,  0,  1,  1,  1,  1,  2,  2,  2]
// ps[t] = in[t] + in[t + 8] + in[t + 16] (block 0 only)
// CHECK: Unranked Memref base@ = {{.*}} rank = 1 offset = 0 sizes = [8] strides = [1] data =
// CHECK-NEXT: [170,  221,  278,  341,  410,  485,  566,  653]
