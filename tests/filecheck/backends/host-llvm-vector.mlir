// RUN: nova-translate %s --emit=host-llvm | FileCheck %s

// Host code on vectors: dense constants are LLVM vector constants, broadcast is an
// insertelement + zero-mask shufflevector, arith ops take <N x T> operands, a reduction with an
// accumulator folds the lanes then the accumulator, vectors pass to and from (private)
// functions as <N x T>, and vector.print of a vector calls the runner ABI piece by piece:
// open, elements with commas between them, close, then the punctuation.

func.func private @twice(%v: vector<2xf32>) -> vector<2xf32> {
  %r = arith.addf %v, %v : vector<2xf32>
  return %r : vector<2xf32>
}

func.func @main(%x: f32) {
  %a = arith.constant dense<[1.5, -2.0]> : vector<2xf32>
  %b = vector.broadcast %x : f32 to vector<2xf32>
  %c = arith.addf %a, %b : vector<2xf32>
  %d = func.call @twice(%c) : (vector<2xf32>) -> vector<2xf32>
  %r = vector.reduction <maxnumf>, %d, %x : vector<2xf32> into f32
  vector.print %d : vector<2xf32>
  vector.print %r : f32
  return
}

// CHECK-LABEL: define internal <2 x float> @"twice"(<2 x float> %".1")
// CHECK:         fadd <2 x float> %".1", %".1"

// CHECK-LABEL: define internal void @"main"(float %".1")
// CHECK:         %[[ONE:".*"]] = insertelement <2 x float> <float undef, float undef>, float %".1", i32 0
// CHECK-NEXT:    %[[B:".*"]] = shufflevector <2 x float> %[[ONE]], <2 x float> <float undef, float undef>, <2 x i32> <i32 0, i32 0>
// CHECK-NEXT:    %[[C:".*"]] = fadd <2 x float> <float 0x3ff8000000000000, float 0xc000000000000000>, %[[B]]
// CHECK-NEXT:    %[[D:".*"]] = call <2 x float> @"twice"(<2 x float> %[[C]])
// CHECK-NEXT:    %[[L0:".*"]] = extractelement <2 x float> %[[D]], i32 0
// CHECK-NEXT:    %[[L1:".*"]] = extractelement <2 x float> %[[D]], i32 1
// CHECK-NEXT:    %[[M:".*"]] = call float @"llvm.maxnum.f32"(float %[[L0]], float %[[L1]])
// CHECK-NEXT:    %[[R:".*"]] = call float @"llvm.maxnum.f32"(float %[[M]], float %".1")
// CHECK-NEXT:    call void @"nova_rt_print_open"()
// CHECK-NEXT:    %[[E0:".*"]] = extractelement <2 x float> %[[D]], i32 0
// CHECK-NEXT:    call void @"nova_rt_print_f32"(float %[[E0]])
// CHECK-NEXT:    call void @"nova_rt_print_comma"()
// CHECK-NEXT:    %[[E1:".*"]] = extractelement <2 x float> %[[D]], i32 1
// CHECK-NEXT:    call void @"nova_rt_print_f32"(float %[[E1]])
// CHECK-NEXT:    call void @"nova_rt_print_close"()
// CHECK-NEXT:    call void @"nova_rt_print_newline"()
// CHECK-NEXT:    call void @"nova_rt_print_f32"(float %[[R]])
// CHECK-NEXT:    call void @"nova_rt_print_newline"()
