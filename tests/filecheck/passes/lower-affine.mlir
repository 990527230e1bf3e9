// RUN: nova-opt %s -p lower-affine --split-input-file | FileCheck %s
// RUN: nova-opt %s --lower-affine --split-input-file | FileCheck %s
// RUN: nova-opt %s -p lower-affine,outline-kernels --split-input-file | FileCheck %s --check-prefix=OUTLINED

// lower-affine: the affine dialect to scf + arith + memref, op for op as upstream's
// `mlir-opt --lower-affine` (test_passes_differential compares every part of this file with it).

// apply: floordiv, mod and ceildiv expand to sign-corrected divsi / remsi (MLIR's
// AffineApplyExpander); constants are created per use, in upstream's order.
// CHECK-LABEL: func.func @apply
// CHECK-SAME: ([[A:%[^:]+]]: index, [[N:%[^:]+]]: index)
// CHECK-NEXT: [[C4:%[^ ]+]] = arith.constant 4 : index
// CHECK-NEXT: [[Z:%[^ ]+]] = arith.constant 0 : index
// CHECK-NEXT: [[M1:%[^ ]+]] = arith.constant -1 : index
// CHECK-NEXT: [[NEG:%[^ ]+]] = arith.cmpi slt, [[A]], [[Z]] : index
// CHECK-NEXT: [[FLIP:%[^ ]+]] = arith.subi [[M1]], [[A]] : index
// CHECK-NEXT: [[DIVIDEND:%[^ ]+]] = arith.select [[NEG]], [[FLIP]], [[A]] : index
// CHECK-NEXT: [[Q:%[^ ]+]] = arith.divsi [[DIVIDEND]], [[C4]] : index
// CHECK-NEXT: [[QF:%[^ ]+]] = arith.subi [[M1]], [[Q]] : index
// CHECK-NEXT: [[FLOOR:%[^ ]+]] = arith.select [[NEG]], [[QF]], [[Q]] : index
// CHECK-NEXT: [[C3:%[^ ]+]] = arith.constant 3 : index
// CHECK-NEXT: [[REM:%[^ ]+]] = arith.remsi [[A]], [[C3]] : index
// CHECK-NEXT: [[Z2:%[^ ]+]] = arith.constant 0 : index
// CHECK-NEXT: [[RNEG:%[^ ]+]] = arith.cmpi slt, [[REM]], [[Z2]] : index
// CHECK-NEXT: [[RADJ:%[^ ]+]] = arith.addi [[REM]], [[C3]] : index
// CHECK-NEXT: [[MOD:%[^ ]+]] = arith.select [[RNEG]], [[RADJ]], [[REM]] : index
// CHECK-NEXT: [[C2:%[^ ]+]] = arith.constant 2 : index
// CHECK-NEXT: [[N2:%[^ ]+]] = arith.muli [[N]], [[C2]] overflow<nsw> : index
// CHECK-NEXT: [[SUM:%[^ ]+]] = arith.addi [[MOD]], [[N2]] : index
// CHECK-NEXT: [[C5:%[^ ]+]] = arith.constant 5 : index
// CHECK-NEXT: [[Z3:%[^ ]+]] = arith.constant 0 : index
// CHECK-NEXT: [[ONE:%[^ ]+]] = arith.constant 1 : index
// CHECK-NEXT: [[NONPOS:%[^ ]+]] = arith.cmpi sle, [[A]], [[Z3]] : index
// CHECK-NEXT: [[NEGA:%[^ ]+]] = arith.subi [[Z3]], [[A]] : index
// CHECK-NEXT: [[DEC:%[^ ]+]] = arith.subi [[A]], [[ONE]] : index
// CHECK-NEXT: [[CD:%[^ ]+]] = arith.select [[NONPOS]], [[NEGA]], [[DEC]] : index
// CHECK-NEXT: [[CQ:%[^ ]+]] = arith.divsi [[CD]], [[C5]] : index
// CHECK-NEXT: [[CQN:%[^ ]+]] = arith.subi [[Z3]], [[CQ]] : index
// CHECK-NEXT: [[CQI:%[^ ]+]] = arith.addi [[CQ]], [[ONE]] : index
// CHECK-NEXT: [[CEIL:%[^ ]+]] = arith.select [[NONPOS]], [[CQN]], [[CQI]] : index
// CHECK-NEXT: return [[FLOOR]], [[SUM]], [[CEIL]] : index, index, index
func.func @apply(%a: index, %n: index) -> (index, index, index) {
  %0 = affine.apply affine_map<(d0) -> (d0 floordiv 4)>(%a)
  %1 = affine.apply affine_map<(d0)[s0] -> (d0 mod 3 + s0 * 2)>(%a)[%n]
  %2 = affine.apply affine_map<(d0) -> (d0 ceildiv 5)>(%a)
  return %0, %1, %2 : index, index, index
}

