"""`@nova.kernel` and `@nova.func`: Python functions compiled into GPU kernels.

    @nova.kernel
    def axpy(out, a, x, y):
        i = nova.global_id(0)
        if i < out.shape[0]:
            out[i] = a * x[i] + y[i]

    axpy[blocks, threads](out, 2.0, x, y)                  # grid, block (ints or tuples)
    axpy.launch(out, 2.0, x, y, grid=g, block=b, stream=s, shared_bytes=0)
    axpy.mlir(nova.float32[:], nova.float64, ...)          # or example arguments
    axpy.ptx(...)

Argument types are inferred at each launch (array dtype and rank, scalar types); each signature is
compiled once per device (and bounds-check setting) and cached in memory (a `LaunchPlan`) and on
disk (image_cache.py: by the source key of fingerprint.py, so a warm cache launches without
importing the compiler, compiler.py; else by the generated MLIR). Launches with device arrays
that match a recent signature only run its guard (nova.lang.guard) and its launcher
(nova.runtime.launcher); `kern.prepare(...)` gives a launcher for one signature and
configuration (nova.lang.prepared).
"""

from __future__ import annotations

import _thread
import operator
import types
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from nova import config
from nova.errors import ArgumentError
from nova.lang import image_cache
from nova.lang import types as T
from nova.lang.fingerprint import source_key
from nova.lang.image_cache import CompiledImages
from nova.lang.launch import (
    LaunchPlan,
    Staged,
    arg_type,
    example_span,
    finish_staged,
    refine,
    slot_values,
)
from nova.lang.source import FunctionSource
from nova.runtime.device import Device, ModuleImages
from nova.runtime.memory import Buffer
from nova.runtime.selection import get_device

if TYPE_CHECKING:
    from nova.lang.prepared import PreparedLaunch

Signature = tuple[T.NovaType, ...]


class DeviceFunction:
    """A `@nova.func` device function: callable from kernels (inlined at each call)."""

    __nova_device_function__ = True

    def __init__(self, py_func: Any) -> None:
        self.py_func = py_func
        self._source: FunctionSource | None = None
        self.__name__ = py_func.__name__
        self.__doc__ = py_func.__doc__
        self.__wrapped__ = py_func

    @property
    def source(self) -> FunctionSource:
        if self._source is None:
            self._source = FunctionSource.of(self.py_func)
        return self._source

    def __call__(self, *args: Any) -> Any:
        """Run the Python body on the host (useful for testing a device function)."""
        return self.py_func(*args)

    def __repr__(self) -> str:
        return f"<nova.func {self.__name__}>"


def func(py_func: Any) -> DeviceFunction:
    """Decorator: a device function callable from kernels and other device functions."""
    return DeviceFunction(py_func)


class _Configured:
    """`kern[grid, block]` (optionally `[grid, block, stream, shared_bytes]`): call to launch.

    One kept by the kernel (`[grid, block]` of plain ints, default stream) that launched the
    same signature twice in a row through `KernelFunction._launch` turns into an instance of
    the plan's specialised class for its configuration (`_specialised`): its `__call__` is the
    plan's exact guard and the launch in one generated function (nova.lang.guard.
    make_cached_call), falling back to this class's `__call__` for arguments it does not take.
    A configuration launched once pays nothing for that."""

    __slots__ = ("_last", "block", "grid", "kernel", "shared_bytes", "stream")
    plan: LaunchPlan | None = None
    """The plan a specialised class launches (None: not specialised)."""

    def __init__(self, kernel: KernelFunction, grid: Any, block: Any, stream: Any,
                 shared_bytes: int) -> None:
        self.kernel, self.grid, self.block = kernel, grid, block
        self.stream, self.shared_bytes = stream, shared_bytes
        self._last: LaunchPlan | None = None

    def __call__(self, *args: Any) -> None:
        """The general launch; specialises this object to a plan it used twice in a row."""
        plan = self.kernel._launch(args, self.grid, self.block, self.stream, self.shared_bytes,
                                   None)
        if plan is None or plan is self.plan:
            return
        if plan is self._last and self.kernel._configured.get(
                (self.grid, self.block)) is self:
            follow = self.kernel._check_bounds is None
            specialised = _specialised(plan, self.grid, self.block, self.shared_bytes, follow)
            self.__class__ = _native(specialised, self, follow) or specialised
        self._last = plan


