// RUN: nova-translate %s --emit=ptx | FileCheck %s

// f32 and f16 transcendental functions on NVPTX are computed in single precision (math32.py):
// the kernel's PTX has no f64 register or instruction. sin takes its Payne-Hanek branch only
// for |x| > 105615.

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @pointwise(%x: memref<?xf32>, %h: memref<?xf16>, %n: index) kernel {
      %i = gpu.global_id x
      %ok = arith.cmpi slt, %i, %n : index
      scf.if %ok {
        %v = memref.load %x[%i] : memref<?xf32>
        %e = math.exp %v : f32
        %r = math.erf %e : f32
        %t = math.tanh %r : f32
        %l = math.log %t : f32
        %s = math.sin %l : f32
        %c = math.cos %s : f32
        %p = math.powf %c, %v : f32
        memref.store %p, %x[%i] : memref<?xf32>
        %hv = memref.load %h[%i] : memref<?xf16>
        %he = math.exp %hv : f16
        %hr = math.erf %he : f16
        memref.store %hr, %h[%i] : memref<?xf16>
      }
      gpu.return
    }
  }
}

// CHECK:       .visible .entry pointwise(
// CHECK-NOT:   .f64
// CHECK:       fma.rn.f32
// CHECK-NOT:   .f64
// CHECK:       ret;
