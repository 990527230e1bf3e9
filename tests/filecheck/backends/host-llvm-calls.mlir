// RUN: nova-translate %s --emit=host-llvm | FileCheck %s

// Public functions get an exported `__nova_entry_<name>(ptr args, ptr results)` wrapper and are
// themselves internal; runner utilities and vector.print call the runtime ABI; a host cf.assert
// reports its message and unwinds through nova_rt_raise.

func.func private @printMemrefI32(memref<*xi32>)

func.func @report(%m: memref<2xi32>, %n: index) -> (i1, index) {
  %u = memref.cast %m : memref<2xi32> to memref<*xi32>
  call @printMemrefI32(%u) : (memref<*xi32>) -> ()
  %c0 = arith.constant 0 : index
  %ok = arith.cmpi ne, %n, %c0 : index
  cf.assert %ok, "n must not be zero"
  vector.print %ok : i1
  vector.print %n : index punctuation <comma>
  vector.print str "done\n"
  return %ok, %n : i1, index
}

// CHECK-LABEL: define internal {i1, i64} @"report"(ptr %".1", ptr %".2", i64 %".3", i64 %".4", i64 %".5", i64 %".6")
// CHECK:       [[RANK:%.*]] = extractvalue {i64, ptr} {{%.*}}, 0
// CHECK-NEXT:  [[DESC:%.*]] = extractvalue {i64, ptr} {{%.*}}, 1
// CHECK-NEXT:  call void @"nova_rt_print_memref_i32"(i64 [[RANK]], ptr [[DESC]])
// CHECK:       br i1 %{{.*}}, label %"assert.ok", label %"assert.fail"
// CHECK:       assert.fail:
// CHECK-NEXT:  call i32 @"nova_rt_host_assert_fail"({{.*}} @".str")
// CHECK-NEXT:  call void @"nova_rt_raise"()
// CHECK-NEXT:  unreachable
// CHECK:       assert.ok:
// CHECK:       [[WIDE:%.*]] = zext i1 %{{.*}} to i64
// CHECK-NEXT:  call void @"nova_rt_print_i64"(i64 [[WIDE]])
// CHECK-NEXT:  call void @"nova_rt_print_newline"()
// CHECK-NEXT:  call void @"nova_rt_print_u64"(i64 %".6")
// CHECK-NEXT:  call void @"nova_rt_print_comma"()
// CHECK-NEXT:  call void @"nova_rt_print_string"({{.*}} @".str.1")
// CHECK:       ret {i1, i64}

// CHECK-DAG:   @".str" = private unnamed_addr constant [19 x i8] c"n must not be zero\00"
// CHECK-DAG:   @".str.1" = private unnamed_addr constant [6 x i8] c"done\0a\00"

// CHECK-LABEL: define void @"__nova_entry_report"(ptr %"args", ptr %"results")
// CHECK:       %"arg0.ptr" = load ptr, ptr
// CHECK:       %"arg0" = load {ptr, ptr, i64, [1 x i64], [1 x i64]}, ptr %"arg0.ptr"
// CHECK:       %"arg1" = load i64, ptr %"arg1.ptr"
// CHECK:       %"ret" = call {i1, i64} @"report"(
// CHECK:       [[R0:%.*]] = extractvalue {i1, i64} %"ret", 0
// CHECK:       %"result0.ptr" = load ptr, ptr
// CHECK-NEXT:  store i1 [[R0]], ptr %"result0.ptr"
// CHECK:       [[R1:%.*]] = extractvalue {i1, i64} %"ret", 1
// CHECK:       %"result1.ptr" = load ptr, ptr
// CHECK-NEXT:  store i64 [[R1]], ptr %"result1.ptr"
// CHECK-NEXT:  ret void
