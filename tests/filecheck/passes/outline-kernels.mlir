// RUN: nova-opt %s -p outline-kernels --split-input-file | FileCheck %s

// Captured values become kernel arguments in MLIR's order (a post-order walk of the body: the
// loop's body before the loop's own operands); index arguments become gpu index ops; the
// constant block size becomes known_block_size, the dynamic grid size gives no known_grid_size.

// CHECK: module attributes {gpu.container_module}
// CHECK-LABEL: func.func @launch
// CHECK-SAME: ([[BUF:%[^:]+]]: memref<?xf32>, [[N:%[^:]+]]: index, [[X:%[^:]+]]: f32)
// CHECK: [[C1:%[^ ]+]] = arith.constant 1 : index
// CHECK: [[C64:%[^ ]+]] = arith.constant 64 : index
// CHECK-NOT: gpu.launch blocks
// CHECK: gpu.launch_func  @launch_kernel::@launch_kernel blocks in ([[N]], [[C1]], [[C1]]) threads in ([[C64]], [[C1]], [[C1]])  args([[X]] : f32, [[BUF]] : memref<?xf32>, [[C1]] : index, [[N]] : index, [[C64]] : index)
// CHECK-NEXT: return
// CHECK: gpu.module @launch_kernel {
// CHECK-NEXT: gpu.func @launch_kernel([[KX:%[^:]+]]: f32, [[KBUF:%[^:]+]]: memref<?xf32>, [[LB:%[^:]+]]: index, [[UB:%[^:]+]]: index, [[STEP:%[^:]+]]: index) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
// CHECK-NEXT: [[BX:%.+]] = gpu.block_id  x
// CHECK-NEXT: gpu.block_id  y
// CHECK-NEXT: gpu.block_id  z
// CHECK-NEXT: [[TX:%.+]] = gpu.thread_id  x
// CHECK-NEXT: gpu.thread_id  y
// CHECK-NEXT: gpu.thread_id  z
// CHECK-NEXT: [[GX:%.+]] = gpu.grid_dim  x
// CHECK-NEXT: gpu.grid_dim  y
// CHECK-NEXT: gpu.grid_dim  z
// CHECK-NEXT: gpu.block_dim  x
// CHECK-NEXT: gpu.block_dim  y
// CHECK-NEXT: [[SZ:%.+]] = gpu.block_dim  z
// CHECK-NEXT: [[I:%.+]] = arith.addi [[BX]], [[TX]] : index
// CHECK-NEXT: scf.for [[J:%.+]] = [[LB]] to [[UB]] step [[STEP]] {
// CHECK-NEXT: memref.store [[KX]], [[KBUF]]{{\[}}[[J]]] : memref<?xf32>
// CHECK-NEXT: }
// CHECK-NEXT: [[K:%.+]] = arith.addi [[GX]], [[SZ]] : index
// CHECK-NEXT: arith.addi [[I]], [[K]] : index
// CHECK-NEXT: gpu.return
// CHECK-NEXT: }
// CHECK-NEXT: }
func.func @launch(%buf: memref<?xf32>, %n: index, %x: f32) {
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    %i = arith.addi %bx, %tx : index
    scf.for %j = %c1 to %n step %c64 {
      memref.store %x, %buf[%j] : memref<?xf32>
    }
    %k = arith.addi %gx, %sz : index
    %m = arith.addi %i, %k : index
    gpu.terminator
  }
  return
}

// -----

// Each launch gets its own module, inserted after its function in launch order; taken names
// are uniqued with _0, _1, ... from one counter for the whole pass run (as upstream).

