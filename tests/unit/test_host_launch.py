"""Host lowering of gpu.launch_func and async tokens, checked by running the host code against a
recording ABI (host_trace): the exact sequence of runtime calls, the module
loaded once, the parameter array contents, and the stream/event protocol of tokens."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from host_trace import (
    HANDLE_BASES,
    HostJit,
    TraceRuntime,
    memref_of,
    param_f32,
    param_i64,
)

from nova.backends.host.lower import lower_host
from nova.errors import UnsupportedError
from nova.ir.parser import parse_mlir

MODULE = 0x1000 + 1
STREAM1 = HANDLE_BASES["nova_rt_stream_create"] + 1
STREAM2 = HANDLE_BASES["nova_rt_stream_create"] + 2
STREAM3 = HANDLE_BASES["nova_rt_stream_create"] + 3
EVENT1 = HANDLE_BASES["nova_rt_event_create"] + 1
EVENT2 = HANDLE_BASES["nova_rt_event_create"] + 2
KERNEL_K = HANDLE_BASES["nova_rt_module_get_function"] + 1

KERNELS = """
  gpu.module @kernels {
    gpu.func @k(%a: memref<4xf32>, %n: index) kernel { gpu.return }
    gpu.func @s(%x: f32, %y: i32) kernel { gpu.return }
    gpu.func @u(%x: memref<*xf32>) kernel { gpu.return }
  }
