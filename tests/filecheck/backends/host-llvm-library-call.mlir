// RUN: nova-translate %s --emit=host-llvm | FileCheck %s

// A library call (`func.call @__nova_library_<i>` of a body-less declaration): the plan handle
// comes from nova_rt_library_plan on first use (cached in a private global), then
// nova_rt_library_call gets the handle, a stack array of the memrefs' data pointers, their count
// and the default (null) stream, its status checked like every fallible ABI call.

module {
  func.func private @__nova_library_0(memref<8xf16>, memref<4xf16>, memref<2xf16>)
  func.func @forward(%a: memref<8xf16>, %b: memref<4xf16>, %d: memref<2xf16>) {
    func.call @__nova_library_0(%a, %b, %d) : (memref<8xf16>, memref<4xf16>, memref<2xf16>) -> ()
    return
  }
}

// CHECK-LABEL: define internal void @"forward"
// CHECK:       %[[PLAN:"plan0(\.[0-9]+)?"]] = call ptr @"__nova_get_library_plan.0"()
// CHECK:       %[[STATUS:.+]] = call i32 @"nova_rt_library_call"(ptr %[[PLAN]], ptr %"library0.operands", i64 3, ptr null)
// CHECK-NEXT:  %{{.+}} = icmp ne i32 %[[STATUS]], 0
// CHECK:       @"__nova_libplan_0" = private global ptr null
// CHECK:       define internal ptr @"__nova_get_library_plan.0"()
// CHECK:       call i32 @"nova_rt_library_plan"(ptr @"__nova_libplan_0", i64 0)
