// RUN: nova-opt %s --split-input-file --verify-diagnostics

// Invalid vector IR in upstream MLIR's test style, with mlir-opt 22's messages on mlir-opt 22's
// lines (tests/unit/test_dialect_files.py runs both tools on it).

func.func @broadcast_rank(%v: vector<2x4xf32>) {
  // expected-error @+1 {{'vector.broadcast' op source rank higher than destination rank}}
  %0 = vector.broadcast %v : vector<2x4xf32> to vector<4xf32>
  return
}

// -----

func.func @extract_position(%v: vector<4xf32>) {
  // expected-error @+1 {{'vector.extract' op expected position attribute #1 to be a non-negative integer smaller than the corresponding vector dimension or poison (-1)}}
  %0 = vector.extract %v[4] : f32 from vector<4xf32>
  return
}

// -----

func.func @extract_type(%v: vector<4xf32>) {
  // expected-error @+1 {{'vector.extract' op failed to verify that operand and result have same element type}}
  %0 = vector.extract %v[1] : i32 from vector<4xf32>
  return
}

// -----

func.func @insert_position(%v: vector<4xf32>, %s: f32) {
  // expected-error @+1 {{'vector.insert' op expected position attribute #1 to be a non-negative integer smaller than the corresponding dest vector dimension}}
  %0 = vector.insert %s, %v [5] : f32 into vector<4xf32>
  return
}

// -----

func.func @shuffle_index(%v: vector<4xf32>) {
  // expected-error @+1 {{'vector.shuffle' op mask index #2 out of range}}
  %0 = vector.shuffle %v, %v [0, 9] : vector<4xf32>, vector<4xf32>
  return
}

// -----

func.func @reduction_type(%v: vector<4xf32>) {
  // expected-error @+1 {{'vector.reduction' op failed to verify that source operand and result have same element type}}
  %0 = vector.reduction <add>, %v : vector<4xf32> into i32
  return
}

// -----

func.func @reduction_kind(%v: vector<4xi32>) {
  // expected-error @+1 {{'vector.reduction' op unsupported reduction type ''i32'' for kind 'maxnumf'}}
  %0 = vector.reduction <maxnumf>, %v : vector<4xi32> into i32
  return
}

// -----

func.func @bitcast_size(%v: vector<4xf32>) {
  // expected-error @+1 {{'vector.bitcast' op source/result bitwidth of the minor 1-D vectors must be equal}}
  %0 = vector.bitcast %v : vector<4xf32> to vector<3xi32>
  return
}

// -----

func.func @shape_cast_count(%v: vector<2x4xf32>) {
  // expected-error @+1 {{'vector.shape_cast' op has different number of elements at source (8) and result (6)}}
  %0 = vector.shape_cast %v : vector<2x4xf32> to vector<6xf32>
  return
}

// -----

func.func @constant_mask(%s: f32) {
  // expected-error @+1 {{'vector.constant_mask' op array attr of size out of bounds of vector result dimension size}}
  %0 = vector.constant_mask [5] : vector<4xi1>
  return
}

// -----

func.func @load_rank(%m: memref<?x8xf32>, %i: index) {
  // expected-error @+1 {{'vector.load' op requires 2 indices}}
  %0 = vector.load %m[%i] : memref<?x8xf32>, vector<4xf32>
  return
}

// -----

func.func @load_element(%m: memref<?xf32>, %i: index) {
  // expected-error @+1 {{'vector.load' op base and result element types should match}}
  %0 = vector.load %m[%i] : memref<?xf32>, vector<4xi32>
  return
}

// -----

// expected-note @+1 {{prior use here}}
func.func @transfer_pad(%m: memref<?xf32>, %i: index, %p: i32) {
  // expected-error @+1 {{use of value '%p' expects different type than prior uses: 'f32' vs 'i32'}}
  %0 = vector.transfer_read %m[%i], %p : memref<?xf32>, vector<4xf32>
  return
}

// -----

