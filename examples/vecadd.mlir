// Nova's first example: c = a + b on the GPU (or the CPU device), with host code that allocates
// device memory, copies inputs, launches a kernel and prints the result with printMemrefF32.
// Run: nova-run examples/vecadd.mlir            (cuda when a GPU is usable, else cpu)
module attributes {gpu.container_module} {
  func.func @vecadd(%a: memref<?xf32>, %b: memref<?xf32>, %c: memref<?xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c128 = arith.constant 128 : index
    %n = memref.dim %a, %c0 : memref<?xf32>
    %nblocks = arith.ceildivui %n, %c128 : index
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %nblocks, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
      %base = arith.muli %bx, %sx : index
      %i = arith.addi %base, %tx : index
      %inside = arith.cmpi ult, %i, %n : index
      scf.if %inside {
        %x = memref.load %a[%i] : memref<?xf32>
        %y = memref.load %b[%i] : memref<?xf32>
        %s = arith.addf %x, %y : f32
        memref.store %s, %c[%i] : memref<?xf32>
      }
      gpu.terminator
    }
    return
  }

  func.func @main() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = arith.constant 10 : index
    %a = memref.alloc(%n) : memref<?xf32>
    %b = memref.alloc(%n) : memref<?xf32>
    %c = memref.alloc(%n) : memref<?xf32>
    scf.for %i = %c0 to %n step %c1 {
      %ii = arith.index_cast %i : index to i32
      %f = arith.sitofp %ii : i32 to f32
      %twice = arith.addf %f, %f : f32
      memref.store %f, %a[%i] : memref<?xf32>
      memref.store %twice, %b[%i] : memref<?xf32>
    }
    %da = gpu.alloc(%n) : memref<?xf32>
    %db = gpu.alloc(%n) : memref<?xf32>
    %dc = gpu.alloc(%n) : memref<?xf32>
    gpu.memcpy %da, %a : memref<?xf32>, memref<?xf32>
    gpu.memcpy %db, %b : memref<?xf32>, memref<?xf32>
    call @vecadd(%da, %db, %dc) : (memref<?xf32>, memref<?xf32>, memref<?xf32>) -> ()
    gpu.memcpy %c, %dc : memref<?xf32>, memref<?xf32>
    %u = memref.cast %c : memref<?xf32> to memref<*xf32>
    call @printMemrefF32(%u) : (memref<*xf32>) -> ()
    gpu.dealloc %da : memref<?xf32>
    gpu.dealloc %db : memref<?xf32>
    gpu.dealloc %dc : memref<?xf32>
    memref.dealloc %a : memref<?xf32>
    memref.dealloc %b : memref<?xf32>
    memref.dealloc %c : memref<?xf32>
    return
  }

  func.func private @printMemrefF32(memref<*xf32>)
}
