"""Host callbacks and futures on streams: run Python when a stream reaches a point.

`add_callback(stream, fn)` arranges for `fn()` to run once all work enqueued on `stream` before the
call has finished, and returns a `concurrent.futures.Future` holding `fn`'s result (or exception).
`stream_future(stream)` is the same with nothing to run: a Future that completes when the stream
reaches this point. `Stream.add_callback` / `Stream.future` are these two as methods.

How the stream's progress is observed:
- cuda: `cuLaunchHostFunc` enqueues a tiny C-callable trampoline (a ctypes function pointer called
  through libcuda directly, not through cuda-bindings). The driver runs it on one of *its* threads,
  where no CUDA call is allowed, so the trampoline only hands the callback over to Nova's
  dispatcher thread and returns at once (the stream is held up for microseconds, never for `fn`).
- cpu: a marker enqueued on the stream's worker thread does the same hand-over.
`fn` itself always runs on the dispatcher thread (one per process, callbacks in the order their
streams reached them), so it may call CUDA and Nova freely, including synchronizing the very
stream it was attached to. On cpu, if the stream failed before reaching the point, the Future gets
the stream's pending error instead of running `fn`. On cuda the driver may never run a host
function after a fault that destroys the context, so wait with `result(timeout=...)` wherever a
device fault is possible.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from nova.runtime.stream import Stream


class _Dispatcher:
    """One daemon thread that runs callbacks handed over by streams, in hand-over order."""

    def __init__(self) -> None:
        self._items: queue.SimpleQueue = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def post(self, fn: Callable[[], Any], future: Future, error: BaseException | None) -> None:
        if self._thread is None:
            with self._lock:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, daemon=True,
                                                    name="nova-stream-callbacks")
                    self._thread.start()
        self._items.put((fn, future, error))

    @property
    def thread(self) -> threading.Thread | None:
        return self._thread

    def _run(self) -> None:
        while True:
            fn, future, error = self._items.get()
            if not future.set_running_or_notify_cancel():
                continue
            if error is not None:
                future.set_exception(error)
                continue
            try:
                result = fn()
            except BaseException as exc:
                future.set_exception(exc)
            else:
                future.set_result(result)


dispatcher = _Dispatcher()
"""The process's one callback thread; device packages hand callbacks to it."""

def add_callback(stream: Stream, fn: Callable[[], Any]) -> Future:
    """Run `fn()` (on Nova's callback thread) once `stream` has finished the work enqueued so
    far; the returned Future holds its result or exception. The stream does not wait for `fn`."""
    if not callable(fn):
        raise TypeError(f"add_callback: {fn!r} is not callable")
    future: Future = Future()
    stream.device.add_host_callback(stream, fn, future)
    return future


def _nothing() -> None:
    return None


def stream_future(stream: Stream) -> Future:
    """A Future completed (with None) when `stream` reaches the current end of its work."""
    return add_callback(stream, _nothing)


def on_callback_thread() -> bool:
    """True when called from the thread that runs stream callbacks."""
    return threading.current_thread() is dispatcher.thread