// -----

// min / max of several results: a left-to-right chain of minsi / maxsi.
// CHECK-LABEL: func.func @min_max
// CHECK-SAME: ([[A:%[^:]+]]: index, [[N:%[^:]+]]: index)
// CHECK-NEXT: [[C2:%[^ ]+]] = arith.constant 2 : index
// CHECK-NEXT: [[S:%[^ ]+]] = arith.addi [[N]], [[C2]] : index
// CHECK-NEXT: [[C10:%[^ ]+]] = arith.constant 10 : index
// CHECK-NEXT: [[M0:%[^ ]+]] = arith.minsi [[A]], [[S]] : index
// CHECK-NEXT: [[MIN:%[^ ]+]] = arith.minsi [[M0]], [[C10]] : index
// CHECK-NEXT: [[CM3:%[^ ]+]] = arith.constant -3 : index
// CHECK-NEXT: [[D:%[^ ]+]] = arith.addi [[A]], [[CM3]] : index
// CHECK-NEXT: [[C0:%[^ ]+]] = arith.constant 0 : index
// CHECK-NEXT: [[MAX:%[^ ]+]] = arith.maxsi [[D]], [[C0]] : index
// CHECK-NEXT: return [[MIN]], [[MAX]] : index, index
func.func @min_max(%a: index, %n: index) -> (index, index) {
  %0 = affine.min affine_map<(d0)[s0] -> (d0, s0 + 2, 10)>(%a)[%n]
  %1 = affine.max affine_map<(d0) -> (d0 - 3, 0)>(%a)
  return %0, %1 : index, index
}

// -----

// for: max of the lower bound map, min of the upper, the step as a constant, iter_args.
// CHECK-LABEL: func.func @for
// CHECK-SAME: ([[A:%[^:]+]]: index, [[N:%[^:]+]]: index, [[X:%[^:]+]]: f32)
// CHECK-NEXT: [[LB:%[^ ]+]] = arith.maxsi [[A]], [[N]] : index
// CHECK-NEXT: [[C10:%[^ ]+]] = arith.constant 10 : index
// CHECK-NEXT: [[U0:%[^ ]+]] = arith.addi [[A]], [[C10]] : index
// CHECK-NEXT: [[C20:%[^ ]+]] = arith.constant 20 : index
// CHECK-NEXT: [[UB:%[^ ]+]] = arith.minsi [[U0]], [[C20]] : index
// CHECK-NEXT: [[STEP:%[^ ]+]] = arith.constant 3 : index
// CHECK-NEXT: [[R:%[^ ]+]] = scf.for [[I:%[^ ]+]] = [[LB]] to [[UB]] step [[STEP]] iter_args([[ACC:%[^ ]+]] = [[X]]) -> (f32) {
// CHECK-NEXT: [[NEXT:%[^ ]+]] = arith.addf [[ACC]], [[ACC]] : f32
// CHECK-NEXT: scf.yield [[NEXT]] : f32
// CHECK-NEXT: }
// CHECK-NEXT: return [[R]] : f32
func.func @for(%a: index, %n: index, %x: f32) -> f32 {
  %0 = affine.for %i = max affine_map<(d0)[s0] -> (d0, s0)>(%a)[%n] to min affine_map<(d0) -> (d0 + 10, 20)>(%a) step 3 iter_args(%acc = %x) -> (f32) {
    %1 = arith.addf %acc, %acc : f32
    affine.yield %1 : f32
  }
  return %0 : f32
}

// -----

