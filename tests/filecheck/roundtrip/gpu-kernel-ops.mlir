// RUN: nova-opt %s | FileCheck %s
// Device-side gpu ops: index queries, barrier, shuffles, reductions, printf, attributions.
gpu.module @kernels {
  gpu.func @ids(%out: memref<?xindex>) kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
    %tx = gpu.thread_id x
    %ty = gpu.thread_id y upper_bound 64
    %bz = gpu.block_id z
    %bd = gpu.block_dim x
    %gd = gpu.grid_dim y
    %gi = gpu.global_id x
    %ci = gpu.cluster_id x
    %cd = gpu.cluster_dim y
    %cb = gpu.cluster_block_id z
    %lane = gpu.lane_id
    %lane2 = gpu.lane_id upper_bound 32
    %sg = gpu.subgroup_id : index
    %sgs = gpu.subgroup_size : index
    %nsg = gpu.num_subgroups : index
    memref.store %tx, %out[%gi] : memref<?xindex>
    gpu.barrier
    gpu.return
  }
  gpu.func @collectives(%v: f32, %i: i32) workgroup(%shared: memref<32xf32, 3>) private(%priv: memref<4xf32, 5>) kernel {
    %c1 = arith.constant 1 : i32
    %w = arith.constant 16 : i32
    %x, %ok = gpu.shuffle xor %v, %c1, %w : f32
    %u, %ok2 = gpu.shuffle up %i, %c1, %w : i32
    %d, %ok3 = gpu.shuffle down %v, %c1, %w : f32
    %s, %ok4 = gpu.shuffle idx %i, %c1, %w : i32
    %sum = gpu.all_reduce add %v uniform {} : (f32) -> f32
    %prod = gpu.all_reduce mul %v {} : (f32) -> f32
    %mins = gpu.all_reduce minsi %i {} : (i32) -> i32
    %minu = gpu.all_reduce minui %i {} : (i32) -> i32
    %minf = gpu.all_reduce minnumf %v {} : (f32) -> f32
    %maxs = gpu.all_reduce maxsi %i {} : (i32) -> i32
    %maxu = gpu.all_reduce maxui %i {} : (i32) -> i32
    %maxf = gpu.all_reduce maxnumf %v {} : (f32) -> f32
    %and = gpu.all_reduce and %i {} : (i32) -> i32
    %or = gpu.all_reduce or %i {} : (i32) -> i32
    %xor = gpu.all_reduce xor %i {} : (i32) -> i32
    %mn = gpu.all_reduce minimumf %v {} : (f32) -> f32
    %mx = gpu.all_reduce maximumf %v {} : (f32) -> f32
    %custom = gpu.all_reduce %v {
    ^bb0(%lhs: f32, %rhs: f32):
      %t = arith.addf %lhs, %rhs : f32
      gpu.yield %t : f32
    } : (f32) -> f32
    %sg1 = gpu.subgroup_reduce add %v : (f32) -> f32
    %sg2 = gpu.subgroup_reduce maxnumf %v uniform cluster(size = 4) : (f32) -> f32
    %sg3 = gpu.subgroup_reduce xor %i cluster(size = 8, stride = 2) : (i32) -> i32
    gpu.printf "sum %f lane %d\n", %sum, %i : f32, i32
    gpu.printf "done\n"
    gpu.return
  }
  gpu.func @device_fn(%a: i32) -> i32 {
    gpu.return %a : i32
  }
}

