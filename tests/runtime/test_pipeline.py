"""nova.Pipeline: staged H2D -> kernel -> D2H over slots (cpu always; cuda marked gpu)."""

from __future__ import annotations

import threading
import time

import device_test_kernels as tk
import numpy as np
import pytest

from nova.errors import ArgumentError
from nova.runtime.pipeline import Pipeline, PipelineError, StageContext, serial_run


def _scale_stage(factor: float):
    def stage(ctx: StageContext) -> None:
        n = ctx.input.size if hasattr(ctx.input, "size") else ctx.input.shape[0]
        fn = tk.function(ctx.device, "scale")
        ctx.device.launch(fn, max(1, -(-n // 128)), 128, [ctx.output, ctx.input, factor, n],
                          stream=ctx.stream)
    return stage


def test_results_in_order_and_correct(device) -> None:
    items = [np.arange(i * 100, i * 100 + 1000 + i, dtype=np.float32) for i in range(12)]
    with Pipeline(_scale_stage(2.0), device=device, slots=3) as pipe:
        results = list(pipe.map(items))
    assert len(results) == 12
    for item, got in zip(items, results, strict=True):
        np.testing.assert_array_equal(got, item * 2)
    assert pipe.items_done == 12


def test_pinned_inputs_and_outputs(device) -> None:
    n = 4096
    h_in = device.allocate_pinned(n * 4 * 4)
    h_out = device.allocate_pinned(n * 4 * 4)
    ins = [h_in.numpy(np.float32)[i * n:(i + 1) * n] for i in range(4)]
    outs = [h_out.numpy(np.float32)[i * n:(i + 1) * n] for i in range(4)]
    for i, a in enumerate(ins):
        a[:] = np.arange(n) + i
    with Pipeline(_scale_stage(3.0), device=device, slots=2) as pipe:
        got = list(pipe.map(ins, outs))
    for i in range(4):
        assert got[i] is outs[i]
        np.testing.assert_array_equal(outs[i], (np.arange(n) + i) * 3)


def test_output_spec_and_out_argument(device) -> None:
    def first_half(ctx: StageContext) -> None:
        ctx.device.copy_dtod(ctx.output, ctx.input, ctx.output.nbytes, stream=ctx.stream)

    with Pipeline(first_half, device=device, slots=2,
                  output=lambda a: ((a.shape[0] // 2,), a.dtype)) as pipe:
        out = np.zeros(5, np.int64)
        fut = pipe.submit(np.arange(10, dtype=np.int64), out=out)
        assert fut.result(30) is out
        assert out.tolist() == [0, 1, 2, 3, 4]
        with pytest.raises(ArgumentError, match="out must be"):
            pipe.submit(np.arange(10, dtype=np.int64), out=np.zeros(4, np.int64))


def test_backpressure_bounds_items_in_flight(device) -> None:
    running = []
    lock = threading.Lock()
    gate = threading.Event()

    def stage(ctx: StageContext) -> None:
        with lock:
            running.append(ctx.index)
        gate.wait(30)
        ctx.device.copy_dtod(ctx.output, ctx.input, stream=ctx.stream)

    with Pipeline(stage, device=device, slots=2) as pipe:
        submitted = []

        def producer() -> None:
            for i in range(5):
                submitted.append(pipe.submit(np.full(8, i, np.int32)))

        t = threading.Thread(target=producer)
        t.start()
        time.sleep(0.5)
        assert len(submitted) == 2  # the third submit waits for a free slot
        gate.set()
        t.join(30)
        assert [f.result(30).tolist() for f in submitted] == [[i] * 8 for i in range(5)]


def test_stage_error_names_item_and_slot(device) -> None:
    def stage(ctx: StageContext) -> None:
        if ctx.index == 3:
            raise ValueError("bad block")
        ctx.device.copy_dtod(ctx.output, ctx.input, stream=ctx.stream)

    with Pipeline(stage, device=device, slots=2, name="demo") as pipe:
        futures = []
        for i in range(3):
            futures.append(pipe.submit(np.full(4, i, np.int16)))
        futures.append(pipe.submit(np.zeros(4, np.int16)))
        for i in range(3):
            assert futures[i].result(30).tolist() == [i] * 4
        with pytest.raises(PipelineError, match=r"demo: item 3 \(slot 1\) failed in the kernel "
                                                r"stage: ValueError: bad block") as info:
            futures[3].result(30)
        assert info.value.item == 3 and info.value.slot == 1
        # the pipeline stops: later work is refused with the first failure named
        with pytest.raises(PipelineError, match=r"item 3 .* failed earlier"):
            pipe.submit(np.zeros(4, np.int16)).result(30)


def test_device_fault_is_reported_for_the_item(cpu_device) -> None:
    def stage(ctx: StageContext) -> None:
        if ctx.index == 1:
            ctx.device.launch(tk.function(ctx.device, "fault"), 8, 1, [], stream=ctx.stream)
        else:
            ctx.device.copy_dtod(ctx.output, ctx.input, stream=ctx.stream)

    with Pipeline(stage, device=cpu_device, slots=2) as pipe:
        f0 = pipe.submit(np.ones(4, np.float32))
        f1 = pipe.submit(np.ones(4, np.float32))
        f2 = pipe.submit(np.ones(4, np.float32))
        assert f0.result(30).tolist() == [1, 1, 1, 1]
        with pytest.raises(PipelineError, match=r"item 1 \(slot 1\).*block 3"):
            f1.result(30)
        with pytest.raises(PipelineError, match="item 2 was not run"):
            f2.result(30)


def test_serial_run_matches(device) -> None:
    items = [np.arange(50, dtype=np.float32) + i for i in range(4)]
    got = list(serial_run(_scale_stage(0.5), items, device=device))
    for a, b in zip(items, got, strict=True):
        np.testing.assert_array_equal(b, a * 0.5)


def test_bad_arguments(cpu_device) -> None:
    with pytest.raises(ArgumentError, match="slots"):
        Pipeline(lambda ctx: None, device=cpu_device, slots=0)
    with pytest.raises(ArgumentError, match="callable"):
        Pipeline(42, device=cpu_device)  # type: ignore[arg-type]
    with Pipeline(lambda ctx: None, device=cpu_device) as pipe, \
            pytest.raises(ArgumentError, match="outs ran out at item 1"):
        list(pipe.map([np.zeros(2), np.zeros(2)], [np.zeros(2)]))


DOUBLE = """
func.func @double(%x: memref<?xf32>, %y: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %x, %c0 : memref<?xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %v = memref.load %x[%bx] : memref<?xf32>
    %r = arith.addf %v, %v : f32
    memref.store %r, %y[%bx] : memref<?xf32>
    gpu.terminator
  }
  return
}
"""


def test_compiled_entry_as_the_kernel_stage(device) -> None:
    from async_programs import bundle

    from nova.runtime.executor import load

    with load(bundle(DOUBLE, "pipeline_double.mlir"), device) as mod:
        items = [np.arange(n, dtype=np.float32) for n in (10, 300, 7, 1000, 64)]
        with Pipeline(lambda ctx: mod.double(ctx.input, ctx.output), device=device,
                      slots=2) as pipe:
            for item, got in zip(items, pipe.map(items), strict=True):
                np.testing.assert_array_equal(got, 2 * item)


SLOTS, WAIT = 3, 20.0


def test_copies_overlap_kernels(cpu_device) -> None:
    """While the kernel of item i runs, item i+1's H2D completes and item i-1's D2H completes:
    each kernel (a task on the cpu compute stream) waits to observe both, and would time out if
    the pipeline serialized its stages."""
    import ctypes

    n = 4096
    count = 5
    items = [np.full(n, i, np.float32) for i in range(count)]
    outs = [np.zeros(n, np.float32) for _ in range(count)]
    observed: dict[int, tuple[bool, bool]] = {}

    def wait_for(condition, seconds: float = WAIT) -> bool:
        deadline = time.monotonic() + seconds
        while not condition():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.001)
        return True

    holder: list[Pipeline] = []

    def stage(ctx: StageContext) -> None:
        pipe, i, nbytes = holder[0], ctx.index, ctx.input.nbytes

        def kernel() -> None:
            ctypes.memmove(ctx.output.ptr, ctx.input.ptr, nbytes)
            next_in = i + 1 >= count or wait_for(
                lambda: pipe.bytes_in >= (i + 2) * nbytes and pipe.copy_in_stream.query())
            prev_out = i == 0 or wait_for(lambda: bool((outs[i - 1] == i - 1).all()))
            observed[i] = (next_in, prev_out)

        ctx.stream.enqueue(kernel, f"kernel {i}")  # type: ignore[attr-defined]

    with Pipeline(stage, device=cpu_device, slots=SLOTS) as pipe:
        holder.append(pipe)
        results = list(pipe.map(items, outs))
    assert [r[0] for r in results] == list(range(count))
    assert observed == {i: (True, True) for i in range(count)}


def test_stage_may_return_the_valid_output_bytes(device) -> None:
    """A compressor-like stage: the output holds the item's nonzero bytes; the stage learns
    their count and returns it, and only those bytes come back."""
    def squeeze(ctx: StageContext) -> int:
        data = ctx.item[ctx.item != 0]
        staged = ctx.device.to_device(data) if data.size else None
        if staged is not None:
            ctx.device.copy_dtod(ctx.output, staged, data.nbytes, stream=ctx.stream)
            ctx.stream.synchronize()  # `staged` is freed on return
        return data.nbytes

    items = [np.array([0, 3, 0, 4, 5], np.uint8), np.zeros(6, np.uint8),
             np.arange(1, 9, dtype=np.uint8)]
    with Pipeline(squeeze, device=device, slots=2) as pipe:
        got = list(pipe.map(items))
        assert [g.tolist() for g in got] == [[3, 4, 5], [], list(range(1, 9))]
        out = np.full(5, 9, np.uint8)
        view = pipe.submit(np.array([7, 0, 8, 0, 0], np.uint8), out=out).result(30)
        assert view.tolist() == [7, 8] and out.tolist() == [7, 8, 9, 9, 9]
    with Pipeline(lambda ctx: 99, device=device) as bad, \
            pytest.raises(PipelineError, match="number of valid output bytes"):
        bad.submit(np.zeros(4, np.uint8)).result(30)
