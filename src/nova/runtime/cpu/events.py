"""cpu events: a recorded position in a cpu stream's queue (see nova.runtime.cpu.stream).

Loaded by the first event a cpu device makes (or waits for): a cached kernel's first call makes
none, so it loads neither this nor `threading`, whose Event marks a recording's completion.
"""

from __future__ import annotations

import threading
import time

from nova.errors import DeviceError
from nova.runtime.cpu.stream import CpuStream, _ids, _Queue
from nova.runtime.stream import Event, Stream

TYPE_CHECKING = False  # typing is not imported at run time (cold start)
if TYPE_CHECKING:
    from nova.runtime.cpu.device import CpuDevice


class _Mark:
    """One recording of an event: set when the stream's worker reaches it."""

    def __init__(self, q: _Queue) -> None:
        self.done = threading.Event()
        self.time = 0.0
        self.queue = q

    def wait(self) -> None:
        if not self.done.is_set():
            self.queue.hurry()
            self.done.wait()

    def hit(self) -> None:
        self.time = time.perf_counter()
        self.done.set()


class CpuEvent(Event):
    """A cpu event: the latest position recorded in some stream."""

    def __init__(self, device: CpuDevice, timing: bool) -> None:
        super().__init__(device, timing)
        self._id = next(_ids)
        self._mark: _Mark | None = None

    @property
    def handle(self) -> int:
        return self._id

    def record(self, stream: Stream | None = None) -> Event:
        s = self.device._stream(stream)
        assert isinstance(s, CpuStream)
        mark = _Mark(s._q)
        s.enqueue(mark.hit, "event record", always=True, inline=True)
        self._mark = mark
        return self

    def query(self) -> bool:
        mark = self._mark
        if mark is None or mark.done.is_set():
            return True
        mark.queue.hurry()
        return False

    def synchronize(self) -> None:
        if self._mark is not None:
            self._mark.wait()

    def elapsed_ms(self, other: Event) -> float:
        if not isinstance(other, CpuEvent):
            raise DeviceError(f"{other!r} is not a cpu event")
        for ev in (self, other):
            if not ev.timing:
                raise DeviceError("elapsed_ms needs events created with timing=True")
            if ev._mark is None:
                raise DeviceError("elapsed_ms: an event was never recorded")
            if not ev._mark.done.is_set():
                raise DeviceError("elapsed_ms: an event has not completed yet")
        assert self._mark is not None and other._mark is not None
        return (other._mark.time - self._mark.time) * 1000.0

    def close(self) -> None:
        self._mark = None
