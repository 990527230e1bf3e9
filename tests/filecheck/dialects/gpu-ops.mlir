// RUN: nova-opt %s --allow-unregistered-dialect | nova-opt --allow-unregistered-dialect | FileCheck %s

// Valid gpu dialect IR in upstream MLIR's test style, in each printed form of the ops Nova
// supports (async and token forms, empty operand lists, optional groups, attribute
// dictionaries); printing is stable through a second round trip, and equals what mlir-opt 22
// prints up to SSA names (tests/unit/test_dialect_files.py).

module attributes {gpu.container_module} {
  // CHECK-LABEL: func.func @host
  func.func @host(%n: index, %src: memref<?xf32>) {
    %c1 = arith.constant 1 : index
    %f = arith.constant 0.0 : f32
    // CHECK: gpu.wait async
    %t0 = gpu.wait async
    // CHECK: gpu.alloc async [%{{.*}}] (%{{.*}}) : memref<?xf32>
    %m, %t1 = gpu.alloc async [%t0] (%n) : memref<?xf32>
    // CHECK: gpu.alloc  host_shared () : memref<4xf32>
    %h = gpu.alloc host_shared () : memref<4xf32>
    // CHECK: gpu.memset async [%{{.*}}] %{{.*}}, %{{.*}} : memref<?xf32>, f32
    %t2 = gpu.memset async [%t1] %m, %f : memref<?xf32>, f32
    // CHECK: gpu.memcpy async [%{{.*}}] %{{.*}}, %{{.*}} : memref<?xf32>, memref<?xf32>
    %t3 = gpu.memcpy async [%t2] %m, %src : memref<?xf32>, memref<?xf32>
    // CHECK: gpu.launch_func async [%{{.*}}] @kernels::@k blocks in (%{{.*}}, %{{.*}}, %{{.*}}) threads in (%{{.*}}, %{{.*}}, %{{.*}})  args(%{{.*}} : memref<?xf32>)
    %t4 = gpu.launch_func async [%t3] @kernels::@k blocks in (%c1, %c1, %c1) threads in (%n, %c1, %c1) args(%m : memref<?xf32>)
    // CHECK: gpu.launch_func  @kernels::@empty blocks in
    gpu.launch_func @kernels::@empty blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    // CHECK: gpu.dealloc async [%{{.*}}] %{{.*}} : memref<?xf32>
    %t5 = gpu.dealloc async [%t4] %m : memref<?xf32>
    // CHECK: gpu.wait [%{{.*}}]
    gpu.wait [%t5]
    // CHECK: gpu.wait
    gpu.wait
    gpu.dealloc %h : memref<4xf32>
    "test.use"(%n) : (index) -> ()
    return
  }

  // CHECK-LABEL: func.func @launches
  func.func @launches(%n: index) {
    %c1 = arith.constant 1 : index
    // CHECK: gpu.launch blocks(
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %n, %sy = %c1, %sz = %c1) {
      gpu.terminator
    }
    %smem = arith.constant 16 : i32
    %t = gpu.wait async
    // CHECK: gpu.launch async [%{{.*}}] blocks(
    %t2 = gpu.launch async [%t] blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %n, %sy = %c1, %sz = %c1)
               dynamic_shared_memory_size %smem {
      gpu.terminator
    }
    gpu.wait [%t2]
    return
  }

  gpu.module @kernels {
    // CHECK-LABEL: gpu.func @k
    gpu.func @k(%m: memref<?xf32>) workgroup(%w: memref<32xf32, #gpu.address_space<workgroup>>) private(%p: memref<1xf32, #gpu.address_space<private>>) kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
      %tid = gpu.thread_id x
      %bid = gpu.block_id y
      %dim = gpu.block_dim z
      %gdim = gpu.grid_dim x
      %lane = gpu.lane_id
      %v = memref.load %m[%tid] : memref<?xf32>
      %width = arith.constant 32 : i32
      %off = arith.constant 1 : i32
      // CHECK: gpu.shuffle  xor %{{.*}}, %{{.*}}, %{{.*}} : f32
      %s, %valid = gpu.shuffle xor %v, %off, %width : f32
      // CHECK: gpu.all_reduce  add %{{.*}} uniform {
      %r = gpu.all_reduce add %v uniform {} : (f32) -> f32
      // CHECK: gpu.subgroup_reduce  add %{{.*}} : (f32) -> f32
      %q = gpu.subgroup_reduce add %v : (f32) -> f32
      // CHECK: gpu.barrier
      gpu.barrier
      // CHECK: gpu.printf "v %f\0A", %{{.*}} : f32
      gpu.printf "v %f\n", %v : f32
      %x = "test.op"(%v) : (f32) -> f32
      gpu.return
    }
    gpu.func @empty() kernel {
      gpu.return
    }
    // CHECK-LABEL: gpu.func @device
    gpu.func @device(%a: f32) -> f32 {
      gpu.return %a : f32
    }
  }
}
