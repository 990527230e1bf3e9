"""The MLIR program of the compile-driver tests (test_driver, test_driver_perf): one host
function launching one kernel that scales a 16-float buffer."""

PROGRAM = """\
func.func @scale(%buf: memref<16xf32>, %factor: f32) {
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c16, %sy = %c1, %sz = %c1) {
    %v = memref.load %buf[%tx] : memref<16xf32>
    %s = arith.mulf %v, %factor : f32
    memref.store %s, %buf[%tx] : memref<16xf32>
    gpu.terminator
  }
  return
}
"""
