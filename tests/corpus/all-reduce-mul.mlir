// RUN: nova-run %s --device cpu | FileCheck %s

// gpu.all_reduce mul (f32) over 11 threads (a partial warp): odd threads contribute 2.0, even
// threads 1.0, so the product is 2^5. Every thread stores the result.
func.func @main() {
  %out = memref.alloc() : memref<11xf32>
  %cast = memref.cast %out : memref<11xf32> to memref<*xf32>
  gpu.host_register %cast : memref<*xf32>
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c11 = arith.constant 11 : index
  %one = arith.constant 1.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c11, %sy = %c1, %sz = %c1) {
    %odd = arith.remui %tx, %c2 : index
    %oddi = arith.index_cast %odd : index to i32
    %oddf = arith.sitofp %oddi : i32 to f32
    %v = arith.addf %oddf, %one : f32
    %prod = gpu.all_reduce mul %v {} : (f32) -> f32
    memref.store %prod, %out[%tx] : memref<11xf32>
    gpu.terminator
  }
  call @printMemrefF32(%cast) : (memref<*xf32>) -> ()
  return
}

func.func private @printMemrefF32(memref<*xf32>)

// CHECK: Unranked Memref base@ = {{.*}} rank = 1 offset = 0 sizes = [11] strides = [1] data =
// CHECK-NEXT: [32,  32,  32,  32,  32,  32,  32,  32,  32,  32,  32]
