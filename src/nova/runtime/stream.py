"""Streams and events: the ordering primitives shared by every device.

A `Stream` is an in-order queue of device work (copies, memsets, kernel launches); work on
different streams may run concurrently. An `Event` marks a position in a stream: it completes when
all work enqueued on that stream before `record` has finished. The `cuda` and `cpu` devices
implement both (cuda: driver streams/events; cpu: one worker thread per stream); this module holds
the device-independent contract so executor code is written once.
"""

from __future__ import annotations

import itertools
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from concurrent.futures import Future

    from nova.runtime.device import Device


class Event(ABC):
    """A marker recorded into a stream. `timing=True` events can measure elapsed time."""

    def __init__(self, device: Device, timing: bool) -> None:
        self.device = device
        self.timing = timing

    @property
    @abstractmethod
    def handle(self) -> int:
        """The native handle as an integer (a CUevent on cuda; an id on cpu)."""

    @abstractmethod
    def record(self, stream: Stream | None = None) -> Event:
        """Mark the current end of `stream` (the device's default stream when None)."""

    @abstractmethod
    def query(self) -> bool:
        """True when the recorded work has completed (or the event was never recorded)."""

    @abstractmethod
    def synchronize(self) -> None:
        """Block the calling thread until the recorded work has completed."""

    @abstractmethod
    def elapsed_ms(self, other: Event) -> float:
        """Milliseconds from this event to `other`; both must be timing events that completed."""

    @abstractmethod
    def close(self) -> None:
        """Release the event now (also done by a finalizer when it is garbage collected)."""

    def __enter__(self) -> Event:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_pool_keys = itertools.count(1)


class Stream(ABC):
    """An in-order queue of device work. As a context manager it synchronizes and closes on exit."""

    def __init__(self, device: Device) -> None:
        self.device = device
        # The caching pool's key for this stream: unique for the process, unlike driver handles,
        # which the driver may reuse after a stream is destroyed.
        self.pool_key = next(_pool_keys)

    @property
    @abstractmethod
    def handle(self) -> int:
        """The native handle as an integer (a non-null CUstream on cuda; an id on cpu)."""

    @abstractmethod
    def synchronize(self) -> None:
        """Block until all work enqueued so far has finished; raises the first error it hit."""

    @abstractmethod
    def query(self) -> bool:
        """True when all work enqueued so far has finished (never blocks)."""

    @abstractmethod
    def wait(self, event: Event) -> None:
        """Make work enqueued later on this stream wait for `event` (the host does not block)."""

    def record(self, event: Event | None = None) -> Event:
        """Record `event` (a new non-timing one when None) at the current end of this stream."""
        if event is None:
            event = self.device.create_event()
        event.record(self)
        return event

    def add_callback(self, fn: Any) -> Future:
        """Run `fn()` on Nova's callback thread once the work enqueued so far has finished; the
        Future holds its result (`nova.runtime.callbacks`). The stream does not wait for `fn`."""
        from nova.runtime.callbacks import add_callback

        return add_callback(self, fn)

    def future(self) -> Future:
        """A concurrent.futures.Future completed when the work enqueued so far has finished."""
        from nova.runtime.callbacks import stream_future

        return stream_future(self)

    @abstractmethod
    def close(self) -> None:
        """Release the stream (waits for its work first). Later use raises DeviceError."""

    @property
    @abstractmethod
    def closed(self) -> bool:
        """Whether `close` was called."""

    def __enter__(self) -> Stream:
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            if exc[0] is None:
                self.synchronize()
        finally:
            self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.handle:#x} on {self.device.kind}:{self.device.index}>"
