"""`replay_ops` of the host lowering (nova.backends.host.replay): which public functions the
runtime may replay as a recorded graph, and how many stream operations they issue."""

from __future__ import annotations

import pytest

from nova.backends.host.lower import lower_host
from nova.ir.parser import parse_mlir
from nova.passes.registry import run_pipeline

LAUNCH = """
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
      gpu.terminator
    }"""


def entries(body: str) -> dict[str, int]:
    """Each public function's replay_ops after outlining and host lowering."""
    module = parse_mlir("module attributes {gpu.container_module} {\n" + body + "\n}",
                        "replay.mlir")
    run_pipeline(module, "outline-kernels")
    return {e.name: e.replay_ops for e in lower_host(module).entries}


def fn(name: str, body: str, args: str = "%x: memref<?xf32>", results: str = "") -> str:
    arrow = f" -> ({results})" if results else ""
    return (f"func.func @{name}({args}){arrow} {{\n    %c0 = arith.constant 0 : index\n"
            f"    %c1 = arith.constant 1 : index\n{body}\n  }}")


def test_device_work_only_counts_its_stream_operations() -> None:
    got = entries("\n".join([
        fn("one", LAUNCH + "\n    return"),
        fn("copies", """
    %n = memref.dim %x, %c0 : memref<?xf32>
    %d = gpu.alloc(%n) : memref<?xf32>
    gpu.memcpy %d, %x : memref<?xf32>, memref<?xf32>""" + LAUNCH + """
    %f = arith.constant 0.0 : f32
    gpu.memset %d, %f : memref<?xf32>, f32
    gpu.memcpy %x, %d : memref<?xf32>, memref<?xf32>
    gpu.dealloc %d : memref<?xf32>
    return"""),
        fn("none", "    return"),
    ]))
    assert got == {"one": 1, "copies": 4, "none": 0}


def test_operations_in_loops_count_twice_and_scalars_may_steer() -> None:
    got = entries(fn("loop", """
    scf.for %i = %c0 to %n step %c1 {""" + LAUNCH + """
    }
    %big = arith.cmpi ugt, %n, %c1 : index
    scf.if %big {""" + LAUNCH + """
    }
    return""", args="%x: memref<?xf32>, %n: index"))
    assert got == {"loop": 3}


def test_async_chains_are_replayable() -> None:
    got = entries(fn("chain", """
    %t0 = gpu.wait async
    %n = memref.dim %x, %c0 : memref<?xf32>
    %d, %t1 = gpu.alloc async [%t0] (%n) : memref<?xf32>
    %t2 = gpu.memcpy async [%t1] %d, %x : memref<?xf32>, memref<?xf32>
    %t3 = gpu.dealloc async [%t2] %d : memref<?xf32>
    gpu.wait [%t3]
    return"""))
    assert got == {"chain": 1}


@pytest.mark.parametrize("body, results", [
    ("    %v = memref.load %x[%c0] : memref<?xf32>" + LAUNCH + LAUNCH + "\n    return", ""),
    ("    %f = arith.constant 1.0 : f32\n    memref.store %f, %x[%c0] : memref<?xf32>" + LAUNCH
     + LAUNCH + "\n    return", ""),
    ("    %h = memref.alloc() : memref<4xf32>" + LAUNCH + LAUNCH + "\n    return", ""),
    ("    call @helper() : () -> ()" + LAUNCH + LAUNCH + "\n    return", ""),
    ("    %d = gpu.alloc host_shared () : memref<4xf32>" + LAUNCH + LAUNCH + "\n    return", ""),
    (LAUNCH + LAUNCH + "\n    return %x : memref<?xf32>", "memref<?xf32>"),
], ids=["host-load", "host-store", "host-alloc", "call", "host-shared-alloc", "memref-result"])
def test_host_effects_make_an_entry_not_replayable(body: str, results: str) -> None:
    helper = ("func.func private @helper() {\n    %h = memref.alloca() : memref<f32>\n"
              "    %v = memref.load %h[] : memref<f32>\n    return\n  }")
    assert entries(fn("f", body, results=results) + "\n" + helper) == {"f": 0}


def test_calls_count_their_callees_and_must_be_replayable_themselves() -> None:
    launcher = ("func.func private @launch_twice(%x: memref<?xf32>) {\n"
                "    %c1 = arith.constant 1 : index" + LAUNCH + LAUNCH + "\n    return\n  }")
    recursive = ("func.func private @again(%x: memref<?xf32>) {\n"
                 "    call @again(%x) : (memref<?xf32>) -> ()\n    return\n  }")
    declared = "func.func private @printMemrefF32(memref<*xf32>)"
    got = entries("\n".join([
        launcher, recursive, declared,
        fn("twice", "    call @launch_twice(%x) : (memref<?xf32>) -> ()" + LAUNCH
           + "\n    return"),
        fn("looped", """
    scf.for %i = %c0 to %c1 step %c1 {
      call @launch_twice(%x) : (memref<?xf32>) -> ()
    }
    return"""),
        fn("recursion", "    call @again(%x) : (memref<?xf32>) -> ()\n    return"),
        fn("runner", """
    %u = memref.cast %x : memref<?xf32> to memref<*xf32>
    call @printMemrefF32(%u) : (memref<*xf32>) -> ()""" + LAUNCH + LAUNCH + "\n    return"),
    ]))
    assert got == {"twice": 3, "looped": 4, "recursion": 0, "runner": 0}


def test_scalar_results_are_allowed() -> None:
    got = entries(fn("size", """
    %n = memref.dim %x, %c0 : memref<?xf32>""" + LAUNCH + LAUNCH + """
    return %n : index""", results="index"))
    assert got == {"size": 2}


def test_each_callee_is_analysed_once() -> None:
    """A chain of helpers each calling the next twice issues 2**depth launches; the analysis
    visits every helper once (it once took seconds for depth 16: 2**16 visits)."""
    depth = 16
    helpers = ["func.func private @h0(%x: memref<?xf32>) {\n    %c1 = arith.constant 1 : index"
               + LAUNCH + "\n    return\n  }"]
    for i in range(1, depth + 1):
        call = f"    call @h{i - 1}(%x) : (memref<?xf32>) -> ()\n"
        helpers.append(f"func.func private @h{i}(%x: memref<?xf32>) {{\n{call}{call}"
                       "    return\n  }")
    entry = fn("top", f"    call @h{depth}(%x) : (memref<?xf32>) -> ()\n    return")
    assert entries("\n".join([*helpers, entry])) == {"top": 2 ** depth}