"""


def program(body: str, args: str = "%m: memref<4xf32>") -> str:
    return (f"module attributes {{gpu.container_module}} {{\n{KERNELS}\n"
            f"  func.func @main({args}) {{\n"
            "    %c1 = arith.constant 1 : index\n    %c4 = arith.constant 4 : index\n"
            f"{body}\n    return\n  }}\n}}\n")


LAUNCH = ("gpu.launch_func {deps} @kernels::@k blocks in (%c1, %c1, %c1) "
          "threads in (%c4, %c1, %c1) args(%m : memref<4xf32>, %c4 : index)")


def launch(result: str = "", deps: str = "") -> str:
    text = LAUNCH.format(deps=deps)
    return f"    {result} = {text}" if result else f"    {text}"


def run(source: str, fail: dict[str, int] | None = None) -> tuple[int, TraceRuntime, HostJit]:
    lowering = lower_host(parse_mlir(source, "test.mlir"))
    runtime = TraceRuntime(fail=fail or {})
    jit = HostJit(str(lowering.llvm_module), runtime, lowering.device_modules)
    data = np.arange(4, dtype=np.float32)
    status = jit.call("main", [memref_of(data)])
    return status, runtime, jit


def test_module_loaded_once_for_two_launches() -> None:
    status, rt, jit = run(program(launch() + "\n" + launch()))
    assert status == 0
    # the second launch is ordered after the first on the same stream and waits for both: one
    # host wait for the pair (gpu_ops._wait_site)
    assert rt.names() == ["nova_rt_module_load", "nova_rt_module_get_function",
                          "nova_rt_launch", "nova_rt_launch", "nova_rt_stream_synchronize"]
    load = rt.of("nova_rt_module_load")[0]
    assert load.arg("descriptor") == jit.descriptor_address("kernels")
    get = rt.of("nova_rt_module_get_function")[0]
    assert get.arg("module") == MODULE
    assert ctypes.string_at(get.arg("name")) == b"k"
    for sync in rt.of("nova_rt_stream_synchronize"):
        assert sync.arg("stream") == 0  # synchronous launch: default stream, then wait


def test_launch_arguments_and_params_array() -> None:
    status, rt, _ = run(program(
        "    %c2 = arith.constant 2 : index\n    %c3 = arith.constant 3 : index\n"
        "    gpu.launch_func @kernels::@k blocks in (%c2, %c3, %c4) threads in (%c4, %c3, %c2) "
        "args(%m : memref<4xf32>, %c3 : index)"))
    assert status == 0
    (call,) = rt.of("nova_rt_launch")
    assert call.args[:9] == (KERNEL_K, 2, 3, 4, 4, 3, 2, 0, 0)
    assert call.arg("num_params") == 6
    allocated, aligned, offset, size, stride, n = (param_i64(p) for p in call.params)
    assert allocated == aligned != 0
    assert (offset, size, stride, n) == (0, 4, 1, 3)


def test_scalar_params_by_value_and_dynamic_shared_memory() -> None:
    source = program(
        "    %x = arith.constant 1.5 : f32\n    %y = arith.constant -7 : i32\n"
        "    %smem = arith.constant 256 : i32\n"
        "    gpu.launch_func @kernels::@s blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) "
        "dynamic_shared_memory_size %smem args(%x : f32, %y : i32)")
    status, rt, _ = run(source)
    assert status == 0
    (call,) = rt.of("nova_rt_launch")
    assert call.arg("shared_bytes") == 256
    x, y = call.params
    assert param_f32(x) == 1.5
    assert np.frombuffer(y[:4], np.int32)[0] == -7
    assert ctypes.string_at(rt.of("nova_rt_module_get_function")[0].arg("name")) == b"s"


def test_cluster_launch() -> None:
    source = program(
        "    %c2 = arith.constant 2 : index\n"
        "    gpu.launch_func @kernels::@k clusters in (%c2, %c1, %c1) blocks in (%c4, %c1, %c1) "
        "threads in (%c4, %c1, %c1) args(%m : memref<4xf32>, %c4 : index)")
    status, rt, _ = run(source)
    assert status == 0
    (call,) = rt.of("nova_rt_launch_cluster")
    assert call.args[:10] == (KERNEL_K, 2, 1, 1, 4, 1, 1, 4, 1, 1)
    assert not rt.of("nova_rt_launch")


def test_failed_launch_raises_and_stops() -> None:
    status, rt, _ = run(program(launch() + "\n" + launch()), fail={"nova_rt_launch": 1})
    assert status == 1
    assert rt.names() == ["nova_rt_module_load", "nova_rt_module_get_function", "nova_rt_launch"]


def test_failed_module_load_raises_before_lookup() -> None:
    status, rt, _ = run(program(launch()), fail={"nova_rt_module_load": 1})
    assert status == 1
    assert rt.names() == ["nova_rt_module_load"]


def test_async_chain_and_multi_dependency_launch() -> None:
    body = "\n".join([
        "    %t0 = gpu.wait async",
        launch("%t1", "async [%t0]"),
        "    %t2 = gpu.wait async",
        launch("%t3", "async [%t1, %t2]"),
        "    gpu.wait [%t3, %t1, %t2]",
    ])
    status, rt, _ = run(program(body))
    assert status == 0
    assert [(c.name, c.args) for c in rt.calls if c.name != "nova_rt_launch"] == [
        ("nova_rt_stream_create", (rt.calls[0].args[0],)),
        ("nova_rt_module_load", rt.of("nova_rt_module_load")[0].args),
        ("nova_rt_module_get_function", rt.of("nova_rt_module_get_function")[0].args),
        ("nova_rt_stream_create", (rt.calls[4].args[0],)),
        ("nova_rt_event_create", (rt.calls[5].args[0],)),
        ("nova_rt_event_record", (EVENT1, STREAM2)),
        ("nova_rt_stream_wait_event", (STREAM1, EVENT1)),
        ("nova_rt_event_destroy", (EVENT1,)),
        # gpu.wait [%t3, %t1, %t2]: %t3 and %t1 are the same stream: synchronized/destroyed once
        ("nova_rt_stream_synchronize", (STREAM1,)),
        ("nova_rt_stream_destroy", (STREAM1,)),
        ("nova_rt_stream_synchronize", (STREAM2,)),
        ("nova_rt_stream_destroy", (STREAM2,)),
    ]
    launches = rt.of("nova_rt_launch")
    assert [c.arg("stream") for c in launches] == [STREAM1, STREAM1]
    assert rt.names().index("nova_rt_stream_wait_event") < rt.names().index("nova_rt_launch", 4)


def test_wait_async_joins_into_a_new_stream() -> None:
    body = "\n".join([
        "    %t0 = gpu.wait async",
        "    %t1 = gpu.wait async",
        "    %t2 = gpu.wait async [%t0, %t1]",
        launch("%t3", "async [%t2]"),
        "    gpu.wait [%t3]",
    ])
    status, rt, _ = run(program(body))
    assert status == 0
    protocol = [(c.name, c.args) for c in rt.calls
                if c.name not in ("nova_rt_module_load", "nova_rt_module_get_function")]
    assert protocol[:11] == [
        ("nova_rt_stream_create", protocol[0][1]),
        ("nova_rt_stream_create", protocol[1][1]),
        ("nova_rt_stream_create", protocol[2][1]),
        ("nova_rt_event_create", protocol[3][1]),
        ("nova_rt_event_record", (EVENT1, STREAM1)),
        ("nova_rt_stream_wait_event", (STREAM3, EVENT1)),
        ("nova_rt_event_destroy", (EVENT1,)),
        ("nova_rt_event_create", protocol[7][1]),
        ("nova_rt_event_record", (EVENT2, STREAM2)),
        ("nova_rt_stream_wait_event", (STREAM3, EVENT2)),
        ("nova_rt_event_destroy", (EVENT2,)),
    ]
    assert rt.of("nova_rt_launch")[0].arg("stream") == STREAM3
    assert protocol[-2:] == [("nova_rt_stream_synchronize", (STREAM3,)),
                             ("nova_rt_stream_destroy", (STREAM3,))]


def test_async_launch_without_dependencies_gets_its_own_stream() -> None:
    status, rt, _ = run(program(launch("%t", "async") + "\n    gpu.wait [%t]"))
    assert status == 0
    assert rt.names().count("nova_rt_stream_create") == 1
    assert rt.of("nova_rt_launch")[0].arg("stream") == STREAM1
    assert rt.names()[-2:] == ["nova_rt_stream_synchronize", "nova_rt_stream_destroy"]


def test_sync_op_with_dependencies_waits_on_the_default_stream() -> None:
    body = "\n".join(["    %t0 = gpu.wait async",
                      "    gpu.memcpy [%t0] %m, %m : memref<4xf32>, memref<4xf32>"])
    status, rt, _ = run(program(body))
    assert status == 0
    assert [(c.name, c.args) for c in rt.calls if c.name.startswith(("nova_rt_event",
                                                                     "nova_rt_stream_w"))] == [
        ("nova_rt_event_create", rt.of("nova_rt_event_create")[0].args),
        ("nova_rt_event_record", (EVENT1, STREAM1)),
        ("nova_rt_stream_wait_event", (0, EVENT1)),
        ("nova_rt_event_destroy", (EVENT1,)),
    ]
    assert rt.of("nova_rt_memcpy")[0].arg("stream") == 0
    assert rt.names()[-2:] == ["nova_rt_memcpy", "nova_rt_stream_synchronize"]


def test_tokens_flow_through_loops() -> None:
    body = "\n".join([
        "    %t0 = gpu.wait async",
        "    %t = scf.for %i = %c1 to %c4 step %c1 iter_args(%tok = %t0) -> (!gpu.async.token) {",
        "  " + launch("%next", "async [%tok]"),
        "      scf.yield %next : !gpu.async.token",
        "    }",
        "    gpu.wait [%t]",
    ])
    status, rt, _ = run(program(body))
    assert status == 0
    assert [c.arg("stream") for c in rt.of("nova_rt_launch")] == [STREAM1] * 3
    assert len(rt.of("nova_rt_module_load")) == 1
    assert rt.of("nova_rt_stream_destroy")[0].args == (STREAM1,)


def test_unranked_kernel_operand_is_rejected_at_the_launch() -> None:
    source = program(
        "    %u = memref.cast %m : memref<4xf32> to memref<*xf32>\n"
        "    gpu.launch_func @kernels::@u blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) "
        "args(%u : memref<*xf32>)")
    with pytest.raises(UnsupportedError) as info:
        lower_host(parse_mlir(source, "bad.mlir"))
    assert "unranked memref kernel operands" in str(info.value)
    assert str(info.value).startswith("bad.mlir:13:5: error:")


def test_vecadd_example_end_to_end_on_the_trace_runtime() -> None:
    """examples/vecadd.mlir, outlined and lowered: the host part allocates, copies, launches
    (through a call of the launching function) and prints, in that order, with real data moving
    through the recording runtime (the kernel itself does not run here). The host waits after
    the two copies in (once), in the launching function and after the copy out (the call and
    the print need it)."""
    from pathlib import Path

    from nova.passes.registry import run_pipeline

    path = Path(__file__).parents[2] / "examples" / "vecadd.mlir"
    module = parse_mlir(path.read_text(), str(path))
    run_pipeline(module, "outline-kernels")
    lowering = lower_host(module)
    assert [e.name for e in lowering.entries] == ["vecadd", "main"]
    runtime = TraceRuntime()
    engine = HostJit(str(lowering.llvm_module), runtime, lowering.device_modules)
    assert engine.call("main") == 0
    sync = "nova_rt_stream_synchronize"
    assert runtime.names() == [
        "nova_rt_mem_alloc", "nova_rt_mem_alloc", "nova_rt_mem_alloc",
        "nova_rt_memcpy", "nova_rt_memcpy", sync,  # one wait for the two copies
        "nova_rt_module_load", "nova_rt_module_get_function", "nova_rt_launch", sync,
        "nova_rt_memcpy", sync, "nova_rt_print_memref_f32",
        "nova_rt_mem_free", "nova_rt_mem_free", "nova_rt_mem_free"]
    launch_call = runtime.of("nova_rt_launch")[0]
    assert launch_call.args[1:7] == (1, 1, 1, 128, 1, 1)
    a_dev, b_dev = (ctypes.addressof(b) for b in runtime.buffers[:2])
    params = [param_i64(p) for p in launch_call.params]
    # the outlined kernel takes (%n : index, %a, %b, %c): n, then 5 words per memref
    assert params[0] == 10 and len(params) == 16
    assert params[1:6] == [a_dev, a_dev, 0, 10, 1]
    assert params[6:11] == [b_dev, b_dev, 0, 10, 1]
    copied = np.frombuffer(bytes(runtime.buffers[1]), np.float32)
    np.testing.assert_array_equal(copied, 2 * np.arange(10, dtype=np.float32))


def test_inline_gpu_launch_asks_for_outlining() -> None:
    source = """
