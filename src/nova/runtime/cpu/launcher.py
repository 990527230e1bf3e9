"""The cpu device's launcher: the checks of `CpuDevice._launch` once per configuration; per
launch, the packed slots become the kernel's parameter array and the blocks are enqueued as
`CpuDevice._launch` enqueues them (nova.runtime.cpu.module.BlockRun). The kernel runs later on a
stream worker, so each launch keeps its own parameter array alive until then.
"""

from __future__ import annotations

import ctypes
from typing import TYPE_CHECKING

from nova.runtime.cpu.module import BlockRun, CpuFunction
from nova.runtime.launcher import LaunchConfig, Launcher, PackedParams

if TYPE_CHECKING:
    from nova.runtime.cpu.device import CpuDevice
    from nova.runtime.device import DeviceFunction
    from nova.runtime.stream import Stream


class CpuLauncher(Launcher):
    """See the module docstring."""

    device: CpuDevice

    def __init__(self, device: CpuDevice, function: DeviceFunction, slot_format: str) -> None:
        super().__init__(device, function, slot_format)
        assert isinstance(function, CpuFunction)
        self._cpu_function = function
        count = max(self.slot_count, 1)
        self._storage_type = ctypes.c_uint64 * count
        self._pointer_type = ctypes.c_void_p * count
        self._offsets = tuple(8 * i for i in range(self.slot_count))
        self._what = f"kernel @{self.name}"

    def _check_config(self, config: LaunchConfig) -> None:
        self.device.check_shared(self.function, config.shared_bytes)

    def _block_run(self, config: LaunchConfig, slots: bytes) -> BlockRun:
        dev = self.device
        storage = self._storage_type.from_buffer_copy(slots) if slots else self._storage_type()
        base = ctypes.addressof(storage)
        pointers = self._pointer_type(*[base + off for off in self._offsets])
        packed = PackedParams(storage, pointers, self.slot_count)
        return BlockRun(self._cpu_function, config.grid, config.block, None,
                        config.shared_bytes, packed, dev._helpers, dev.workers)

    def launch(self, config: LaunchConfig, stream: Stream | None, slots: bytes) -> None:
        from nova.runtime.cpu.device import INLINE_KERNEL_THREADS

        dev = self.device
        s = dev._cpu_stream(dev._stream(stream))
        run = self._block_run(config, slots)
        s.enqueue(run.run, self._what, inline=config.threads <= INLINE_KERNEL_THREADS)

    def launch_sync(self, config: LaunchConfig, stream: Stream | None, slots: bytes) -> None:
        """A launch of at most INLINE_KERNEL_THREADS threads on an idle stream runs right here,
        as the synchronize that follows would run it (CpuStream's inline items): no queue
        entry, no grace timer; anything else is enqueued as `launch` does. A fault raises here
        rather than at the synchronize."""
        from nova.runtime.cpu.device import INLINE_KERNEL_THREADS

        dev = self.device
        s = dev._cpu_stream(dev._stream(stream))
        run = self._block_run(config, slots)
        inline = config.threads <= INLINE_KERNEL_THREADS
        if not (inline and s.run_if_idle(run.run)):
            s.enqueue(run.run, self._what, inline=inline)
