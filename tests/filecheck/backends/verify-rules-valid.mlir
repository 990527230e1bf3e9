// RUN: nova-opt %s | FileCheck %s --check-prefix=IR
// RUN: nova-run %s --device cpu | FileCheck %s

// The valid neighbours of the reproducers refused by nova.ir.rules, the printf format check and
// the lowering limits (tests/filecheck/invalid/verify-rules.mlir, gpu-printf-format.mlir,
// unsupported-limits.mlir) still verify, compile and run right.

// IR-LABEL: func.func @main
module attributes {gpu.container_module} {
  memref.global "private" constant @g : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>

  func.func @pick(%b: i1, %x: i32) -> i32 {
    cf.cond_br %b, ^bb1(%x : i32), ^bb2
  ^bb1(%a: i32):
    return %a : i32
  ^bb2:
    %z = arith.constant -7 : i32
    cf.br ^bb1(%z : i32)
  }

  func.func @main() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    // In-range static positions (3 is the last one).
    %v = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : vector<4xf32>
    %e = vector.extract %v[3] : f32 from vector<4xf32>
    // CHECK: 4
    vector.print %e : f32
    %x = arith.constant 9.0 : f32
    %w = vector.insert %x, %v[0] : f32 into vector<4xf32>
    // CHECK-NEXT: ( 9, 2, 3, 4 )
    vector.print %w : vector<4xf32>
    // get_global with the global's own type.
    %g = memref.get_global @g : memref<4xf32>
    %g2 = memref.load %g[%c2] : memref<4xf32>
    // CHECK-NEXT: 3
    vector.print %g2 : f32
    // A positive constant step.
    // CHECK-NEXT: 0
    // CHECK-NEXT: 2
    scf.for %i = %c0 to %c4 step %c2 {
      vector.print %i : index
    }
    // collapse_shape / expand_shape whose groups match.
    %m = memref.alloc() : memref<2x3xf32>
    %flat = memref.collapse_shape %m [[0, 1]] : memref<2x3xf32> into memref<6xf32>
    %back = memref.expand_shape %flat [[0, 1]] output_shape [3, 2] : memref<6xf32> into memref<3x2xf32>
    // memref.dim with a constant index inside the rank.
    %d = memref.dim %back, %c1 : memref<3x2xf32>
    // CHECK-NEXT: 2
    vector.print %d : index
    memref.dealloc %m : memref<2x3xf32>
    // Branches with matching operands; scf.if and affine.if yielding in both arms.
    %t = arith.constant true
    %f = arith.constant false
    %five = arith.constant 5 : i32
    %p = func.call @pick(%f, %five) : (i1, i32) -> i32
    // CHECK-NEXT: -7
    vector.print %p : i32
    %r = scf.if %t -> (i32) {
      scf.yield %five : i32
    } else {
      %z = arith.constant 0 : i32
      scf.yield %z : i32
    }
    // CHECK-NEXT: 5
    vector.print %r : i32
    %a = affine.if affine_set<(d0) : (d0 - 1 >= 0)>(%c1) -> i32 {
      affine.yield %five : i32
    } else {
      %z = arith.constant 0 : i32
      affine.yield %z : i32
    }
    // CHECK-NEXT: 5
    vector.print %a : i32
    // A scalar i128 constant (only dense literals are limited to 64 bits).
    %big = arith.constant 170141183460469231731687303715884105727 : i128
    %sh = arith.constant 120 : i128
    %s = arith.shrui %big, %sh : i128
    %s32 = arith.trunci %s : i128 to i32
    // CHECK-NEXT: 127
    vector.print %s32 : i32
    // printf conversions that match their arguments.
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
      %k = arith.constant 42 : i32
      %h = arith.constant 1.5 : f32
      %b8 = arith.constant -3 : i8
      // CHECK-NEXT: tid 0 k=42 h=1.50 b=-3 x=2a 100%
      gpu.printf "tid %lld k=%d h=%.2f b=%hhd x=%x 100%%\n", %tx, %k, %h, %b8, %k : index, i32, f32, i8, i32
      gpu.terminator
    }
    return
  }
}