def _specialised(plan: LaunchPlan, grid: Any, block: Any, shared_bytes: int,
                 follow_config: bool) -> type:
    """The `_Configured` subclass launching `plan`'s signature with this configuration on the
    default stream (made once per plan and configuration; see `_Configured`); `follow_config`:
    the kernel follows the configuration's bounds checking, so the class checks it."""
    from nova.lang.guard import make_cached_call

    key = (grid, block, shared_bytes)
    found = plan.configured.get(key)
    if found is None:
        launcher = plan.launcher
        launch = launcher.inline_launch(launcher.config(grid, block, shared_bytes), None)
        call = make_cached_call(plan.sig, launcher, plan.device,
                                plan.check_bounds if follow_config else None, launch,
                                _Configured.__call__)
        found = type("_Configured", (_Configured,), {"__slots__": (), "__call__": call,
                                                     "plan": plan})
        if len(plan.configured) >= _KEPT_CONFIGURED:
            plan.configured.clear()
        plan.configured[key] = found
    return found


def _native(specialised: type, configured: _Configured, follow_config: bool) -> type | None:
    """A subclass of the `specialised` class for `configured` alone whose `__call__` is the
    device's native call of the same checks and launch (Launcher.checked_call; its fallback
    is the specialised Python call bound to `configured`), or None where the device has none.
    Made per object: the native call holds the object its fallback needs."""
    from nova.lang.guard import checked_spec

    plan: LaunchPlan = specialised.plan  # type: ignore[attr-defined]
    launcher = plan.launcher
    spec = checked_spec(plan.sig, plan.device,
                        types.MethodType(specialised.__call__, configured), exact=True,
                        check_bounds=plan.check_bounds if follow_config else None)
    if spec is None:
        return None
    config_ = launcher.config(configured.grid, configured.block, configured.shared_bytes)
    native = launcher.checked_call(config_, None, spec)
    if native is None:
        return None
    # a builtin is no descriptor: as the class's __call__ it gets the arguments alone
    return type("_Configured", (specialised,), {"__slots__": (), "__call__": native})


