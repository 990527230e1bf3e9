// RUN: not nova-translate %s --split-input-file --emit=device-llvm 2>&1 | FileCheck %s
// RUN: not nova-translate %s --split-input-file --emit=cpu-llvm 2>&1 | FileCheck %s

// nvgpu.mma.sync / nvgpu.ldmatrix programs upstream accepts but Nova's LLVM lowering does not
// (yet): mma shapes other than m16n8k16, operands other than f16, an accumulator whose type
// differs from the result's, ldmatrix of 3 tiles or with fewer indices than the memref's rank.
// Both device targets reject them at the op with the same message.

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @shape(%h: f16, %f: f32) kernel {
      %a = vector.broadcast %h : f16 to vector<2x2xf16>
      %b = vector.broadcast %h : f16 to vector<1x2xf16>
      %c = vector.broadcast %f : f32 to vector<2x2xf32>
      // CHECK: unsupported-mma-sync.mlir:[[# @LINE + 1]]:12: error: nvgpu.mma.sync: mmaShape [16, 8, 8] is not supported (only [16, 8, 16] with f16 operands)
      %d = nvgpu.mma.sync(%a, %b, %c) {mmaShape = [16, 8, 8]} : (vector<2x2xf16>, vector<1x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @bf16(%h: bf16, %f: f32) kernel {
      %a = vector.broadcast %h : bf16 to vector<4x2xbf16>
      %b = vector.broadcast %h : bf16 to vector<2x2xbf16>
      %c = vector.broadcast %f : f32 to vector<2x2xf32>
      // CHECK: unsupported-mma-sync.mlir:[[# @LINE + 1]]:12: error: nvgpu.mma.sync: operands of bf16 are not supported (only f16 A and B)
      %d = nvgpu.mma.sync(%a, %b, %c) {mmaShape = [16, 8, 16]} : (vector<4x2xbf16>, vector<2x2xbf16>, vector<2x2xf32>) -> vector<2x2xf32>
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @mixed(%h: f16, %f: f32) kernel {
      %a = vector.broadcast %h : f16 to vector<4x2xf16>
      %b = vector.broadcast %h : f16 to vector<2x2xf16>
      %c = vector.broadcast %f : f32 to vector<2x2xf32>
      // CHECK: unsupported-mma-sync.mlir:[[# @LINE + 1]]:12: error: nvgpu.mma.sync: result type vector<2x2xf16> differs from the accumulator's vector<2x2xf32>
      %d = nvgpu.mma.sync(%a, %b, %c) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf16>
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @tiles(%i: index) workgroup(%sm: memref<64xf16, #gpu.address_space<workgroup>>) kernel {
      // CHECK: unsupported-mma-sync.mlir:[[# @LINE + 1]]:12: error: nvgpu.ldmatrix: numTiles = 3 is not supported (1, 2 or 4)
      %a = nvgpu.ldmatrix %sm[%i] {numTiles = 3 : i32, transpose = false} : memref<64xf16, #gpu.address_space<workgroup>> -> vector<3x2xf16>
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @indices(%i: index) workgroup(%sm: memref<8x64xf16, #gpu.address_space<workgroup>>) kernel {
      // CHECK: unsupported-mma-sync.mlir:[[# @LINE + 1]]:12: error: nvgpu.ldmatrix: expected one index per dimension of a memref of rank >= 1
      %a = nvgpu.ldmatrix %sm[%i] {numTiles = 4 : i32, transpose = false} : memref<8x64xf16, #gpu.address_space<workgroup>> -> vector<4x2xf16>
      gpu.return
    }
  }
}