// if: the conjunction of the set's constraints (>= 0 as sge, == 0 as eq) against one zero.
// CHECK-LABEL: func.func @if
// CHECK-SAME: ([[A:%[^:]+]]: index, [[N:%[^:]+]]: index, [[M:%[^:]+]]: memref<4xf32>, [[X:%[^:]+]]: f32)
// CHECK-NEXT: [[Z:%[^ ]+]] = arith.constant 0 : index
// CHECK-NEXT: [[CM1:%[^ ]+]] = arith.constant -1 : index
// CHECK-NEXT: [[E0:%[^ ]+]] = arith.addi [[A]], [[CM1]] : index
// CHECK-NEXT: [[T0:%[^ ]+]] = arith.cmpi sge, [[E0]], [[Z]] : index
// CHECK-NEXT: [[CM1B:%[^ ]+]] = arith.constant -1 : index
// CHECK-NEXT: [[NA:%[^ ]+]] = arith.muli [[A]], [[CM1B]] overflow<nsw> : index
// CHECK-NEXT: [[E1:%[^ ]+]] = arith.addi [[NA]], [[N]] : index
// CHECK-NEXT: [[T1:%[^ ]+]] = arith.cmpi eq, [[E1]], [[Z]] : index
// CHECK-NEXT: [[COND:%[^ ]+]] = arith.andi [[T0]], [[T1]] : i1
// CHECK-NEXT: scf.if [[COND]] {
// CHECK-NEXT: [[I0:%[^ ]+]] = arith.constant 0 : index
// CHECK-NEXT: memref.store [[X]], [[M]]{{\[}}[[I0]]] : memref<4xf32>
// CHECK-NEXT: }
// CHECK-NOT: else
// CHECK: [[C:%[^ ]+]] = arith.cmpi sge
// CHECK-NEXT: [[R:%[^ ]+]] = scf.if [[C]] -> (index) {
// CHECK-NEXT: scf.yield [[A]] : index
// CHECK-NEXT: } else {
// CHECK-NEXT: scf.yield [[N]] : index
// CHECK-NEXT: }
// CHECK-NEXT: return [[R]] : index
func.func @if(%a: index, %n: index, %m: memref<4xf32>, %x: f32) -> index {
  affine.if affine_set<(d0)[s0] : (d0 - 1 >= 0, -d0 + s0 == 0)>(%a)[%n] {
    affine.store %x, %m[0] : memref<4xf32>
  }
  %0 = affine.if affine_set<(d0) : (-d0 + 9 >= 0)>(%a) -> index {
    affine.yield %a : index
  } else {
    affine.yield %n : index
  }
  return %0 : index
}

// -----

// load / store: the map's results become memref indices; symbol() operands are symbols.
// CHECK-LABEL: func.func @load_store
// CHECK-SAME: ([[M:%[^:]+]]: memref<10x20xf32>, [[I:%[^:]+]]: index, [[N:%[^:]+]]: index)
// CHECK-NEXT: [[C1:%[^ ]+]] = arith.constant 1 : index
// CHECK-NEXT: [[I1:%[^ ]+]] = arith.addi [[I]], [[C1]] : index
// CHECK: [[Q:%[^ ]+]] = arith.divsi
// CHECK-NEXT: [[QF:%[^ ]+]] = arith.subi
// CHECK-NEXT: [[FLOOR:%[^ ]+]] = arith.select
// CHECK-NEXT: [[V:%[^ ]+]] = memref.load [[M]]{{\[}}[[I1]], [[FLOOR]]] : memref<10x20xf32>
// CHECK-NEXT: memref.store [[V]], [[M]]{{\[}}[[I]], [[N]]] : memref<10x20xf32>
// CHECK-NEXT: return
func.func @load_store(%m: memref<10x20xf32>, %i: index, %n: index) {
  %0 = affine.load %m[%i + 1, %i floordiv 2] : memref<10x20xf32>
  affine.store %0, %m[%i, symbol(%n)] : memref<10x20xf32>
  return
}

// -----

