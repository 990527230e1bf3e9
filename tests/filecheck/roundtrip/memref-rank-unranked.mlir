// RUN: nova-opt %s | FileCheck %s
// RUN: nova-run %s --device cpu | FileCheck %s --check-prefix=OUT

// memref.rank of an unranked memref (valid MLIR; xDSL's op accepted ranked memrefs only).

func.func @main() {
  %m = memref.alloc() : memref<2x3xf32>
  %u = memref.cast %m : memref<2x3xf32> to memref<*xf32>
  // CHECK: %r = memref.rank %u : memref<*xf32>
  %r = memref.rank %u : memref<*xf32>
  // CHECK: %r2 = memref.rank %m : memref<2x3xf32>
  %r2 = memref.rank %m : memref<2x3xf32>
  // OUT: 2
  // OUT-NEXT: 2
  vector.print %r : index
  vector.print %r2 : index
  memref.dealloc %m : memref<2x3xf32>
  return
}