// CHECK-LABEL: func.func @multiple_launches
// CHECK: gpu.launch_func  @multiple_launches_kernel::@multiple_launches_kernel
// CHECK: gpu.launch_func  @multiple_launches_kernel_0::@multiple_launches_kernel
// CHECK: gpu.module @multiple_launches_kernel {
// CHECK-NEXT: gpu.func @multiple_launches_kernel() kernel attributes {known_block_size = array<i32: 1, 1, 1>, known_grid_size = array<i32: 1, 1, 1>}
// CHECK: gpu.module @multiple_launches_kernel_0 {
// CHECK-NEXT: gpu.func @multiple_launches_kernel() kernel
// CHECK-LABEL: func.func @other()
// CHECK: gpu.launch_func  @other_kernel_1::@other_kernel
// CHECK: gpu.launch_func  @other_kernel_2::@other_kernel
// CHECK: gpu.module @other_kernel_1 {
// CHECK: gpu.module @other_kernel_2 {
// CHECK: func.func @other_kernel()
func.func @multiple_launches() {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    gpu.terminator
  }
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    gpu.terminator
  }
  return
}
func.func @other() {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    gpu.terminator
  }
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    gpu.terminator
  }
  return
}
func.func @other_kernel() {
  return
}

// -----

// An async launch keeps its dependencies and its token.

// CHECK-LABEL: func.func @async_launch
// CHECK-SAME: ([[BUF:%[^:]+]]: memref<4xi32>)
// CHECK: [[T0:%.+]] = gpu.wait async
// CHECK-NEXT: [[T1:%.+]] = gpu.launch_func async {{\[}}[[T0]]] @async_launch_kernel::@async_launch_kernel blocks in ({{.*}}) threads in ({{.*}})  args([[BUF]] : memref<4xi32>)
// CHECK-NEXT: gpu.wait {{\[}}[[T1]]]
// CHECK: gpu.func @async_launch_kernel({{%[^:]+}}: memref<4xi32>) kernel
func.func @async_launch(%buf: memref<4xi32>) {
  %c1 = arith.constant 1 : index
  %t0 = gpu.wait async
  %t1 = gpu.launch async [%t0] blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %v = memref.load %buf[%tx] : memref<4xi32>
    gpu.terminator
  }
  gpu.wait [%t1]
  return
}

// -----

// Workgroup and private attributions move to the kernel; a dynamic block size gives no
// known_block_size.

// CHECK-LABEL: func.func @attributions
// CHECK: gpu.launch_func  @attributions_kernel::@attributions_kernel blocks in ({{.*}}) threads in ({{.*}})
// CHECK-NOT: args
// CHECK: gpu.func @attributions_kernel() workgroup([[SH:%[^ ]+]] : memref<32xf32, 3>, {{%[^ ]+}} : memref<8xi32, 3>) private([[PRIV:%[^ ]+]] : memref<2xf32, 5>) kernel attributes {known_grid_size = array<i32: 1, 1, 1>} {
// CHECK: [[V:%.+]] = memref.load [[SH]]
// CHECK-NEXT: memref.store [[V]], [[PRIV]]
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: gpu.return
func.func @attributions(%n: index) {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %n, %sy = %c1, %sz = %c1)
             workgroup(%shared : memref<32xf32, 3>, %shared2 : memref<8xi32, 3>)
             private(%priv : memref<2xf32, 5>) {
    %v = memref.load %shared[%tx] : memref<32xf32, 3>
    memref.store %v, %priv[%bx] : memref<2xf32, 5>
    gpu.barrier
    gpu.terminator
  }
  return
}

// -----

// Cluster sizes and the dynamic shared memory size carry over; clustered kernels also get
// gpu.cluster_id / gpu.cluster_dim.

