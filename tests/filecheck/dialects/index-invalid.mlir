// RUN: nova-opt %s --split-input-file --verify-diagnostics

// Invalid index IR in upstream MLIR's test style, with mlir-opt 22's messages on mlir-opt 22's
// lines (tests/unit/test_dialect_files.py runs both tools on it).

func.func @casts_same(%a: index) {
  // expected-error @+1 {{'index.casts' op operand type 'index' and result type 'index' are cast incompatible}}
  %0 = index.casts %a : index to index
  return
}

// -----

func.func @castu_types(%a: i32) {
  // expected-error @+1 {{'index.castu' op operand type 'i32' and result type 'i64' are cast incompatible}}
  %0 = index.castu %a : i32 to i64
  return
}

// -----

func.func @casts_float(%a: f32) {
  // expected-error @+1 {{'index.casts' op operand #0 must be integer or index, but got 'f32'}}
  %0 = index.casts %a : f32 to index
  return
}

// -----

func.func @casts_vector(%v: vector<2xindex>) {
  // expected-error @+1 {{'index.casts' op operand #0 must be integer or index, but got 'vector<2xindex>'}}
  %0 = index.casts %v : vector<2xindex> to vector<2xi32>
  return
}

// -----

func.func @constant_type() {
  // expected-error @+1 {{'index.constant' op attribute 'value' failed to satisfy constraint: index attribute}}
  %0 = "index.constant"() {value = 1 : i32} : () -> index
  return
}

// -----

func.func @add_type(%a: i32) {
  // expected-error @+1 {{'index.add' op operand #0 must be index, but got 'i32'}}
  %0 = "index.add"(%a, %a) : (i32, i32) -> i32
  return
}

// -----

func.func @shl_result(%a: index) {
  // expected-error @+1 {{'index.shl' op result #0 must be index, but got 'i64'}}
  %0 = "index.shl"(%a, %a) : (index, index) -> i64
  return
}
