// RUN: nova-run %s --device cpu | FileCheck %s

// Upstream's mlir/test/Integration/GPU/CUDA/async.mlir: four async.execute regions (a fork of
// two copies after the first, joined by a kernel) passing device buffers as !async.value
// results, run by async-to-sync inline in program order. Each element is 42 copied three ways
// and summed by the kernel: 3 * 42 = 126.
func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %count = arith.constant 2 : index
  %h0 = memref.alloc(%count) : memref<?xi32>
  %h0_unranked = memref.cast %h0 : memref<?xi32> to memref<*xi32>
  gpu.host_register %h0_unranked : memref<*xi32>
  %v0 = arith.constant 42 : i32
  memref.store %v0, %h0[%c0] : memref<?xi32>
  memref.store %v0, %h0[%c1] : memref<?xi32>
  %t0, %f0 = async.execute () -> !async.value<memref<?xi32>> {
    %b0 = gpu.alloc(%count) : memref<?xi32>
    gpu.memcpy %b0, %h0 : memref<?xi32>, memref<?xi32>
    async.yield %b0 : memref<?xi32>
  }
  %t1, %f1 = async.execute [%t0] (%f0 as %b0: !async.value<memref<?xi32>>)
      -> !async.value<memref<?xi32>> {
    %b1 = gpu.alloc(%count) : memref<?xi32>
    gpu.memcpy %b1, %b0 : memref<?xi32>, memref<?xi32>
    async.yield %b1 : memref<?xi32>
  }
  %t2, %f2 = async.execute [%t0] (%f0 as %b0: !async.value<memref<?xi32>>)
      -> !async.value<memref<?xi32>> {
    %b2 = gpu.alloc(%count) : memref<?xi32>
    gpu.memcpy %b2, %b0 : memref<?xi32>, memref<?xi32>
    async.yield %b2 : memref<?xi32>
  }
  %t3 = async.execute [%t1, %t2] (%f0 as %b0: !async.value<memref<?xi32>>,
                                  %f1 as %b1: !async.value<memref<?xi32>>,
                                  %f2 as %b2: !async.value<memref<?xi32>>) {
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %count, %sy = %c1, %sz = %c1) {
      %x0 = memref.load %b0[%tx] : memref<?xi32>
      %x1 = memref.load %b1[%tx] : memref<?xi32>
      %x2 = memref.load %b2[%tx] : memref<?xi32>
      %sum = arith.addi %x0, %x1 : i32
      %sum2 = arith.addi %sum, %x2 : i32
      memref.store %sum2, %h0[%tx] : memref<?xi32>
      gpu.terminator
    }
    async.yield
  }
  async.await %t3 : !async.token
  // CHECK: Unranked Memref base@ = {{.*}} rank = 1 offset = 0 sizes = [2] strides = [1] data =
  // CHECK-NEXT: [126, 126]
  call @printMemrefI32(%h0_unranked) : (memref<*xi32>) -> ()
  return
}

func.func private @printMemrefI32(memref<*xi32>)
