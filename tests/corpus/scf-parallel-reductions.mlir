// RUN: nova-run %s --device cpu | FileCheck %s

// scf.parallel with two reductions (sum of i as f32, product of 2s as i32) in host code and in a
// kernel: 0 + 1 + ... + 9 = 45 and 2^10 = 1024 (and, per kernel thread t over t + 1 .. t + 4:
// sums 4t + 10, products 2^4 = 16).
func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %n = arith.constant 10 : index
  %z = arith.constant 0.0 : f32
  %one = arith.constant 1 : i32
  %two = arith.constant 2 : i32
  %r:2 = scf.parallel (%i) = (%c0) to (%n) step (%c1) init (%z, %one) -> (f32, i32) {
    %ii = arith.index_cast %i : index to i32
    %f = arith.sitofp %ii : i32 to f32
    scf.reduce(%f, %two : f32, i32) {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      scf.reduce.return %s : f32
    }, {
    ^bb0(%a: i32, %b: i32):
      %p = arith.muli %a, %b : i32
      scf.reduce.return %p : i32
    }
  }
  vector.print %r#0 : f32
  vector.print %r#1 : i32
  %out = gpu.alloc host_shared () : memref<2x2xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c2, %sy = %c1, %sz = %c1) {
    %lo = arith.addi %tx, %c1 : index
    %hi = arith.addi %lo, %c4 : index
    %k:2 = scf.parallel (%j) = (%lo) to (%hi) step (%c1) init (%z, %one) -> (f32, i32) {
      %jj = arith.index_cast %j : index to i32
      %jf = arith.sitofp %jj : i32 to f32
      scf.reduce(%jf, %two : f32, i32) {
      ^bb0(%a: f32, %b: f32):
        %s = arith.addf %a, %b : f32
        scf.reduce.return %s : f32
      }, {
      ^bb0(%a: i32, %b: i32):
        %p = arith.muli %a, %b : i32
        scf.reduce.return %p : i32
      }
    }
    %kp = arith.sitofp %k#1 : i32 to f32
    memref.store %k#0, %out[%tx, %c0] : memref<2x2xf32>
    memref.store %kp, %out[%tx, %c1] : memref<2x2xf32>
    gpu.terminator
  }
  %u = memref.cast %out : memref<2x2xf32> to memref<*xf32>
  call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  return
}
func.func private @printMemrefF32(memref<*xf32>)

// CHECK: 45
// CHECK-NEXT: 1024
// CHECK: {{\[}}[10,   16],
// CHECK-NEXT: [14,   16]]
