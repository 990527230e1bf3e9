"""Host lowering of library calls (`func.call @__nova_library_<i>`, abi.LIBRARY_CALL_PREFIX) run
against the recording runtime: the plan handle is asked for once per plan and cached, every call
passes the memrefs' first-element addresses (offsets included), their count and the null
(default) stream, and a failed status unwinds."""

from __future__ import annotations

import numpy as np
from host_trace import HostJit, TraceRuntime, memref_of, param_i64

from nova.backends.host.lower import lower_host
from nova.ir.parser import parse_mlir

TAIL = "memref<2xf32, strided<[1], offset: 2>>"
SOURCE = f"""
module {{
  func.func private @__nova_library_0(memref<8xf32>, memref<4xf32>, memref<2xf32>)
  func.func private @__nova_library_1(memref<4xf32>, {TAIL})
  func.func @main(%a: memref<8xf32>, %b: memref<4xf32>, %d: memref<2xf32>) {{
    %c0 = arith.constant 0 : index
    %c3 = arith.constant 3 : index
    %c1 = arith.constant 1 : index
    scf.for %i = %c0 to %c3 step %c1 {{
      func.call @__nova_library_0(%a, %b, %d) : (memref<8xf32>, memref<4xf32>, memref<2xf32>) -> ()
    }}
    %tail = memref.subview %a[2] [2] [1] : memref<8xf32> to {TAIL}
    func.call @__nova_library_1(%b, %tail) : (memref<4xf32>, {TAIL}) -> ()
    return
  }}
}}
"""


def _run(fail: dict[str, int] | None = None) -> tuple[TraceRuntime, int, list[np.ndarray]]:
    lowering = lower_host(parse_mlir(SOURCE, "library.mlir"))
    runtime = TraceRuntime(fail=fail or {})
    engine = HostJit(str(lowering.llvm_module), runtime, lowering.device_modules)
    arrays = [np.zeros(8, np.float32), np.zeros(4, np.float32), np.zeros(2, np.float32)]
    descs = [memref_of(a) for a in arrays]
    return runtime, engine.call("main", descs), arrays


def test_plans_are_prepared_once_and_called_with_data_pointers() -> None:
    runtime, status, (a, b, d) = _run()
    assert status == 0
    assert runtime.names() == ["nova_rt_library_plan", "nova_rt_library_call",
                               "nova_rt_library_call", "nova_rt_library_call",
                               "nova_rt_library_plan", "nova_rt_library_call"]
    assert [c.arg("index") for c in runtime.of("nova_rt_library_plan")] == [0, 1]
    calls = runtime.of("nova_rt_library_call")
    assert [c.arg("plan") for c in calls] == [0x5001] * 3 + [0x5002]
    assert [c.arg("num_operands") for c in calls] == [3, 3, 3, 2]
    assert all(c.arg("stream") == 0 for c in calls)  # the program's default stream
    assert [param_i64(p) for p in calls[0].params] == [a.ctypes.data, b.ctypes.data,
                                                       d.ctypes.data]
    assert [param_i64(p) for p in calls[3].params] == [b.ctypes.data, a.ctypes.data + 8]


def test_failed_plan_or_call_unwinds() -> None:
    runtime, status, _ = _run({"nova_rt_library_plan": 1})
    assert status == 1 and runtime.names() == ["nova_rt_library_plan"]
    runtime, status, _ = _run({"nova_rt_library_call": 2})
    assert status == 1
    assert runtime.names() == ["nova_rt_library_plan", "nova_rt_library_call",
                               "nova_rt_library_call"]
