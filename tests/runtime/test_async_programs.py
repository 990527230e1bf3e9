"""Asynchronous semantics of compiled programs: tokens map onto streams and events (ordering),
kernels on different streams run concurrently, and the async-region pass keeps programs' output.
Run on the cpu device always and on cuda when a GPU is usable (marked gpu)."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from async_programs import DEVICES, SOURCE, bundle

from nova.runtime.selection import get_device

CORPUS = Path(__file__).resolve().parents[1] / "corpus"


# Polls before the spinning kernel gives up: it only gives up when the streams were serialized
# (a failure), so the limit bounds the time a failing run takes (GPU atomics are ~1 us apart).
_SPIN_LIMIT = {"cpu": 200_000_000, "cuda": 20_000_000}

@pytest.fixture(scope="module")
def program() -> bytes:
    return bundle()


def _load(program: bytes, device: str):
    from nova.runtime.executor import load

    return load(program, device)


@pytest.mark.parametrize("device", DEVICES)
def test_fork_join_orders_the_join_after_both_streams(program: bytes, device: str) -> None:
    with _load(program, device) as mod:
        for n in (1, 7, 1000):
            x = np.arange(n, dtype=np.float32) - 3
            y, z, w = (np.full(n, -1, np.float32) for _ in range(3))
            mod.fork_join(x, y, z, w)
            np.testing.assert_array_equal(y, 2 * x)
            np.testing.assert_array_equal(z, x + 1)
            np.testing.assert_array_equal(w, 3 * x + 1)


@pytest.mark.parametrize("device", DEVICES)
def test_fork_join_on_device_buffers_repeatedly(program: bytes, device: str) -> None:
    dev = get_device(device)
    with _load(program, device) as mod:
        n = 256
        bufs = [dev.to_device(np.zeros(n, np.float32)) for _ in range(4)]
        for k in range(25):  # streams/events created and destroyed per call: no leaks, no mixups
            bufs[0].copy_from_host(np.full(n, k, np.float32))
            mod.fork_join(*bufs)
            assert bufs[3].numpy().tolist() == [3 * k + 1] * n


@pytest.mark.parametrize("device", DEVICES)
def test_new_streams_follow_work_already_on_the_default_stream(program: bytes,
                                                               device: str) -> None:
    """`gpu.wait async` (no dependencies) starts a stream ordered after what was enqueued on the
    program's default stream before the call: the executor's own staging copies of NumPy
    arguments, or the caller's asynchronous copies, as the legacy default stream would order
    them upstream."""
    dev = get_device(device)
    n = 1 << 16
    with _load(program, device) as mod:
        x = dev.to_device(np.zeros(n, np.float32))
        y, z, w = (dev.to_device(np.zeros(n, np.float32)) for _ in range(3))
        stream = dev.default_stream
        if hasattr(stream, "enqueue"):  # cpu: hold the default stream back for a while
            stream.enqueue(lambda: time.sleep(0.3), "delay")
        data = np.full(n, 5, np.float32)
        dev.copy_htod(x, data, stream=stream)  # asynchronous, on the default stream
        mod.fork_join(x, y, z, w)
        assert (w.numpy() == 16).all()
        for k in range(3):  # NumPy inputs are staged asynchronously on cuda
            xs = np.full(n, k, np.float32)
            ws = np.zeros(n, np.float32)
            mod.fork_join(xs, np.zeros(n, np.float32), np.zeros(n, np.float32), ws)
            assert (ws == 3 * k + 1).all()


@pytest.mark.parametrize("device", DEVICES)
def test_token_chain_alloc_copy_kernel_memset_dealloc(program: bytes, device: str) -> None:
    with _load(program, device) as mod:
        x = np.linspace(0, 1, 333, dtype=np.float32)
        out = np.zeros_like(x)
        fill = np.zeros_like(x)
        mod.chain(x, out, fill)
        np.testing.assert_allclose(out, 3 * x)
        assert (fill == 7).all()


@pytest.mark.parametrize("device", DEVICES)
def test_two_streams_run_concurrently(program: bytes, device: str) -> None:
    """The kernel on stream A only finishes early if the kernel on stream B runs meanwhile."""
    with _load(program, device) as mod:
        for _ in range(3):
            flag = np.zeros(1, np.int32)
            out = np.zeros(1, np.int32)
            mod.spin_pair(flag, out, _SPIN_LIMIT[device])
            assert out[0] == 1, "stream A gave up: the two streams were serialized"
            assert flag[0] == 1


def _async_region(text: str) -> str:
    from nova.ir.parser import parse_mlir, print_mlir
    from nova.passes.registry import run_pipeline

    module = parse_mlir(text, "async-region-input.mlir")
    run_pipeline(module, "outline-kernels,async-region")
    return print_mlir(module)


@pytest.mark.parametrize("device", DEVICES)
def test_async_region_program_gives_the_same_results(program: bytes, device: str) -> None:
    transformed = _async_region(SOURCE)
    sync_part = transformed[transformed.index("func.func @sync_steps"):]
    assert "gpu.launch_func async" in sync_part and "gpu.wait async" in sync_part
    converted = bundle(transformed, "async_region.mlir")
    x = np.arange(-5, 60, dtype=np.float32)
    expected = np.zeros_like(x)
    with _load(program, device) as mod:
        mod.sync_steps(x, expected)
    np.testing.assert_array_equal(expected, x * x - 1)
    got = np.zeros_like(x)
    with _load(converted, device) as mod:
        mod.sync_steps(x, got)
        np.testing.assert_array_equal(got, expected)
        w = np.zeros_like(x)
        mod.fork_join(x, np.zeros_like(x), np.zeros_like(x), w)  # already async: unchanged
        np.testing.assert_array_equal(w, 3 * x + 1)


CORPUS_PROGRAMS = sorted(p.name for p in CORPUS.glob("*.mlir")) or ["async-fork-join.mlir"]


def _nova_run(path: Path, capfd: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """`nova-run <path> --device cpu` in this process: (exit status, what it printed)."""
    from nova.cli.run import main
    from nova.runtime.runner_utils import flush_stdout

    capfd.readouterr()
    rc = main([str(path), "--device", "cpu"])
    flush_stdout()
    out, err = capfd.readouterr()
    assert rc in (0, 1), err  # 1: the program's own failure (asserts)
    return rc, out


@pytest.mark.parametrize("name", CORPUS_PROGRAMS)
def test_async_region_corpus_prints_the_same(name: str, tmp_path: Path,
                                             capfd: pytest.CaptureFixture[str]) -> None:
    """A corpus program made asynchronous by the pass prints exactly what the original prints
    (base addresses in memref dumps aside)."""
    source = CORPUS / name
    if not source.exists():
        pytest.skip(f"{name} is not in the corpus")
    bundle()  # fails when a compiler module is missing
    converted = tmp_path / name
    converted.write_text(_async_region(source.read_text()))

    def normalized(text: str) -> list[str]:
        return [line.split(" rank = ")[1] if "base@ = " in line else line
                for line in text.splitlines()]

    (rc_new, out_new), (rc_old, out_old) = _nova_run(converted, capfd), _nova_run(source, capfd)
    assert rc_new == rc_old
    assert normalized(out_new) == normalized(out_old)


# --- the Python side: stream waits, pinned async copies, callbacks and futures ------------------
@pytest.mark.parametrize("device", DEVICES)
def test_stream_wait_event_orders_copies_across_streams(device: str) -> None:
    dev = get_device(device)
    n = 1 << 22
    pinned = dev.allocate_pinned(n)
    src = pinned.numpy()
    src[:] = np.arange(n, dtype=np.uint64).astype(np.uint8)
    back = dev.allocate_pinned(n)
    buf = dev.allocate(n)
    s1, s2 = dev.create_stream(), dev.create_stream()
    dev.memset(buf, 0, stream=s1)
    dev.copy_htod(buf, src, stream=s1)  # async from pinned memory
    ev = s1.record()
    s2.wait(ev)
    dev.copy_dtoh(back, buf, stream=s2)
    s2.synchronize()
    np.testing.assert_array_equal(back.numpy(), src)
    s1.close()
    s2.close()


@pytest.mark.parametrize("device", DEVICES)
def test_future_and_callbacks_follow_stream_order(device: str) -> None:
    from nova.runtime.callbacks import on_callback_thread

    dev = get_device(device)
    n = 1 << 22
    host = np.ones(n, np.uint8)
    out = dev.allocate_pinned(n)
    buf = dev.allocate(n)
    s = dev.create_stream()
    order: list[int] = []
    dev.copy_htod(buf, host, stream=s)
    dev.copy_dtoh(out, buf, stream=s)
    f1 = s.add_callback(lambda: (order.append(1), on_callback_thread()))
    dev.memset(buf, 5, stream=s)
    dev.copy_dtoh(out, buf, stream=s)
    f2 = s.add_callback(lambda: (order.append(2), s.synchronize(), int(out.numpy()[0]))[2])
    done = s.future()
    assert done.result(60) is None
    assert (out.numpy() == 5).all()  # the future completed after everything before it
    assert f1.result(60)[1] is True  # ran on the callback thread
    assert f2.result(60) == 5  # may synchronize its own stream
    assert order == [1, 2]
    s.close()


def test_callback_exception_goes_to_its_future(cpu_device) -> None:
    s = cpu_device.create_stream()
    fut = s.add_callback(lambda: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        fut.result(30)
    assert s.future().result(30) is None  # the stream itself is fine
    s.close()


def test_future_reports_an_earlier_stream_failure_on_cpu(cpu_device) -> None:
    from nova.errors import RuntimeFailure

    s = cpu_device.create_stream()

    def boom() -> None:
        raise RuntimeError("disk on fire")

    s.enqueue(boom, "failing task")
    ran = []
    fut = s.add_callback(lambda: ran.append(1))
    with pytest.raises(RuntimeFailure, match=r"failing task.*disk on fire"):
        fut.result(30)
    assert ran == []
    with pytest.raises(RuntimeFailure):
        s.synchronize()  # the stream still reports its failure itself
    s.close()


def test_add_callback_rejects_non_callables(cpu_device) -> None:
    with pytest.raises(TypeError, match="not callable"):
        cpu_device.default_stream.add_callback(3)  # type: ignore[arg-type]