func.func @main() {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    gpu.terminator
  }
  return
}
"""
    with pytest.raises(UnsupportedError, match="run the outline-kernels pass first") as info:
        lower_host(parse_mlir(source, "inline.mlir"))
    assert str(info.value).startswith("inline.mlir:4:3: error:")


def test_waiting_twice_on_one_token_destroys_its_stream_once() -> None:
    status, rt, _ = run(program("    %t = gpu.wait async\n    gpu.wait [%t, %t]"))
    assert status == 0
    assert rt.names() == ["nova_rt_stream_create", "nova_rt_stream_synchronize",
                          "nova_rt_stream_destroy"]


def test_tokens_merge_through_scf_if() -> None:
    body = "\n".join([
        "    %t0 = gpu.wait async",
        "    %t1 = gpu.wait async",
        "    %first = arith.cmpi ult, %c1, %c4 : index",
        "    %t = scf.if %first -> (!gpu.async.token) {",
        "      scf.yield %t0 : !gpu.async.token",
        "    } else {",
        "      scf.yield %t1 : !gpu.async.token",
        "    }",
        launch("%t2", "async [%t]"),
        "    gpu.wait [%t2, %t0, %t1]",
    ])
    status, rt, _ = run(program(body))
    assert status == 0
    assert rt.of("nova_rt_launch")[0].arg("stream") == STREAM1
    assert [c.args for c in rt.of("nova_rt_stream_destroy")] == [(STREAM1,), (STREAM2,)]


def test_dotted_symbol_names_do_not_collide() -> None:
    source = """
module attributes {gpu.container_module} {
  gpu.module @"a.b" {
    gpu.func @c() kernel { gpu.return }
  }
  gpu.module @a {
    gpu.func @"b.c"() kernel { gpu.return }
  }
  func.func @main() {
    %c1 = arith.constant 1 : index
    gpu.launch_func @"a.b"::@c blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    gpu.launch_func @a::@"b.c" blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    return
  }
}
"""
    lowering = lower_host(parse_mlir(source, "dots.mlir"))
    assert lowering.device_modules == ("a.b", "a")
    runtime = TraceRuntime()
    engine = HostJit(str(lowering.llvm_module), runtime, lowering.device_modules)
    assert engine.call("main") == 0
    loads = runtime.of("nova_rt_module_load")
    assert [c.arg("descriptor") for c in loads] == [engine.descriptor_address("a.b"),
                                                    engine.descriptor_address("a")]
    names = [ctypes.string_at(c.arg("name")) for c in runtime.of("nova_rt_module_get_function")]
    assert names == [b"c", b"b.c"]
    launched = [c.arg("function") for c in runtime.of("nova_rt_launch")]
    assert launched == [KERNEL_K, KERNEL_K + 1]
