// RUN: nova-opt %s --split-input-file --verify-diagnostics

// Invalid nvvm.wgmma / nvvm.fence.proxy IR in upstream MLIR's test style, with mlir-opt 22's
// messages on mlir-opt 22's lines (tests/unit/test_dialect_files.py runs both tools on it).
func.func @shape_m(%a: i64, %b: i64, %c: !llvm.struct<(f32, f32, f32, f32)>) -> !llvm.struct<(f32, f32, f32, f32)> {
  // expected-error @+1 {{'nvvm.wgmma.mma_async' op shape 'm' must be 64}}
  %d = nvvm.wgmma.mma_async %a, %b, %c, <m = 32, n = 8, k = 16>, D[<f32>, <one>], A[<f16>, <one>, <row>], B[<f16>, <one>, <col>] : !llvm.struct<(f32, f32, f32, f32)> -> !llvm.struct<(f32, f32, f32, f32)>
  return %d : !llvm.struct<(f32, f32, f32, f32)>
}

// -----

func.func @shape_n(%a: i64, %b: i64, %c: !llvm.struct<(f32, f32, f32, f32)>) -> !llvm.struct<(f32, f32, f32, f32)> {
  // expected-error @+1 {{'nvvm.wgmma.mma_async' op has input type f16 n is set to 12, it is not supported.}}
  %d = nvvm.wgmma.mma_async %a, %b, %c, <m = 64, n = 12, k = 16>, D[<f32>, <one>], A[<f16>, <one>, <row>], B[<f16>, <one>, <col>] : !llvm.struct<(f32, f32, f32, f32)> -> !llvm.struct<(f32, f32, f32, f32)>
  return %d : !llvm.struct<(f32, f32, f32, f32)>
}

// -----

func.func @shape_k(%a: i64, %b: i64, %c: !llvm.struct<(f32, f32, f32, f32)>) -> !llvm.struct<(f32, f32, f32, f32)> {
  // expected-error @+1 {{'nvvm.wgmma.mma_async' op shape 'k' must be 16 for input type f16}}
  %d = nvvm.wgmma.mma_async %a, %b, %c, <m = 64, n = 8, k = 32>, D[<f32>, <one>], A[<f16>, <one>, <row>], B[<f16>, <one>, <col>] : !llvm.struct<(f32, f32, f32, f32)> -> !llvm.struct<(f32, f32, f32, f32)>
  return %d : !llvm.struct<(f32, f32, f32, f32)>
}

// -----

func.func @count(%a: i64, %b: i64, %c: !llvm.struct<(f32, f32, f32, f32)>) -> !llvm.struct<(f32, f32, f32, f32)> {
  // expected-error @+1 {{'nvvm.wgmma.mma_async' op results 8, however output struct has 4 elements}}
  %d = nvvm.wgmma.mma_async %a, %b, %c, <m = 64, n = 16, k = 16>, D[<f32>, <one>], A[<f16>, <one>, <row>], B[<f16>, <one>, <col>] : !llvm.struct<(f32, f32, f32, f32)> -> !llvm.struct<(f32, f32, f32, f32)>
  return %d : !llvm.struct<(f32, f32, f32, f32)>
}

// -----

func.func @satfinite(%a: i64, %b: i64, %c: !llvm.struct<(f32, f32, f32, f32)>) -> !llvm.struct<(f32, f32, f32, f32)> {
  // expected-error @+1 {{'nvvm.wgmma.mma_async' op  `satfinite` can be only used with s32 accumulator, however the current accumulator is f32}}
  %d = nvvm.wgmma.mma_async %a, %b, %c, <m = 64, n = 8, k = 16>, D[<f32>, <one>, <satfinite>], A[<f16>, <one>, <row>], B[<f16>, <one>, <col>] : !llvm.struct<(f32, f32, f32, f32)> -> !llvm.struct<(f32, f32, f32, f32)>
  return %d : !llvm.struct<(f32, f32, f32, f32)>
}

// -----

func.func @mixed(%a: i64, %b: i64, %c: !llvm.struct<(f32, f32, f32, f32)>) -> !llvm.struct<(f32, f32, f32, f32)> {
  // expected-error @+1 {{'nvvm.wgmma.mma_async' op f32 += f16 * bf16, it is not supported.}}
  %d = nvvm.wgmma.mma_async %a, %b, %c, <m = 64, n = 8, k = 16>, D[<f32>, <one>], A[<f16>, <one>, <row>], B[<bf16>, <one>, <col>] : !llvm.struct<(f32, f32, f32, f32)> -> !llvm.struct<(f32, f32, f32, f32)>
  return %d : !llvm.struct<(f32, f32, f32, f32)>
}

// -----

func.func @elements(%a: i64, %b: i64, %c: !llvm.struct<(f32, f32, f32, f16)>) -> !llvm.struct<(f32, f32, f32, f16)> {
  // expected-error @+1 {{'nvvm.wgmma.mma_async' op all elements in struct must be same type but there is 'f16'}}
  %d = nvvm.wgmma.mma_async %a, %b, %c, <m = 64, n = 8, k = 16>, D[<f32>, <one>], A[<f16>, <one>, <row>], B[<f16>, <one>, <col>] : !llvm.struct<(f32, f32, f32, f16)> -> !llvm.struct<(f32, f32, f32, f16)>
  return %d : !llvm.struct<(f32, f32, f32, f16)>
}

// -----

func.func @result(%a: i64, %b: i64, %c: !llvm.struct<(f32, f32, f32, f32)>) -> !llvm.struct<(f32, f32, f32, f32, f32)> {
  // expected-error @+1 {{'nvvm.wgmma.mma_async' op failed to verify that input struct and result struct must be the same type}}
  %d = nvvm.wgmma.mma_async %a, %b, %c, <m = 64, n = 8, k = 16>, D[<f32>, <one>], A[<f16>, <one>, <row>], B[<f16>, <one>, <col>] : !llvm.struct<(f32, f32, f32, f32)> -> !llvm.struct<(f32, f32, f32, f32, f32)>
  return %d : !llvm.struct<(f32, f32, f32, f32, f32)>
}

// -----

func.func @fence_space() {
  // expected-error @+1 {{'nvvm.fence.proxy' op async_shared fence requires space attribute}}
  nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>}
  return
}

// -----

func.func @fence_other_space() {
  // expected-error @+1 {{'nvvm.fence.proxy' op only async_shared fence can have space attribute}}
  nvvm.fence.proxy {kind = #nvvm.proxy_kind<async>, space = #nvvm.shared_space<cta>}
  return
}
