// RUN: nova-run %s --device cpu | FileCheck %s

// math dialect functions in a kernel (one thread) on inputs with exactly known results, plus
// e = exp(1) (printed with 6 significant digits), and math.sqrt on the host via vector.print.
func.func @main() {
  %out = memref.alloc() : memref<16xf32>
  %cast = memref.cast %out : memref<16xf32> to memref<*xf32>
  gpu.host_register %cast : memref<*xf32>
  %c1 = arith.constant 1 : index
  %f0 = arith.constant 0.0 : f32
  %f1 = arith.constant 1.0 : f32
  %f2 = arith.constant 2.0 : f32
  %f3 = arith.constant 3.0 : f32
  %f4 = arith.constant 4.0 : f32
  %f8 = arith.constant 8.0 : f32
  %f10 = arith.constant 10.0 : f32
  %f16 = arith.constant 16.0 : f32
  %fm1 = arith.constant -1.0 : f32
  %fm35 = arith.constant -3.5 : f32
  %f27 = arith.constant 2.7 : f32
  %f22 = arith.constant 2.2 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %r0 = math.sqrt %f16 : f32
    %r1 = math.exp %f0 : f32
    %r2 = math.log %f1 : f32
    %r3 = math.sin %f0 : f32
    %r4 = math.cos %f0 : f32
    %r5 = math.tanh %f0 : f32
    %r6 = math.powf %f2, %f10 : f32
    %r7 = math.absf %fm35 : f32
    %r8 = math.floor %f27 : f32
    %r9 = math.ceil %f22 : f32
    %r10 = math.fma %f2, %f3, %f4 : f32
    %r11 = math.rsqrt %f4 : f32
    %r12 = math.exp2 %f3 : f32
    %r13 = math.log2 %f8 : f32
    %r14 = math.copysign %f2, %fm1 : f32
    %r15 = math.exp %f1 : f32
    %i0 = arith.constant 0 : index
    %i1 = arith.constant 1 : index
    %i2 = arith.constant 2 : index
    %i3 = arith.constant 3 : index
    %i4 = arith.constant 4 : index
    %i5 = arith.constant 5 : index
    %i6 = arith.constant 6 : index
    %i7 = arith.constant 7 : index
    %i8 = arith.constant 8 : index
    %i9 = arith.constant 9 : index
    %i10 = arith.constant 10 : index
    %i11 = arith.constant 11 : index
    %i12 = arith.constant 12 : index
    %i13 = arith.constant 13 : index
    %i14 = arith.constant 14 : index
    %i15 = arith.constant 15 : index
    memref.store %r0, %out[%i0] : memref<16xf32>
    memref.store %r1, %out[%i1] : memref<16xf32>
    memref.store %r2, %out[%i2] : memref<16xf32>
    memref.store %r3, %out[%i3] : memref<16xf32>
    memref.store %r4, %out[%i4] : memref<16xf32>
    memref.store %r5, %out[%i5] : memref<16xf32>
    memref.store %r6, %out[%i6] : memref<16xf32>
    memref.store %r7, %out[%i7] : memref<16xf32>
    memref.store %r8, %out[%i8] : memref<16xf32>
    memref.store %r9, %out[%i9] : memref<16xf32>
    memref.store %r10, %out[%i10] : memref<16xf32>
    memref.store %r11, %out[%i11] : memref<16xf32>
    memref.store %r12, %out[%i12] : memref<16xf32>
    memref.store %r13, %out[%i13] : memref<16xf32>
    memref.store %r14, %out[%i14] : memref<16xf32>
    memref.store %r15, %out[%i15] : memref<16xf32>
    gpu.terminator
  }
  call @printMemrefF32(%cast) : (memref<*xf32>) -> ()
  %root2 = math.sqrt %f2 : f32
  vector.print %root2 : f32
  return
}

func.func private @printMemrefF32(memref<*xf32>)

// CHECK: Unranked Memref base@ = {{.*}} rank = 1 offset = 0 sizes = [16] strides = [1] data =
// CHECK-NEXT: [4,  1,  0,  0,  1,  0,  1024,  3.5,  2,  3,  10,  0.5,  8,  3,  -2,  2.71828]
// CHECK-NEXT: 1.41421
