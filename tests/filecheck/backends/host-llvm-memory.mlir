// RUN: nova-translate %s --emit=host-llvm | FileCheck %s

// gpu memory ops become runtime-ABI calls on the default stream followed by a synchronization,
// except gpu.alloc and gpu.dealloc (stream-ordered by the runtime: never a host wait) and a
// synchronous op followed, past allocations, frees and scalar arithmetic, by another one on the
// same stream (the memcpy and the first memset: the last memset's wait covers all three); sizes are bytes computed from the memref type
// (dynamic sizes multiplied in), f32 fills pass their bits to nova_rt_memset32, host memrefs
// come from malloc / aligned_alloc.

func.func @memory(%h: memref<?x4xf32>, %n: index, %v: f32) {
  %d = gpu.alloc (%n) : memref<?x4xf32>
  gpu.memcpy %d, %h : memref<?x4xf32>, memref<?x4xf32>
  gpu.memset %d, %v : memref<?x4xf32>, f32
  gpu.dealloc %d : memref<?x4xf32>
  %s = gpu.alloc host_shared () : memref<8xi8>
  %x = arith.constant 3 : i8
  gpu.memset %s, %x : memref<8xi8>, i8
  %a = memref.alloc() {alignment = 64} : memref<16xf64>
  memref.dealloc %a : memref<16xf64>
  return
}

// CHECK-LABEL: define internal void @"memory"(ptr %".1", ptr %".2", i64 %".3", i64 %".4", i64 %".5", i64 %".6", i64 %".7", i64 %".8", float %".9")
// CHECK:       [[COUNT:%.*]] = mul i64 %".8", 4
// CHECK-NEXT:  [[BYTES:%.*]] = mul i64 [[COUNT]], 4
// CHECK-NEXT:  call i32 @"nova_rt_mem_alloc"(ptr %"devptr.out", i64 [[BYTES]], ptr null, i32 0)
// CHECK:       %"devptr" = load ptr, ptr %"devptr.out"
// CHECK-NOT:   nova_rt_stream_synchronize
// CHECK:       [[SRCCOUNT:%.*]] = mul i64 %".4", 4
// CHECK-NEXT:  [[SRCBYTES:%.*]] = mul i64 [[SRCCOUNT]], 4
// CHECK-NEXT:  call i32 @"nova_rt_memcpy"(ptr %"devptr", ptr %".2", i64 [[SRCBYTES]], ptr null)
// CHECK-NOT:   nova_rt_stream_synchronize
// CHECK:       [[BITS:%.*]] = bitcast float %".9" to i32
// CHECK-NEXT:  [[ELEMS:%.*]] = mul i64 %".8", 4
// CHECK-NEXT:  call i32 @"nova_rt_memset32"(ptr %"devptr", i32 [[BITS]], i64 [[ELEMS]], ptr null)
// CHECK-NOT:   nova_rt_stream_synchronize
// CHECK:       call i32 @"nova_rt_mem_free"(ptr %"devptr", ptr null)
// CHECK-NOT:   nova_rt_stream_synchronize
// CHECK:       call i32 @"nova_rt_mem_alloc"(ptr %"devptr.out.1", i64 8, ptr null, i32 1)
// CHECK-NOT:   nova_rt_stream_synchronize
// CHECK:       call i32 @"nova_rt_memset8"(ptr %"devptr.1", i32 3, i64 8, ptr null)
// CHECK:       call i32 @"nova_rt_stream_synchronize"(ptr null)
// CHECK:       [[PADDED:%.*]] = add i64 {{%.*}}, 63
// CHECK-NEXT:  [[ROUNDED:%.*]] = and i64 [[PADDED]], -64
// CHECK-NEXT:  [[BUF:%.*]] = call ptr @"aligned_alloc"(i64 64, i64 [[ROUNDED]])
// CHECK:       call void @"free"(ptr [[BUF]])
// CHECK:       ret void
