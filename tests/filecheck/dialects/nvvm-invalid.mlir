// RUN: nova-opt %s --split-input-file --verify-diagnostics

// Invalid nvvm IR in upstream MLIR's test style, with mlir-opt 22's messages on mlir-opt 22's
// lines (tests/unit/test_dialect_files.py runs both tools on it).

func.func @shfl_type(%m: i32, %v: i32, %o: i32, %c: i32) {
  // expected-error @+1 {{'nvvm.shfl.sync' op expected return type to be of type 'i32' but got 'f32' instead}}
  %0 = nvvm.shfl.sync bfly %m, %v, %o, %c : i32 -> f32
  return
}

// -----

func.func @vote_ballot(%m: i32, %p: i1) {
  // expected-error @+1 {{'nvvm.vote.sync' op vote.sync 'ballot' returns an i32}}
  %0 = nvvm.vote.sync ballot %m, %p -> i1
  return
}

// -----

func.func @vote_any(%m: i32, %p: i1) {
  // expected-error @+1 {{'nvvm.vote.sync' op vote.sync 'any', 'all' and 'uni' returns an i1}}
  %0 = nvvm.vote.sync any %m, %p -> i32
  return
}

// -----

func.func @match_type(%m: i32, %v: f32) {
  // expected-error @+1 {{'nvvm.match.sync' op operand #1 must be 32-bit signless integer or 64-bit signless integer, but got 'f32'}}
  %0 = nvvm.match.sync any %m, %v : f32 -> i32
  return
}

// -----

func.func @warp_sync_mask(%m: i64) {
  // expected-error @+1 {{'nvvm.bar.warp.sync' op operand #0 must be 32-bit signless integer, but got 'i64'}}
  nvvm.bar.warp.sync %m : i64
  return
}

// -----

func.func @vote_mask(%m: i64, %p: i1) {
  // expected-error @+1 {{'nvvm.vote.sync' op operand #0 must be 32-bit signless integer, but got 'i64'}}
  %0 = "nvvm.vote.sync"(%m, %p) <{kind = #nvvm<vote_sync_kind any>}> : (i64, i1) -> i1
  return
}