class KernelFunction:
    """A `@nova.kernel` function (see the module docstring)."""

    __nova_kernel__ = True

    def __init__(self, py_func: Any, device: str | Device | None = None,
                 check_bounds: bool | None = None) -> None:
        self.py_func = py_func
        self.__name__ = py_func.__name__
        self.__doc__ = py_func.__doc__
        self.__wrapped__ = py_func
        self._device = device
        self._check_bounds = check_bounds
        self._source: FunctionSource | None = None
        self._plans: dict[tuple[Device, Signature, bool], LaunchPlan] = {}
        self._recent: dict[tuple[Device, bool], list[LaunchPlan]] = {}
        self._configured: dict[Any, _Configured] = {}
        self._last_configured: tuple[object, Any] = (_NO_CONFIG, None)
        """The latest plain configuration looked up (the key object itself) and its object
        (one tuple: threads see both or neither)."""
        self._modules: dict[Signature, tuple[Any, str]] = {}
        self._images: dict[tuple[Signature, str, str, bool], CompiledImages] = {}
        self._lock = _thread.RLock()

    def __repr__(self) -> str:
        return f"<nova.kernel {self.__name__}>"

    @property
    def source(self) -> FunctionSource:
        if self._source is None:
            self._source = FunctionSource.of(self.py_func)
        return self._source

    def __call__(self, *args: Any) -> None:
        raise ArgumentError(f"launch kernel {self.__name__} with a configuration: "
                            f"{self.__name__}[grid, block](...) or .launch(..., grid=, block=)")

    # --- signatures and compilation -------------------------------------------------------------
    def signature(self, *args: Any) -> Signature:
        """The signature of example arguments, or of explicit types (`nova.float32[:]`...).
        Example arrays also give the alignment/aliasing facts a launch with them would check
        (T.ArrayType); explicit array types assume neither."""
        out = []
        spans = []
        for k, a in enumerate(args):
            if isinstance(a, T.ArrayType | T.ScalarType):
                out.append(a)
            elif isinstance(a, type) and (resolved := T.resolve_dtype(a)) is not None:
                out.append(resolved)  # int, float, bool, np.float32, ...
            else:
                ty = arg_type(a)
                out.append(ty)
                if isinstance(ty, T.ArrayType):
                    spans.append((k, *example_span(a)))
        sig = refine(tuple(out), spans)
        if any(isinstance(a, T.ArrayType) for a in args):
            # an explicit array's pointer is unknown: no example array is known not to overlap it
            sig = tuple(T.ArrayType(t.dtype, t.ndim, t.shape, t.space, t.align)
                        if type(t) is T.ArrayType else t for t in sig)
        return sig

    def _module(self, sig: Signature) -> tuple[Any, str]:
        with self._lock:
            found = self._modules.get(sig)
            if found is None:
                from nova.lang import compiler  # xDSL: only when a signature must be built

                module = compiler.build_module(self.source, sig, self.__name__)
                found = (module, compiler.print_module(module))
                self._modules[sig] = found
            return found

    def mlir(self, *sig: Any) -> str:
        """The generated MLIR (a module holding one gpu.module) for a signature."""
        return self._module(self.signature(*sig))[1]

    @property
    def check_bounds(self) -> bool:
        """Whether this kernel's array accesses are bounds-checked: the decorator's
        `check_bounds`, else the configuration's (NOVA_CHECK_BOUNDS)."""
        if self._check_bounds is not None:
            return self._check_bounds
        return config.get().check_bounds

    def compile(self, *sig: Any, device: str | Device | None = None) -> CompiledImages:
        """Compile a signature for a device (default: the launch device); returns its images."""
        dev = get_device(device if device is not None else self._device)
        return self._compile(self.signature(*sig), dev.kind, _arch(dev))

    def _compile(self, sig: Signature, target: str, arch: str,
                 check_bounds: bool | None = None) -> CompiledImages:
        """The images of `sig` for a target (`check_bounds` None: the kernel's setting)."""
        checked = self.check_bounds if check_bounds is None else check_bounds
        key = (sig, target, arch, checked)
        with self._lock:
            found = self._images.get(key)
            if found is None:
                found = image_cache.through_source_key(
                    lambda: source_key(self, sig, target, arch, checked),
                    lambda: self._lower(sig, target, arch, checked))
                self._images[key] = found
            return found

    def _lower(self, sig: Signature, target: str, arch: str,
               check_bounds: bool) -> CompiledImages:
        """Translate and lower `sig` (through the MLIR-keyed disk cache)."""
        from nova.lang import compiler

        module, text = self._module(sig)
        return compiler.compile_images(module, text, target, arch, check_bounds)

    def ptx(self, *sig: Any, arch: str | None = None) -> str:
        """The PTX for a signature (arch defaults to config.arch)."""
        images = self._compile(self.signature(*sig), "cuda", arch or config.get().arch)
        assert images.ptx is not None
        return images.ptx

    def max_active_blocks(self, *sig: Any, block: int, shared_bytes: int = 0,
                          device: str | Device | None = None) -> int:
        """Blocks of `block` threads (with `shared_bytes` of dynamic shared memory) of this
        kernel's `sig` specialisation that one multiprocessor of `device` holds at once, as
        CUDA's occupancy calculator counts them (registers included): the grid of a persistent
        kernel is this times the multiprocessor count. Compiles and loads `sig` if needed."""
        dev = get_device(device if device is not None else self._device)
        checked = self._check_bounds
        if checked is None:
            checked = config.get().check_bounds
        plan = self._plan(dev, self.signature(*sig), checked)
        return dev.max_active_blocks(plan.function, block, shared_bytes)

    # --- launching ------------------------------------------------------------------------------
    def __getitem__(self, config: Any) -> _Configured:
        last = self._last_configured
        if last[0] is config:  # the same tuple again: `kern[1, 32]` in a loop is a constant
            return last[1]
        try:
            found = self._configured.get(config)
        except TypeError:  # unhashable (lists)
            found = None
        # only plain-int configurations are stored; an equal key of other types (True, 1.0)
        # must not find one
        if found is not None and ((type(config[0]) is int and type(config[1]) is int)
                                  or _plain_config(config)):
            self._last_configured = (config, found)
            return found
        if not isinstance(config, tuple) or not 2 <= len(config) <= 4:
            raise ArgumentError(f"{self.__name__}[grid, block] (optionally [grid, block, "
                                f"stream, shared_bytes]), got {config!r}")
        plain = _plain_config(config)
        grid, block, *rest = config
        stream = rest[0] if rest else None
        shared = rest[1] if len(rest) > 1 else 0
        configured = _Configured(self, grid, block, stream, shared)
        if plain:
            if len(self._configured) >= _KEPT_CONFIGURED:
                self._configured.clear()
            self._configured[config] = configured
            self._last_configured = (config, configured)
        return configured

    def _plan(self, device: Device, sig: Signature, check_bounds: bool) -> LaunchPlan:
        with self._lock:
            plan = self._plans.get((device, sig, check_bounds))
            if plan is None:
                images = self._compile(sig, device.kind, _arch(device), check_bounds)
                module = device.load_module(ModuleImages(
                    f"{self.__name__}", ptx=images.ptx, cubin=images.cubin,
                    cubin_arch=images.cubin_arch, cpu_object=images.cpu_object))
                fn = module.get_function(images.kernel.name, images.kernel)
                plan = LaunchPlan(device, fn, sig, check_bounds)
                self._plans[(device, sig, check_bounds)] = plan
            return plan

    def _launch_device(self, args: tuple[Any, ...], stream: Any,
                       device: str | Device | None) -> Device:
        """The device a launch runs on (see `launch`)."""
        if stream is not None and hasattr(stream, "device"):
            return stream.device
        if device is None and self._device is None:
            # like CuPy and PyTorch ops, follow the data: the first Nova Buffer's device, else
            # the default (NOVA_DEVICE / auto)
            first = args[0] if args else None
            if type(first) is Buffer:
                return first.device
            return next((a.device for a in args if type(a) is Buffer), None) or _default_device()
        return get_device(device if device is not None else self._device)

    def launch(self, *args: Any, grid: int | Sequence[int], block: int | Sequence[int],
               stream: Any = None, shared_bytes: int = 0,
               device: str | Device | None = None) -> None:
        """Launch on `device` (default: the kernel's, else the device of the first Nova Buffer
        argument, else NOVA_DEVICE/auto). NumPy arrays are
        copied in and back (the call then waits for the kernel); device arrays are used in place
        and the launch is asynchronous on `stream` (default: the device's default stream).
        Arguments that a recent signature's guard accepts launch without re-inferring anything
        (nova.lang.guard); the rest take `_launch_general`."""
        self._launch(args, grid, block, stream, shared_bytes, device)

    def _launch(self, args: tuple[Any, ...], grid: Any, block: Any, stream: Any,
                shared_bytes: int, device: str | Device | None) -> LaunchPlan | None:
        """`launch`, with positional arguments (`kern[grid, block](...)` calls it); returns the
        plan that launched, when its guard may take the same arguments again (nothing staged,
        the device picked from the first argument, a Buffer, which the guard requires), else
        None."""
        first = args[0] if args else None
        follows_first = (type(first) is Buffer and stream is None and device is None
                         and self._device is None)
        dev = first.device if follows_first else self._launch_device(  # type: ignore[union-attr]
            args, stream, device)
        if type(grid) is not int:
            grid = _dims(grid, "grid")
        if type(block) is not int:
            block = _dims(block, "block")
        checked = self._check_bounds
        if checked is None:
            checked = config.get().check_bounds
        for plan in self._recent.get((dev, checked), ()):
            slots = plan.guard(args, dev, stream)
            if slots is not None:
                launcher = plan.launcher
                launcher.launch(launcher.config(grid, block, shared_bytes), stream, slots)
                return plan if follows_first else None
        used = self._launch_general(dev, checked, args, grid, block, stream, shared_bytes)
        return used if follows_first else None

    def _launch_general(self, dev: Device, checked: bool, args: tuple[Any, ...], grid: Any,
                        block: Any, stream: Any, shared_bytes: int) -> LaunchPlan | None:
        """Infer the signature, stage NumPy arrays, launch, and remember the plan for the guard
        path when no argument needed staging (then returned, else None)."""
        staged: list[Staged] = []
        try:
            base = tuple(map(arg_type, args))
            spans: list[tuple[int, int, int]] = []
            values = slot_values(dev, base, args, staged, stream, spans)
            sig = refine(base, spans)
            plan = self._plans.get((dev, sig, checked)) or self._plan(dev, sig, checked)
            launcher = plan.launcher
            launch = launcher.launch_sync if staged else launcher.launch  # staged: waited for
            launch(launcher.config(grid, block, shared_bytes), stream,
                   launcher.pack_values(values))
            finish_staged(dev, staged, stream)
        finally:
            for s in staged:
                if s.buffer is not None:
                    s.buffer.free()
        if staged:
            return None
        key = (dev, checked)
        recent = [p for p in self._recent.get(key, ()) if p is not plan]
        self._recent[key] = [plan, *recent][:_RECENT_PLANS]
        return plan

    def prepare(self, *args: Any, grid: int | Sequence[int], block: int | Sequence[int],
                stream: Any = None, shared_bytes: int = 0,
                device: str | Device | None = None) -> PreparedLaunch:
        """A launcher of this kernel for one signature and configuration, for launch loops:
        `run = kern.prepare(x, y, 2.0, grid=g, block=b)` then `run(x, y, 2.0)` as often as
        wanted. `args` are example arguments or types, as for `signature`; the kernel is
        compiled and the configuration and stream checked here, once. See nova.lang.prepared."""
        from nova.lang.prepared import PreparedLaunch

        dev = self._launch_device(args, stream, device)
        sig = self.signature(*args)
        checked = self.check_bounds
        return PreparedLaunch(self, self._plan(dev, sig, checked), _dims(grid, "grid"),
                              _dims(block, "block"), stream, shared_bytes)


