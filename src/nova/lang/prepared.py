"""Prepared launches: `kern.prepare(*args, grid=, block=, stream=None, shared_bytes=0,
device=None)` fixes a kernel's signature, configuration, stream and device once, for launch loops.

    step = kern.prepare(out, x, np.float32(0), grid=blocks, block=256)
    for t in range(steps):
        step(out, x, np.float32(t))          # the same kinds of arguments every time

Each call runs the signature's guard (nova.lang.guard, not exact: the facts the kernel was compiled
with must hold on the new pointers; scalars are converted to the prepared parameter types and
range-checked) and the device's launch statements (nova.runtime.launcher's inline_launch), in one
generated function (`python_call`): on cuda one `pack` and one native call of cuLaunchKernel.
Where the device has a native form of those checks (`Launcher.checked_call`: on cuda under
CPython, nova.runtime.cuda.py_checked) the instance's `__call__` is that builtin instead — the
checks, the pack and the launch in one native call, with `python_call` taking whatever it does
not (and raising the usual errors). Arguments the
guard does not take (NumPy arrays, a Buffer of another dtype, rank or device, a misaligned or
overlapping view where the kernel assumed otherwise) are launched by `kern.launch` with the
same configuration instead: always correct, with the usual errors, at the cost of a general
launch.
"""

from __future__ import annotations

import types
from typing import TYPE_CHECKING, Any

from nova.lang.guard import checked_spec, make_prepared_call
from nova.runtime.device import Device

if TYPE_CHECKING:
    from nova.lang.api import KernelFunction
    from nova.lang.launch import LaunchPlan


class PreparedLaunch:
    """See the module docstring. `signature` is the prepared signature, `launcher` the device's
    launcher of its function, `config` the validated configuration. Each instance gets a class
    of its own whose `__call__` is generated for its signature (nova.lang.guard), so a launch
    runs one Python frame of Nova code before the native call, or none where the device makes a
    checked builtin of it (the module docstring); `python_call` is the generated function."""

    __slots__ = ("block", "config", "device", "grid", "kernel", "launcher", "shared_bytes",
                 "signature", "stream")

    def __init__(self, kernel: KernelFunction, plan: LaunchPlan, grid: Any, block: Any,
                 stream: Any, shared_bytes: int) -> None:
        self.kernel = kernel
        self.device: Device = plan.device
        self.signature = plan.sig
        self.launcher = plan.launcher
        self.grid, self.block, self.shared_bytes = grid, block, shared_bytes
        self.config = self.launcher.config(grid, block, shared_bytes)
        self.stream = stream
        launch = self.launcher.inline_launch(self.config, stream)  # checks the stream
        call = make_prepared_call(plan.sig, self.launcher, self.device, stream, launch,
                                  self._fallback)
        spec = checked_spec(plan.sig, self.device, types.MethodType(call, self))
        native = None if spec is None else self.launcher.checked_call(self.config, stream, spec)
        # a builtin is no descriptor: as the class's __call__ it gets the arguments alone
        self.__class__ = type("PreparedLaunch", (PreparedLaunch,),
                              {"__slots__": (), "__call__": call if native is None else native,
                               "python_call": call, "__doc__": self.__doc__})

    def __call__(self, *args: Any) -> None:
        """Launch (replaced per instance by the generated call, see the class docstring)."""
        raise NotImplementedError

    def _fallback(self, args: tuple[Any, ...]) -> None:
        """Launch arguments the prepared signature does not take, as `kern.launch` would."""
        self.kernel.launch(*args, grid=self.grid, block=self.block, stream=self.stream,
                           shared_bytes=self.shared_bytes, device=self.device)

    def __repr__(self) -> str:
        sig = ", ".join(str(t) for t in self.signature)
        return (f"<prepared launch of {self.kernel.__name__}({sig}) [{self.grid}, {self.block}] "
                f"on {self.device.kind}:{self.device.index}>")
