// RUN: nova-run %s --device cpu | FileCheck %s

// scf.parallel, scf.for and scf.if in host and device code. The host fills in[i] = i with
// scf.parallel; thread t sums 0..in[t] with scf.for and negates odd results with scf.if;
// thread 0 also runs an scf.parallel loop storing k * k for k < 3.
func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c10 = arith.constant 10 : index
  %in = memref.alloc() : memref<10xi32>
  %out = memref.alloc() : memref<10xi32>
  %sq = memref.alloc() : memref<3xi32>
  scf.parallel (%i) = (%c0) to (%c10) step (%c1) {
    %ii = arith.index_cast %i : index to i32
    memref.store %ii, %in[%i] : memref<10xi32>
  }
  %outc = memref.cast %out : memref<10xi32> to memref<*xi32>
  %sqc = memref.cast %sq : memref<3xi32> to memref<*xi32>
  %inc = memref.cast %in : memref<10xi32> to memref<*xi32>
  gpu.host_register %inc : memref<*xi32>
  gpu.host_register %outc : memref<*xi32>
  gpu.host_register %sqc : memref<*xi32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c10, %sy = %c1, %sz = %c1) {
    %zero = arith.constant 0 : i32
    %xi = memref.load %in[%tx] : memref<10xi32>
    %x = arith.index_cast %xi : i32 to index
    %end = arith.addi %x, %c1 : index
    %sum = scf.for %j = %c0 to %end step %c1 iter_args(%acc = %zero) -> (i32) {
      %ji = arith.index_cast %j : index to i32
      %next = arith.addi %acc, %ji : i32
      scf.yield %next : i32
    }
    %parity = arith.remui %x, %c2 : index
    %even = arith.cmpi eq, %parity, %c0 : index
    %signed = scf.if %even -> (i32) {
      scf.yield %sum : i32
    } else {
      %neg = arith.subi %zero, %sum : i32
      scf.yield %neg : i32
    }
    memref.store %signed, %out[%tx] : memref<10xi32>
    %first = arith.cmpi eq, %tx, %c0 : index
    scf.if %first {
      scf.parallel (%k) = (%c0) to (%c3) step (%c1) {
        %kk = arith.muli %k, %k : index
        %kki = arith.index_cast %kk : index to i32
        memref.store %kki, %sq[%k] : memref<3xi32>
      }
    }
    gpu.terminator
  }
  call @printMemrefI32(%outc) : (memref<*xi32>) -> ()
  call @printMemrefI32(%sqc) : (memref<*xi32>) -> ()
  return
}

func.func private @printMemrefI32(memref<*xi32>)

// CHECK: Unranked Memref base@ = {{.*}} rank = 1 offset = 0 sizes = [10] strides = [1] data =
// CHECK-NEXT: [0,  -1,  3,  -6,  10,  -15,  21,  -28,  36,  -45]
// CHECK: Unranked Memref base@ = {{.*}} rank = 1 offset = 0 sizes = [3] strides = [1] data =
// CHECK-NEXT: [0,  1,  4]