// CHECK-LABEL: func.func @clusters_and_smem
// CHECK-SAME: ([[SMEM:%[^:]+]]: i32, [[N:%[^:]+]]: index)
// CHECK: [[C1:%.+]] = arith.constant 1 : index
// CHECK: [[C2:%.+]] = arith.constant 2 : index
// CHECK: gpu.launch_func  @clusters_and_smem_kernel::@clusters_and_smem_kernel clusters in ([[C2]], [[C1]], [[C1]]) blocks in ([[C2]], [[C1]], [[C1]]) threads in ([[C1]], [[C1]], [[C1]])  dynamic_shared_memory_size [[SMEM]] args([[N]] : index)
// CHECK: gpu.func @clusters_and_smem_kernel([[KN:%[^:]+]]: index) kernel attributes {known_block_size = array<i32: 1, 1, 1>, known_grid_size = array<i32: 2, 1, 1>}
// CHECK: gpu.block_dim  z
// CHECK-NEXT: [[CX:%.+]] = gpu.cluster_id  x
// CHECK-NEXT: gpu.cluster_id  y
// CHECK-NEXT: gpu.cluster_id  z
// CHECK-NEXT: gpu.cluster_dim  x
// CHECK-NEXT: gpu.cluster_dim  y
// CHECK-NEXT: gpu.cluster_dim  z
// CHECK-NEXT: arith.addi [[CX]], [[KN]] : index
func.func @clusters_and_smem(%smem: i32, %n: index) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  gpu.launch clusters(%cx, %cy, %cz) in (%ncx = %c2, %ncy = %c1, %ncz = %c1)
             blocks(%bx, %by, %bz) in (%gx = %c2, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1)
             dynamic_shared_memory_size %smem {
    %s = arith.addi %cx, %n : index
    gpu.terminator
  }
  return
}

// -----

// module(@m) function(@f) name the kernel; an existing gpu.module of that name receives it
// (the function name is uniqued inside that module).

// CHECK-LABEL: gpu.module @existing {
// CHECK-NEXT: gpu.func @named() kernel {
// CHECK: gpu.func @named_0() kernel attributes
// CHECK-LABEL: func.func @named_launches
// CHECK: gpu.launch_func  @existing::@named_0
// CHECK: gpu.launch_func  @fresh::@entry
// CHECK: gpu.module @fresh {
// CHECK-NEXT: gpu.func @entry() kernel
gpu.module @existing {
  gpu.func @named() kernel {
    gpu.return
  }
}
func.func @named_launches() {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1)
             module(@existing) function(@named) {
    gpu.terminator
  }
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1)
             module(@fresh) function(@entry) {
    gpu.terminator
  }
  return
}

// -----

// Symbols the kernel uses (transitively) are cloned into its module, after the kernel, in
// MLIR's discovery order.

// CHECK-LABEL: func.func @symbols
// CHECK: gpu.module @symbols_kernel {
// CHECK-NEXT: gpu.func @symbols_kernel(
// CHECK: func.call @helper(
// CHECK: gpu.return
// CHECK: func.func @helper(
// CHECK: call @leaf(
// CHECK: func.func private @leaf(
func.func private @leaf(%a: f32) -> f32 {
  return %a : f32
}
func.func @helper(%a: f32) -> f32 {
  %s = func.call @leaf(%a) : (f32) -> f32
  %r = arith.addf %a, %s : f32
  return %r : f32
}
func.func @symbols(%out: memref<1xf32>) {
  %c1 = arith.constant 1 : index
  %c0 = arith.constant 0 : index
  %one = arith.constant 1.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %v = func.call @helper(%one) : (f32) -> f32
    memref.store %v, %out[%c0] : memref<1xf32>
    gpu.terminator
  }
  return
}

// -----

// A launch body of several blocks: the entry block joins the kernel's entry; every
// gpu.terminator becomes gpu.return.

// CHECK-LABEL: func.func @multi_block
// CHECK: gpu.func @multi_block_kernel([[FLAG:%[^:]+]]: i1, [[B:%[^:]+]]: f32, [[A:%[^:]+]]: f32, {{%[^:]+}}: memref<2xf32>, {{%[^:]+}}: index)
// CHECK: gpu.block_dim  z
// CHECK-NEXT: cf.cond_br [[FLAG]], ^bb1, ^bb2([[B]] : f32)
// CHECK-NEXT: ^bb1:
// CHECK-NEXT: cf.br ^bb2([[A]] : f32)
// CHECK-NEXT: ^bb2({{%[^:]+}}: f32):
// CHECK-NEXT: memref.store
// CHECK-NEXT: gpu.return
func.func @multi_block(%flag: i1, %buf: memref<2xf32>, %a: f32, %b: f32) {
  %c1 = arith.constant 1 : index
  %c0 = arith.constant 0 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    cf.cond_br %flag, ^bb1, ^bb2(%b : f32)
  ^bb1:
    cf.br ^bb2(%a : f32)
  ^bb2(%v: f32):
    memref.store %v, %buf[%c0] : memref<2xf32>
    gpu.terminator
  }
  return
}

