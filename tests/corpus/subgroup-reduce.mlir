// RUN: nova-run %s --device cpu | FileCheck %s

// gpu.subgroup_reduce in one full 32-lane subgroup; lane l contributes l. Rows (lanes 0-7):
// add over the subgroup, add over clusters of 4 lanes, uniform maxsi over the subgroup.
func.func @main() {
  %out = memref.alloc() : memref<3x8xi32>
  %cast = memref.cast %out : memref<3x8xi32> to memref<*xi32>
  gpu.host_register %cast : memref<*xi32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %v = arith.index_cast %tx : index to i32
    %all = gpu.subgroup_reduce add %v : (i32) -> i32
    %quad = gpu.subgroup_reduce add %v cluster(size = 4) : (i32) -> i32
    %max = gpu.subgroup_reduce maxsi %v uniform : (i32) -> i32
    %low = arith.cmpi ult, %tx, %c8 : index
    scf.if %low {
      memref.store %all, %out[%c0, %tx] : memref<3x8xi32>
      memref.store %quad, %out[%c1, %tx] : memref<3x8xi32>
      memref.store %max, %out[%c2, %tx] : memref<3x8xi32>
    }
    gpu.terminator
  }
  call @printMemrefI32(%cast) : (memref<*xi32>) -> ()
  return
}

func.func private @printMemrefI32(memref<*xi32>)

// CHECK: Unranked Memref base@ = {{.*}} rank = 2 offset = 0 sizes = [3, 8] strides = [8, 1] data =
// CHECK-NEXT: {{\[}}[496,   496,   496,   496,   496,   496,   496,   496],
// CHECK-NEXT:  [6,   6,   6,   6,   22,   22,   22,   22],
// CHECK-NEXT:  [31,   31,   31,   31,   31,   31,   31,   31]]
