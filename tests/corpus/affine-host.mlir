// RUN: nova-run %s --device cpu | FileCheck %s

// The affine dialect in host code, lowered by lower-affine before outlining: nested affine.for,
// affine.apply with floordiv / mod / ceildiv of negative values, affine.if on an integer set
// (inequalities and an equality), affine.for with max/min bounds, a step and iter_args,
// affine.min / affine.max with several results, and an affine.parallel sum reduction (plus one
// small kernel reading s in reverse).
// Expected values are floor / ceiling arithmetic of x = 6 * i + j - 12 (x in -12..11).
func.func @main() {
  %q = memref.alloc() : memref<4x6xi32>
  %r = memref.alloc() : memref<4x6xi32>
  %c = memref.alloc() : memref<4x6xi32>
  %t = memref.alloc() : memref<4x6xi32>
  %s = memref.alloc() : memref<4xi32>
  %mm = memref.alloc() : memref<2x4xi32>
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 6 {
      %fd = affine.apply affine_map<(d0, d1) -> ((d0 * 6 + d1 - 12) floordiv 5)>(%i, %j)
      %md = affine.apply affine_map<(d0, d1) -> ((d0 * 6 + d1 - 12) mod 5)>(%i, %j)
      %cd = affine.apply affine_map<(d0, d1) -> ((d0 * 6 + d1 - 12) ceildiv 4)>(%i, %j)
      %fdi = arith.index_cast %fd : index to i32
      %mdi = arith.index_cast %md : index to i32
      %cdi = arith.index_cast %cd : index to i32
      affine.store %fdi, %q[%i, %j] : memref<4x6xi32>
      affine.store %mdi, %r[%i, %j] : memref<4x6xi32>
      affine.store %cdi, %c[%i, %j] : memref<4x6xi32>
      %flag = affine.if affine_set<(d0, d1) : (-d0 + d1 >= 0, -d0 - d1 + 6 >= 0)>(%i, %j) -> i32 {
        %one = arith.constant 1 : i32
        affine.yield %one : i32
      } else {
        %z = affine.if affine_set<(d0, d1) : (d0 * 6 + d1 - 20 == 0)>(%i, %j) -> i32 {
          %seven = arith.constant 7 : i32
          affine.yield %seven : i32
        } else {
          %zero = arith.constant 0 : i32
          affine.yield %zero : i32
        }
        affine.yield %z : i32
      }
      affine.store %flag, %t[%i, %j] : memref<4x6xi32>
    }
  }
  %zero = arith.constant 0 : i32
  affine.for %i = 0 to 4 {
    %sum = affine.for %k = max affine_map<(d0) -> (d0, 1)>(%i) to min affine_map<(d0) -> (d0 + 4, 5)>(%i) step 2 iter_args(%acc = %zero) -> (i32) {
      %ki = arith.index_cast %k : index to i32
      %next = arith.addi %acc, %ki : i32
      affine.yield %next : i32
    }
    affine.store %sum, %s[%i] : memref<4xi32>
    %lo = affine.min affine_map<(d0) -> (d0 * 3 - 4, -d0 + 2, 1)>(%i)
    %hi = affine.max affine_map<(d0) -> (d0 * 3 - 4, -d0 + 2, 1)>(%i)
    %loi = arith.index_cast %lo : index to i32
    %hii = arith.index_cast %hi : index to i32
    affine.store %loi, %mm[0, %i] : memref<2x4xi32>
    affine.store %hii, %mm[1, %i] : memref<2x4xi32>
  }
  %total = affine.parallel (%i, %j) = (0, 0) to (4, 6) reduce ("addi") -> (i32) {
    %v = affine.load %q[%i, %j] : memref<4x6xi32>
    affine.yield %v : i32
  }
  %tot = memref.alloc() : memref<1xi32>
  affine.store %total, %tot[0] : memref<1xi32>
  // One small kernel (every corpus program has a device image): s2[t] = 2 * s[3 - t].
  %s2 = memref.alloc() : memref<4xi32>
  %sh = memref.cast %s : memref<4xi32> to memref<*xi32>
  %s2c = memref.cast %s2 : memref<4xi32> to memref<*xi32>
  gpu.host_register %sh : memref<*xi32>
  gpu.host_register %s2c : memref<*xi32>
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
    %v = affine.load %s[-%tx + 3] : memref<4xi32>
    %w = arith.addi %v, %v : i32
    affine.store %w, %s2[%tx] : memref<4xi32>
    gpu.terminator
  }
  %qc = memref.cast %q : memref<4x6xi32> to memref<*xi32>
  %rc = memref.cast %r : memref<4x6xi32> to memref<*xi32>
  %cc = memref.cast %c : memref<4x6xi32> to memref<*xi32>
  %tc = memref.cast %t : memref<4x6xi32> to memref<*xi32>
  %sc = memref.cast %s : memref<4xi32> to memref<*xi32>
  %mc = memref.cast %mm : memref<2x4xi32> to memref<*xi32>
  %totc = memref.cast %tot : memref<1xi32> to memref<*xi32>
  call @printMemrefI32(%qc) : (memref<*xi32>) -> ()
  call @printMemrefI32(%rc) : (memref<*xi32>) -> ()
  call @printMemrefI32(%cc) : (memref<*xi32>) -> ()
  call @printMemrefI32(%tc) : (memref<*xi32>) -> ()
  call @printMemrefI32(%sc) : (memref<*xi32>) -> ()
  call @printMemrefI32(%mc) : (memref<*xi32>) -> ()
  call @printMemrefI32(%totc) : (memref<*xi32>) -> ()
  call @printMemrefI32(%s2c) : (memref<*xi32>) -> ()
  return
}