// -----

// A launch nested in a loop is outlined in place; sizes that are not constants (or do not fit
// 32 bits) give no known sizes.

// CHECK-LABEL: func.func @in_loop
// CHECK: scf.for [[I:%[^ ]+]] =
// CHECK-NEXT: gpu.launch_func  @in_loop_kernel::@in_loop_kernel blocks in ([[I]], {{.*}}) threads in ({{.*}})  args([[I]] : index, {{.*}} : memref<?xindex>)
// CHECK-NEXT: }
// CHECK: gpu.func @in_loop_kernel({{%[^:]+}}: index, {{%[^:]+}}: memref<?xindex>) kernel {
func.func @in_loop(%n: index, %buf: memref<?xindex>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %big = arith.constant 4294967296 : index
  scf.for %i = %c0 to %n step %c1 {
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %i, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %big, %sy = %c1, %sz = %c1) {
      memref.store %i, %buf[%tx] : memref<?xindex>
      gpu.terminator
    }
  }
  return
}

// -----

// Nothing to outline: the module is not marked as a container module.

// CHECK-NOT: gpu.container_module
// CHECK-LABEL: func.func @no_launch
func.func @no_launch() {
  return
}

// -----

// As upstream, launches inside any top-level symbol are outlined, also in a gpu.func of a
// gpu.module; the new module follows that gpu.module.

// CHECK-LABEL: gpu.module @dev {
// CHECK: gpu.launch_func  @outer_kernel::@outer_kernel
// CHECK: gpu.module @outer_kernel {
// CHECK-NEXT: gpu.func @outer_kernel({{%[^:]+}}: memref<4xf32>) kernel
gpu.module @dev {
  gpu.func @outer(%a: memref<4xf32>) {
    %c1 = arith.constant 1 : index
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
      %v = memref.load %a[%tx] : memref<4xf32>
      gpu.terminator
    }
    gpu.return
  }
}

// -----

// A value used twice is one argument; a recursive device function is cloned once.

// CHECK-LABEL: func.func @function_call
// CHECK: [[D:%[^ ]+]] = memref.dim
// CHECK: gpu.launch_func  @function_call_kernel::@function_call_kernel blocks in ({{.*}}) threads in ({{.*}})  args({{%[^ ]+}} : memref<?xf32>, [[D]] : index)
// CHECK: gpu.module @function_call_kernel {
// CHECK: gpu.func @function_call_kernel({{%[^:]+}}: memref<?xf32>, {{%[^:]+}}: index) kernel
// CHECK: func.func @device_function()
// CHECK: func.func @recursive_device_function()
// CHECK-NOT: func.func @recursive_device_function()
// CHECK: }
func.func @device_function() {
  call @recursive_device_function() : () -> ()
  return
}
func.func @recursive_device_function() {
  call @recursive_device_function() : () -> ()
  return
}
func.func @function_call(%arg0 : memref<?xf32>) {
  %cst = arith.constant 8 : index
  %c0 = arith.constant 0 : index
  %d = memref.dim %arg0, %c0 : memref<?xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%grid_x = %cst, %grid_y = %cst, %grid_z = %cst)
             threads(%tx, %ty, %tz) in (%block_x = %cst, %block_y = %cst, %block_z = %cst) {
    func.call @device_function() : () -> ()
    func.call @device_function() : () -> ()
    %0 = memref.load %arg0[%d] : memref<?xf32>
    %1 = memref.load %arg0[%d] : memref<?xf32>
    gpu.terminator
  }
  return
}