_RECENT_PLANS = 4
_NO_CONFIG = object()
"""The key of `_last_configured` before any lookup (no configuration is this object)."""
"""Signatures per (device, bounds checking) whose guards a launch tries before inferring."""
_KEPT_CONFIGURED = 64
"""`kern[grid, block]` objects kept per kernel (emptied when full)."""


def _plain_config(config: tuple[Any, ...]) -> bool:
    """Whether `kern[config]` may be kept and found again by its key: `[grid, block]` of ints
    or tuples of ints (`True == 1` must not find `1`'s entry; streams are not keys)."""
    if len(config) != 2:
        return False
    grid, block = config
    if type(grid) is int and type(block) is int:
        return True
    return all(type(v) is int or (type(v) is tuple and all(type(d) is int for d in v))
               for v in config)


def _dims(value: Any, what: str) -> Any:
    """Accept NumPy integers (and lists) for grid/block sizes; Device.check_launch validates."""
    try:
        if isinstance(value, bool) or (isinstance(value, tuple | list) and any(
                isinstance(v, bool) for v in value)):
            raise TypeError
        if isinstance(value, tuple | list):
            return tuple(operator.index(v) for v in value)
        return operator.index(value)
    except TypeError:
        raise ArgumentError(f"{what} must be 1 to 3 positive ints, got {value!r}") from None