func.func private @printMemrefI32(memref<*xi32>)

// x = 6i + j - 12; q = x floordiv 5, r = x mod 5 (never negative), c = x ceildiv 4;
// t = 1 where j >= i and i + j <= 6, else 7 where x == 8, else 0.
// CHECK: Unranked Memref base@ = {{.*}} rank = 2 offset = 0 sizes = [4, 6] strides = [6, 1] data =
// CHECK-NEXT: {{^\[\[}}-3,   -3,   -2,   -2,   -2,   -2],
// CHECK-NEXT: {{^}} [-2,   -1,   -1,   -1,   -1,   -1],
// CHECK-NEXT: {{^}} [0,   0,   0,   0,   0,   1],
// CHECK-NEXT: {{^}} [1,   1,   1,   1,   2,   2{{\]\]}}
// CHECK: Unranked Memref base@ = {{.*}} rank = 2 offset = 0 sizes = [4, 6] strides = [6, 1] data =
// CHECK-NEXT: {{^\[\[}}3,   4,   0,   1,   2,   3],
// CHECK-NEXT: {{^}} [4,   0,   1,   2,   3,   4],
// CHECK-NEXT: {{^}} [0,   1,   2,   3,   4,   0],
// CHECK-NEXT: {{^}} [1,   2,   3,   4,   0,   1{{\]\]}}
// CHECK: Unranked Memref base@ = {{.*}} rank = 2 offset = 0 sizes = [4, 6] strides = [6, 1] data =
// CHECK-NEXT: {{^\[\[}}-3,   -2,   -2,   -2,   -2,   -1],
// CHECK-NEXT: {{^}} [-1,   -1,   -1,   0,   0,   0],
// CHECK-NEXT: {{^}} [0,   1,   1,   1,   1,   2],
// CHECK-NEXT: {{^}} [2,   2,   2,   3,   3,   3{{\]\]}}
// CHECK: Unranked Memref base@ = {{.*}} rank = 2 offset = 0 sizes = [4, 6] strides = [6, 1] data =
// CHECK-NEXT: {{^\[\[}}1,   1,   1,   1,   1,   1],
// CHECK-NEXT: {{^}} [0,   1,   1,   1,   1,   1],
// CHECK-NEXT: {{^}} [0,   0,   1,   1,   1,   0],
// CHECK-NEXT: {{^}} [0,   0,   7,   1,   0,   0{{\]\]}}
// s[i] = sum of k in [max(i, 1), min(i + 4, 5)) step 2
// CHECK: Unranked Memref base@ = {{.*}} rank = 1 offset = 0 sizes = [4] strides = [1] data =
// CHECK-NEXT: [4,  4,  6,  3]
// min / max of (3i - 4, 2 - i, 1)
// CHECK: Unranked Memref base@ = {{.*}} rank = 2 offset = 0 sizes = [2, 4] strides = [4, 1] data =
// CHECK-NEXT: {{^\[\[}}-4,   -1,   0,   -1],
// CHECK-NEXT: {{^}} [2,   1,   2,   5{{\]\]}}
// affine.parallel reduce addi of q
// CHECK: Unranked Memref base@ = {{.*}} rank = 1 offset = 0 sizes = [1] strides = [1] data =
// CHECK-NEXT: [-12]
// s2[t] = 2 * s[3 - t] (the kernel)
// CHECK: Unranked Memref base@ = {{.*}} rank = 1 offset = 0 sizes = [4] strides = [1] data =
// CHECK-NEXT: [6,  12,  8,  8]
