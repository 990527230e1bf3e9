// RUN: nova-run %s --device cpu | FileCheck %s

// A gpu.launch with thread-block clusters: a grid of 4 blocks in clusters of 2 blocks. Thread 0
// of each block stores 1000 * (clusters per grid) + 100 * (blocks per cluster)
// + 10 * (cluster id) + (block id within the cluster); the cluster id comes from the launch's
// cluster block argument, the rest from gpu.cluster_dim/cluster_dim_blocks/cluster_block_id.
func.func @main() {
  %out = memref.alloc() : memref<4xi32>
  %cast = memref.cast %out : memref<4xi32> to memref<*xi32>
  gpu.host_register %cast : memref<*xi32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c10 = arith.constant 10 : index
  %c100 = arith.constant 100 : index
  %c1000 = arith.constant 1000 : index
  gpu.launch clusters(%cx, %cy, %cz) in (%ncx = %c2, %ncy = %c1, %ncz = %c1)
             blocks(%bx, %by, %bz) in (%gx = %c4, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c2, %sy = %c1, %sz = %c1) {
    %nclusters = gpu.cluster_dim x
    %per_cluster = gpu.cluster_dim_blocks x
    %in_cluster = gpu.cluster_block_id x
    %a = arith.muli %nclusters, %c1000 : index
    %b = arith.muli %per_cluster, %c100 : index
    %c = arith.muli %cx, %c10 : index
    %ab = arith.addi %a, %b : index
    %abc = arith.addi %ab, %c : index
    %v = arith.addi %abc, %in_cluster : index
    %vi = arith.index_cast %v : index to i32
    %first = arith.cmpi eq, %tx, %c0 : index
    scf.if %first {
      memref.store %vi, %out[%bx] : memref<4xi32>
    }
    gpu.terminator
  }
  call @printMemrefI32(%cast) : (memref<*xi32>) -> ()
  return
}

func.func private @printMemrefI32(memref<*xi32>)

// CHECK: Unranked Memref base@ = {{.*}} rank = 1 offset = 0 sizes = [4] strides = [1] data =
// CHECK-NEXT: [2200,  2201,  2210,  2211]