// parallel: per-dimension max/min of the bound groups, steps, reductions from their identity.
// CHECK-LABEL: func.func @parallel
// CHECK-SAME: ([[M:%[^:]+]]: memref<10x20xf32>, [[K:%[^:]+]]: memref<10xi32>, [[N:%[^:]+]]: index)
// CHECK-NEXT: [[L0:%[^ ]+]] = arith.constant 0 : index
// CHECK-NEXT: [[U0:%[^ ]+]] = arith.constant 10 : index
// CHECK-NEXT: [[Z:%[^ ]+]] = arith.constant 0 : index
// CHECK-NEXT: [[CM1:%[^ ]+]] = arith.constant -1 : index
// CHECK-NEXT: [[NM1:%[^ ]+]] = arith.addi [[N]], [[CM1]] : index
// CHECK-NEXT: [[L1:%[^ ]+]] = arith.maxsi [[Z]], [[NM1]] : index
// CHECK-NEXT: [[C20:%[^ ]+]] = arith.constant 20 : index
// CHECK-NEXT: [[U1:%[^ ]+]] = arith.minsi [[C20]], [[N]] : index
// CHECK-NEXT: [[S0:%[^ ]+]] = arith.constant 2 : index
// CHECK-NEXT: [[S1:%[^ ]+]] = arith.constant 3 : index
// CHECK-NEXT: [[INIT:%[^ ]+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: [[SUM:%[^ ]+]] = scf.parallel ([[I:%[^ ]+]], [[J:%[^ ]+]]) = ([[L0]], [[L1]]) to ([[U0]], [[U1]]) step ([[S0]], [[S1]]) init ([[INIT]]) -> f32 {
// CHECK-NEXT: [[V:%[^ ]+]] = memref.load [[M]]{{\[}}[[I]], [[J]]] : memref<10x20xf32>
// CHECK-NEXT: scf.reduce([[V]] : f32) {
// CHECK-NEXT: ^bb0([[L:%[^:]+]]: f32, [[R:%[^:]+]]: f32):
// CHECK-NEXT: [[ADD:%[^ ]+]] = arith.addf [[L]], [[R]] : f32
// CHECK-NEXT: scf.reduce.return [[ADD]] : f32
// CHECK: [[ALL:%[^ ]+]] = arith.constant -1 : i32
// CHECK-NEXT: scf.parallel ({{%[^ ]+}}) = ({{%[^ ]+}}) to ({{%[^ ]+}}) step ({{%[^ ]+}}) init ([[ALL]]) -> i32 {
// CHECK: arith.andi {{.*}} : i32
// CHECK: [[NEGINF:%[^ ]+]] = arith.constant 0xFF800000 : f32
// CHECK-NEXT: scf.parallel ({{%[^ ]+}}) = ({{%[^ ]+}}) to ({{%[^ ]+}}) step ({{%[^ ]+}}) init ([[NEGINF]]) -> f32 {
// CHECK: arith.maximumf {{.*}} : f32
func.func @parallel(%m: memref<10x20xf32>, %k: memref<10xi32>, %n: index) -> (f32, i32) {
  %0 = affine.parallel (%i, %j) = (0, max(0, %n - 1)) to (10, min(20, %n)) step (2, 3) reduce ("addf") -> (f32) {
    %1 = affine.load %m[%i, %j] : memref<10x20xf32>
    affine.yield %1 : f32
  }
  %2 = affine.parallel (%i) = (0) to (10) reduce ("andi") -> (i32) {
    %3 = affine.load %k[%i] : memref<10xi32>
    affine.yield %3 : i32
  }
  %4 = affine.parallel (%i) = (0) to (10) reduce ("maximumf") -> (f32) {
    %5 = affine.load %m[%i, 0] : memref<10x20xf32>
    affine.yield %5 : f32
  }
  return %4, %2 : f32, i32
}

// -----

// Inside gpu.launch: lowered before outlining, so the kernel receives scf/arith/memref.
// CHECK-LABEL: func.func @launch
// CHECK: gpu.launch
// CHECK-NEXT: [[C8:%[^ ]+]] = arith.constant 8 : index
// CHECK-NEXT: [[B8:%[^ ]+]] = arith.muli [[BX:%[^ ]+]], [[C8]] overflow<nsw> : index
// CHECK-NEXT: [[G:%[^ ]+]] = arith.addi [[B8]], [[TX:%[^ ]+]] : index
// CHECK-NEXT: memref.load {{%[^ ]+}}{{\[}}[[G]]] : memref<64xf32>
// CHECK-NOT: affine.

// OUTLINED-LABEL: func.func @launch
// OUTLINED: gpu.launch_func  @launch_kernel::@launch_kernel
// OUTLINED: gpu.func @launch_kernel
// OUTLINED: arith.muli {{.*}} overflow<nsw> : index
// OUTLINED: memref.load
// OUTLINED-NOT: affine.
func.func @launch(%m: memref<64xf32>) {
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c8, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1) {
    %v = affine.load %m[%bx * 8 + %tx] : memref<64xf32>
    %w = arith.addf %v, %v : f32
    affine.store %w, %m[%bx * 8 + %tx] : memref<64xf32>
    gpu.terminator
  }
  return
}
