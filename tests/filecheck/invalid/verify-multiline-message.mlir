// RUN: not nova-opt %s --split-input-file 2>&1 | FileCheck %s

// Verifier messages are one line (xDSL's IRDL constraint messages span several), so the source
// line and caret follow the `error:` line directly.

func.func @bad_cast(%i: i32) {
  // CHECK: verify-multiline-message.mlir:[[# @LINE + 3]]:8: error: 'index.casts' op result #0 must be integer or index, but got 'memref<?xf32>'
  // CHECK-NEXT: {{^}}  %r = index.casts %i : i32 to memref<?xf32>
  // CHECK-NEXT: {{^}}       ^
  %r = index.casts %i : i32 to memref<?xf32>
  return
}

// -----

// A store with too few indices: upstream's message (checked before xDSL's verifier, which raises
// a bare Exception), located at the op.

func.func @bad_store(%m: memref<?xf32>, %v: f32) {
  // CHECK: verify-multiline-message.mlir:[[# @LINE + 3]]:3: error: 'memref.store' op store index operand count not equal to memref rank
  // CHECK-NEXT: {{^}}  memref.store %v, %m[] : memref<?xf32>
  // CHECK-NEXT: {{^}}  ^
  memref.store %v, %m[] : memref<?xf32>
  return
}