// expected-note @+1 {{prior use here}}
func.func @fma_types(%a: vector<4xf32>, %b: vector<4xf32>, %c: vector<8xf32>) {
  // expected-error @+1 {{use of value '%c' expects different type than prior uses: 'vector<4xf32>' vs 'vector<8xf32>'}}
  %0 = vector.fma %a, %b, %c : vector<4xf32>
  return
}

// -----

func.func @maskedload_mask(%m: memref<?xf32>, %i: index, %mask: vector<8xi1>, %p: vector<4xf32>) {
  // expected-error @+1 {{'vector.maskedload' op expected result shape to match mask shape}}
  %0 = vector.maskedload %m[%i], %mask, %p : memref<?xf32>, vector<8xi1>, vector<4xf32> into vector<4xf32>
  return
}

// -----

func.func @create_mask_count(%i: index) {
  // expected-error @+1 {{'vector.create_mask' op must specify an operand for each result vector dimension}}
  %0 = vector.create_mask %i, %i : vector<4xi1>
  return
}

// -----

func.func @broadcast_dims(%v: vector<3xf32>) {
  // expected-error @+1 {{'vector.broadcast' op dimension mismatch (3 vs. 4)}}
  %0 = vector.broadcast %v : vector<3xf32> to vector<2x4xf32>
  return
}

// -----

func.func @broadcast_element(%v: vector<4xf32>) {
  // expected-error @+1 {{'vector.broadcast' op failed to verify that source operand and result have same element type}}
  %0 = vector.broadcast %v : vector<4xf32> to vector<2x4xi32>
  return
}

// -----

func.func @shuffle_first(%v: vector<4xf32>) {
  // expected-error @+1 {{'vector.shuffle' op mask index #1 out of range}}
  %0 = vector.shuffle %v, %v [9, 0] : vector<4xf32>, vector<4xf32>
  return
}

// -----

// expected-note @+1 {{prior use here}}
func.func @reduction_acc(%v: vector<4xf32>, %w: vector<4xf32>) {
  // expected-error @+1 {{use of value '%w' expects different type than prior uses: 'f32' vs 'vector<4xf32>'}}
  %0 = vector.reduction <add>, %v, %w : vector<4xf32> into f32
  return
}

// -----

func.func @store_element(%m: memref<?xf32>, %i: index, %v: vector<4xi32>) {
  // expected-error @+1 {{'vector.store' op base and valueToStore element type should match}}
  vector.store %v, %m[%i] : memref<?xf32>, vector<4xi32>
  return
}

// -----

func.func @store_rank(%m: memref<?x4xf32>, %i: index, %v: vector<4xf32>) {
  // expected-error @+1 {{'vector.store' op requires 2 indices}}
  vector.store %v, %m[%i] : memref<?x4xf32>, vector<4xf32>
  return
}

// -----

func.func @insert_element(%v: vector<4xf32>, %s: i32) {
  // expected-error @+1 {{'vector.insert' op failed to verify that source operand and result have same element type}}
  %0 = vector.insert %s, %v [1] : i32 into vector<4xf32>
  return
}

// -----

func.func @bitcast_rank(%v: vector<4xf32>) {
  // expected-error @+1 {{'vector.bitcast' op failed to verify that all of {source, result} have same rank}}
  %0 = vector.bitcast %v : vector<4xf32> to vector<2x4xf32>
  return
}

// -----

func.func @from_elements_count(%s: f32) {
  // expected-error @+1 {{custom op 'vector.from_elements' number of operands and types do not match: got 1 operands and 2 types}}
  %0 = vector.from_elements %s : vector<2xf32>
  return
}

// -----

func.func @step_type() {
  // expected-error @+1 {{'vector.step' op result #0 must be vector of index values of ranks 1, but got 'vector<4xi32>'}}
  %0 = vector.step : vector<4xi32>
  return
}

// -----

func.func @step_rank() {
  // expected-error @+1 {{'vector.step' op result #0 must be vector of index values of ranks 1, but got 'vector<2x4xindex>'}}
  %0 = vector.step : vector<2x4xindex>
  return
}
