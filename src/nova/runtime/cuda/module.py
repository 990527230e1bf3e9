"""cuda device modules: cubin when its arch matches the device, else PTX through the driver JIT.

PTX is loaded with cuModuleLoadDataEx and error/info log buffers, so a JIT failure reports what
ptxas-in-the-driver said. A cubin the driver rejects falls back to the PTX when there is one.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

from nova.bundle.format import Kernel
from nova.errors import CudaError, DeviceError, cuda_error
from nova.runtime.device import DeviceFunction, DeviceModule, ModuleImages, image_digest

if TYPE_CHECKING:
    from nova.runtime.cuda.device import CudaDevice

JIT_LOG_BYTES = 1 << 16


def pick_image(images: ModuleImages, arch: str) -> tuple[str, bytes | str]:
    """('cubin', bytes) when the cubin is for `arch`, else ('ptx', text); DeviceError if none."""
    if images.cubin is not None and images.cubin_arch == arch:
        return "cubin", images.cubin
    if images.ptx is not None:
        return "ptx", images.ptx
    if images.cubin is not None:
        raise DeviceError(f"device module {images.name!r} has only a cubin for "
                          f"{images.cubin_arch}, which cannot run on this {arch} device (no PTX)")
    raise DeviceError(f"device module {images.name!r} has no GPU image (PTX or cubin): it was "
                      "built for the cpu device only; recompile it with PTX enabled to run it "
                      "on cuda")


def _log_text(buf: bytearray) -> str:
    return bytes(buf).split(b"\0", 1)[0].decode("utf-8", "replace").strip()


class CudaModule(DeviceModule):
    """A CUmodule. `.cu` is the bindings handle; `.image_kind` says which image was loaded."""

    def __init__(self, device: CudaDevice, images: ModuleImages) -> None:
        super().__init__(device, images.name)
        self._driver = device.driver
        kind, image = pick_image(images, device.arch)
        self.digest = image_digest(image)
        cu = None
        if kind == "cubin":
            assert isinstance(image, bytes)
            try:
                cu = self._driver.call("cuModuleLoadData", image)
            except CudaError as exc:
                if exc.context_lost or images.ptx is None:
                    raise
            kind = "cubin" if cu is not None else "ptx"
        if cu is None:
            assert images.ptx is not None
            cu = self._load_ptx(images.ptx)
        self.cu: Any = cu
        self.image_kind = kind
        self._handle = int(cu)
        self._finalizer = weakref.finalize(self, self._driver.quiet, "cuModuleUnload", cu)
        self._finalizer.atexit = False

    def _load_ptx(self, ptx: str) -> Any:
        raw = self._driver.raw
        opt = raw.CUjit_option
        err_log, info_log = bytearray(JIT_LOG_BYTES), bytearray(JIT_LOG_BYTES)
        options = [opt.CU_JIT_ERROR_LOG_BUFFER, opt.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                   opt.CU_JIT_INFO_LOG_BUFFER, opt.CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES]
        values: list[Any] = [err_log, JIT_LOG_BYTES, info_log, JIT_LOG_BYTES]
        image = ptx.encode("utf-8") + b"\0"
        try:
            return self._driver.call("cuModuleLoadDataEx", image, len(options), options, values)
        except CudaError as exc:
            if exc.context_lost:
                raise
            log = _log_text(err_log) or _log_text(info_log) or "(the JIT left no log)"
            raise cuda_error(exc.call, exc.error_name, exc.code,
                            f"PTX JIT of device module {self.name!r} failed:\n{log}") from None

    @property
    def handle(self) -> int:
        return self._handle

    def _lookup(self, name: str, kernel: Kernel | None) -> DeviceFunction:
        cu = self._driver.call("cuModuleGetFunction", self.cu, name.encode("utf-8"), kernel=name)
        # Under CUDA's lazy loading (the default since 12.2) a kernel's code is loaded at its first
        # launch, which may wait for running kernels: a kernel that spins until a kernel on another
        # stream runs would then never see it start. Load the code now, while nothing depends on it.
        if hasattr(self._driver.raw, "cuFuncLoad"):
            self._driver.call("cuFuncLoad", cu, kernel=name)
        return CudaFunction(self, name, kernel, cu)


class CudaFunction(DeviceFunction):
    """A CUfunction. `.cu` is the bindings handle, `.handle` its integer value."""

    def __init__(self, module: CudaModule, name: str, kernel: Kernel | None, cu: Any) -> None:
        super().__init__(module, name, kernel, int(cu))
        self.cu = cu
        self.max_dynamic_shared = 48 * 1024  # what a function allows before opting in
        self.occupancy: dict[tuple[int, int], int] = {}  # (threads, dynamic shared) -> blocks/SM
