// RUN: not nova-run %s --device cpu 2>&1 | FileCheck %s

// A cf.assert with a name location (as a frontend attaches to inlined code): CUDA/MLIR report its
// name as the function and its child's file and line; every failing thread of the block (all
// of them: the condition is false everywhere) reports, in any order.
func.func @main() {
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c3, %sy = %c1, %sz = %c1) {
    %in = arith.cmpi ult, %tx, %sx : index
    %false = arith.constant false
    %never = arith.andi %in, %false : i1
    cf.assert %never, "index within the tile" loc("tile_loader"("tile.cc":42:7))
    gpu.terminator
  }
  vector.print str "unreachable: the launch failed"
  return
}

// CHECK-DAG: tile.cc:42: tile_loader: block: [0,0,0], thread: [0,0,0] Assertion `index within the tile` failed.
// CHECK-DAG: tile.cc:42: tile_loader: block: [0,0,0], thread: [1,0,0] Assertion `index within the tile` failed.
// CHECK-DAG: tile.cc:42: tile_loader: block: [0,0,0], thread: [2,0,0] Assertion `index within the tile` failed.
// CHECK-NOT: unreachable
