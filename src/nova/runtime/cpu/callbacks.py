"""Host callbacks on cpu-device streams: a marker enqueued on the stream's worker thread hands the
callback to Nova's dispatcher thread (nova.runtime.callbacks) when the stream reaches it; if the
stream failed before that point, the Future gets the stream's pending error instead."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from nova.errors import NovaError, RuntimeFailure
from nova.runtime.callbacks import dispatcher
from nova.runtime.stream import Stream


def add_host_callback(stream: Stream, fn: Callable[[], Any], future: Future) -> None:
    q = stream._q  # type: ignore[attr-defined]

    def reached() -> None:
        error: BaseException | None = None
        if q.error is not None:
            what, exc = q.error
            error = exc if isinstance(exc, NovaError) else RuntimeFailure(
                f"{what} on {q.label} failed before the callback: {type(exc).__name__}: {exc}")
        dispatcher.post(fn, future, error)

    stream.enqueue(reached, "stream callback", always=True)  # type: ignore[attr-defined]