_default: tuple[Any, Device] | None = None


def _default_device() -> Device:
    """get_device(None), memoised per active configuration (it probes CUDA and takes a lock)."""
    global _default
    cfg = config.get()
    cached = _default
    if cached is not None and cached[0] is cfg:
        return cached[1]
    dev = get_device(None)
    _default = (cfg, dev)
    return dev


def _arch(device: Device) -> str:
    return device.arch  # 'x86_64' for the cpu device


class _KernelDecorator:
    """`nova.kernel`: the decorator (`@nova.kernel`, `@nova.kernel(device="cpu")`,
    `@nova.kernel(check_bounds=True)`: every array access checked, docs/debugging.md), also
    carrying the ahead-of-time entry point `nova.kernel.save_bundle(path, [(kern, sig), ...])`."""

    def __call__(self, py_func: Any = None, *, device: str | Device | None = None,
                 check_bounds: bool | None = None) -> Any:
        if py_func is None:
            return lambda f: KernelFunction(f, device, check_bounds)
        return KernelFunction(py_func, device, check_bounds)

    @staticmethod
    def save_bundle(path: Any, kernels_with_signatures: Any, **options: Any) -> Any:
        """See nova.lang.aot.save_bundle."""
        from nova.lang.aot import save_bundle

        return save_bundle(path, kernels_with_signatures, **options)

    @staticmethod
    def bundle_source(kernels_with_signatures: Any) -> str:
        """The MLIR text save_bundle compiles (see nova.lang.aot)."""
        from nova.lang.aot import bundle_source

        return bundle_source(kernels_with_signatures)

    def __repr__(self) -> str:
        return "<nova.kernel decorator>"


kernel = _KernelDecorator()