// CHECK:      module {
// CHECK-NEXT:   gpu.module @kernels {
// CHECK-NEXT:     gpu.func @ids(%out: memref<?xindex>) kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
// CHECK-NEXT:       %tx = gpu.thread_id  x
// CHECK-NEXT:       %ty = gpu.thread_id  y upper_bound 64
// CHECK-NEXT:       %bz = gpu.block_id  z
// CHECK-NEXT:       %bd = gpu.block_dim  x
// CHECK-NEXT:       %gd = gpu.grid_dim  y
// CHECK-NEXT:       %gi = gpu.global_id  x
// CHECK-NEXT:       %ci = gpu.cluster_id  x
// CHECK-NEXT:       %cd = gpu.cluster_dim  y
// CHECK-NEXT:       %cb = gpu.cluster_block_id  z
// CHECK-NEXT:       %lane = gpu.lane_id
// CHECK-NEXT:       %lane2 = gpu.lane_id upper_bound 32
// CHECK-NEXT:       %sg = gpu.subgroup_id : index
// CHECK-NEXT:       %sgs = gpu.subgroup_size : index
// CHECK-NEXT:       %nsg = gpu.num_subgroups : index
// CHECK-NEXT:       memref.store %tx, %out[%gi] : memref<?xindex>
// CHECK-NEXT:       gpu.barrier
// CHECK-NEXT:       gpu.return
// CHECK-NEXT:     }
// CHECK-NEXT:     gpu.func @collectives(%v: f32, %i: i32) workgroup(%shared : memref<32xf32, 3>) private(%priv : memref<4xf32, 5>) kernel {
// CHECK-NEXT:       %c1 = arith.constant 1 : i32
// CHECK-NEXT:       %w = arith.constant 16 : i32
// CHECK-NEXT:       %x, %ok = gpu.shuffle  xor %v, %c1, %w : f32
// CHECK-NEXT:       %u, %ok2 = gpu.shuffle  up %i, %c1, %w : i32
// CHECK-NEXT:       %d, %ok3 = gpu.shuffle  down %v, %c1, %w : f32
// CHECK-NEXT:       %s, %ok4 = gpu.shuffle  idx %i, %c1, %w : i32
// CHECK-NEXT:       %sum = gpu.all_reduce  add %v uniform {
// CHECK-NEXT:       } : (f32) -> f32
// CHECK-NEXT:       %prod = gpu.all_reduce  mul %v {
// CHECK-NEXT:       } : (f32) -> f32
// CHECK-NEXT:       %mins = gpu.all_reduce  minsi %i {
// CHECK-NEXT:       } : (i32) -> i32
// CHECK-NEXT:       %minu = gpu.all_reduce  minui %i {
// CHECK-NEXT:       } : (i32) -> i32
// CHECK-NEXT:       %minf = gpu.all_reduce  minnumf %v {
// CHECK-NEXT:       } : (f32) -> f32
// CHECK-NEXT:       %maxs = gpu.all_reduce  maxsi %i {
// CHECK-NEXT:       } : (i32) -> i32
// CHECK-NEXT:       %maxu = gpu.all_reduce  maxui %i {
// CHECK-NEXT:       } : (i32) -> i32
// CHECK-NEXT:       %maxf = gpu.all_reduce  maxnumf %v {
// CHECK-NEXT:       } : (f32) -> f32
// CHECK-NEXT:       %and = gpu.all_reduce  and %i {
// CHECK-NEXT:       } : (i32) -> i32
// CHECK-NEXT:       %or = gpu.all_reduce  or %i {
// CHECK-NEXT:       } : (i32) -> i32
// CHECK-NEXT:       %xor = gpu.all_reduce  xor %i {
// CHECK-NEXT:       } : (i32) -> i32
// CHECK-NEXT:       %mn = gpu.all_reduce  minimumf %v {
// CHECK-NEXT:       } : (f32) -> f32
// CHECK-NEXT:       %mx = gpu.all_reduce  maximumf %v {
// CHECK-NEXT:       } : (f32) -> f32
// CHECK-NEXT:       %custom = gpu.all_reduce  %v {
// CHECK-NEXT:       ^bb0(%lhs: f32, %rhs: f32):
// CHECK-NEXT:         %t = arith.addf %lhs, %rhs : f32
// CHECK-NEXT:         gpu.yield %t : f32
// CHECK-NEXT:       } : (f32) -> f32
// CHECK-NEXT:       %sg1 = gpu.subgroup_reduce  add %v : (f32) -> f32
// CHECK-NEXT:       %sg2 = gpu.subgroup_reduce  maxnumf %v uniform cluster(size = 4) : (f32) -> f32
// CHECK-NEXT:       %sg3 = gpu.subgroup_reduce  xor %i cluster(size = 8, stride = 2) : (i32) -> i32
// CHECK-NEXT:       gpu.printf "sum %f lane %d\0A", %sum, %i : f32, i32
// CHECK-NEXT:       gpu.printf "done\0A"
// CHECK-NEXT:       gpu.return
// CHECK-NEXT:     }
// CHECK-NEXT:     gpu.func @device_fn(%a: i32) -> i32 {
// CHECK-NEXT:       gpu.return %a : i32
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT: }
