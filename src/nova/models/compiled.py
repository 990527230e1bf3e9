"""CompiledModel: `m = nova.models.compile(graph, device=..., dtype=...)`, then `m(x)` /
`m.forward(x)`.

The model's graph is validated when the CompiledModel is made (unsupported ops or attributes fail
then, before anything runs). Each distinct binding of the symbolic input dims (e.g. batch=1,
batch=4096) is specialised on first use: the graph is optimised for those static shapes, lowered
to MLIR, compiled by Nova into one `.nova` bundle (Nova's bundle cache makes recompiling the same
program cheap) and loaded on the device; its weights are uploaded to device memory once and
passed to `@forward` by reference on every call.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from nova.errors import RuntimeFailure
from nova.models.build import Settings, build, compile_lowered, lower_with
from nova.models.errors import InputError, ModelError
from nova.models.graph import Graph, TensorType, numpy_dtype
from nova.models.passes.attention import check_attention_mode
from nova.models.passes.library import check_policy
from nova.models.passes.library_conv import check_conv_policy
from nova.models.pipeline import Lowered, validate
from nova.models.weights_section import append_section, encode, read_section
from nova.runtime.device import DeviceKind


@dataclass
class Specialisation:
    """One compiled program for one binding of the symbolic dims."""

    bindings: dict[str, int]
    module: Any
    """The loaded nova.NovaModule."""
    weights: list[Any]
    """Device Buffers of the weights @forward reads, in its argument order."""
    bundle: bytes
    outputs: list[TensorType]
    signature: dict[str, Any] | None = None
    """What the manifest records (None for a model loaded from a .nova file)."""
    host_weights: dict[str, np.ndarray] | None = None
    """The weights as uploaded, in @forward order (None for a model loaded from a file)."""
    relower: Callable[[], Lowered] | None = None
    """Lowers the graph again (same settings: the same program) for a specialisation that came
    from the model cache, whose lowering was skipped; None when `lowered` is set or there is no
    graph (a model loaded from a .nova file)."""
    _lowered: Lowered | None = None

    @property
    def lowered(self) -> Lowered | None:
        """The compiler's view (None for a model loaded from a .nova file); lowered on first use
        for a specialisation that came from the model cache."""
        if self._lowered is None and self.relower is not None:
            self._lowered = self.relower()
        return self._lowered

    @property
    def mlir(self) -> str:
        lowered = self.lowered
        if lowered is None:
            raise InputError("a model loaded from a .nova file has no MLIR")
        return lowered.program.mlir

    def output_types(self) -> list[TensorType]:
        return self.outputs


class CompiledModel:
    """A graph compiled for one device and dtype (see the module doc)."""

    _frozen = False
    """Loaded from a .nova file (`load`): only its one specialisation exists, no graph to
    compile others from."""

    def __init__(self, graph: Graph, device: Any = None, dtype: str = "float32",
                 **compile_options: Any) -> None:
        import nova

        validate(graph)
        self.graph = graph
        self.dtype = dtype
        self.device = nova.get_device(device)
        self.compile_options = compile_options
        check_policy(str(compile_options.get("gemm", "auto")))
        check_conv_policy(str(compile_options.get("conv", "auto")))
        check_attention_mode(str(compile_options.get("attention", "auto")))
        self._cache: dict[tuple[tuple[str, int], ...], Specialisation] = {}
        if not graph.symbols():
            self.specialise({})

    # ---- signature ----------------------------------------------------------------------------

    def input_type(self, name: str) -> TensorType:
        """The expected type of input `name` (float inputs take the model dtype)."""
        t = self.graph.types[name]
        if t.dtype == "float32":
            return TensorType(self.dtype, t.shape)
        return t

    @property
    def inputs(self) -> list[tuple[str, TensorType]]:
        return [(n, self.input_type(n)) for n in self.graph.inputs]

    @property
    def outputs(self) -> list[str]:
        return list(self.graph.outputs)

    # ---- compiling ----------------------------------------------------------------------------

    def specialise(self, bindings: dict[str, int]) -> Specialisation:
        """The program for `bindings` of the symbolic dims (compiled on first use, cached)."""
        key = tuple(sorted(bindings.items()))
        spec = self._cache.get(key)
        if spec is not None:
            return spec
        if self._frozen:
            (have,) = self._cache.values()
            raise InputError(f"this model was loaded from a .nova file compiled for "
                             f"{_spell_bindings(have.bindings)}; got {_spell_bindings(bindings)} "
                             "(compile the graph again for other shapes)")
        import nova

        settings = self._settings()
        inputs = [self.input_type(n) for n in self.graph.inputs]
        built = build(self.graph, bindings, self.dtype, settings, inputs)
        entry, lowered = built.entry, built.lowered
        try:
            module = nova.load(entry.bundle, device=self.device)
        except RuntimeFailure as exc:
            if settings.asked_conv != "auto" or all(
                    c.get("backend") == "nova" for c in entry.signature.get("conv", [])):
                raise
            # the library rejected a convolution when nova.load ran its plans once: `auto`
            # never fails where generated kernels work (not stored in the model cache)
            lowered = lower_with(self.graph, bindings, self.dtype, settings, conv="nova")
            for choice in lowered.program.conv:
                choice.reason = f"auto: {settings.conv_library} rejected it at load ({exc})"
            entry = compile_lowered(self.graph, bindings, self.dtype, lowered,
                                    settings.options, inputs)
            module = nova.load(entry.bundle, device=self.device)
        weights = [nova.to_device(np.ascontiguousarray(w).reshape(-1), self.device)
                   for w in entry.weights.values()]
        outputs = [TensorType(o["dtype"], tuple(o["shape"])) for o in entry.signature["outputs"]]
        spec = Specialisation(dict(bindings), module, weights, entry.bundle, outputs,
                              entry.signature, entry.weights, _lowered=lowered)
        if lowered is None:  # from the model cache: lowered again only if someone asks
            spec.relower = lambda: lower_with(self.graph, bindings, self.dtype, settings)
        self._cache[key] = spec
        return spec

    def _settings(self) -> Settings:
        """The policies resolved for this model's device, and the driver's options."""
        on_gpu = self.device.kind is DeviceKind.CUDA
        options = {"ptx": on_gpu, "cubin": on_gpu, "cpu_image": not on_gpu,
                   **self.compile_options}
        tensor_cores = bool(options.pop("tensor_cores", on_gpu))
        policy, library = self._gemm_policy(str(options.pop("gemm", "auto")))
        attention = str(options.pop("attention", "auto"))
        asked = str(options.pop("conv", "auto"))
        conv, conv_library = self._conv_policy(asked)
        return Settings(tensor_cores, policy, library, conv, conv_library, attention, asked,
                        options)

    def _gemm_policy(self, policy: str) -> tuple[str, str]:
        """The policy passes/library.py applies, and the library's name: `auto` becomes `nova`
        where the device does not prefer its library (the cpu device) or cannot load it (cuda
        without cuBLASLt); `library` where it cannot load is an error saying why."""
        name, problem, preferred = self.device.gemm_library()
        if policy == "library" and problem is not None:
            raise ModelError(f"gemm='library': {problem}")
        if policy == "auto" and (problem is not None or not preferred):
            return "nova", name
        return policy, name

    def _conv_policy(self, policy: str) -> tuple[str, str]:
        """The same for convolutions (passes/library_conv.py, the device's `conv_library`)."""
        name, problem, preferred = self.device.conv_library()
        if policy == "library" and problem is not None:
            raise ModelError(f"conv='library': {problem}")
        if policy == "auto" and (problem is not None or not preferred):
            return "nova", name
        return policy, name

    def save(self, path: str | Path) -> None:
        """Write the compiled program with its weights and signature as one `.nova` file
        (`.nova.weights` section, see nova.models.weights_section); `nova.models.load` runs it.
        A file holds one specialisation: exactly one must have been compiled."""
        if len(self._cache) != 1:
            raise InputError(f"save: {len(self._cache)} specialisations are compiled; a .nova "
                             "file holds one (run the model once with the shapes to save)")
        spec = next(iter(self._cache.values()))
        if spec.signature is None or spec.host_weights is None:
            raise InputError("save: this model was loaded from a .nova file; copy that file")
        payload = encode(spec.host_weights, spec.signature)
        Path(path).write_bytes(append_section(spec.bundle, payload))

    # ---- running ------------------------------------------------------------------------------

    def synchronize(self) -> None:
        """Wait for every launched forward (device outputs are then complete)."""
        for spec in self._cache.values():
            spec.module.synchronize()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """Run the model. Inputs by position or name; NumPy in -> NumPy out, device Buffers in
        -> device Buffers out. One output is returned as is, several as a tuple."""
        values = self._collect(args, kwargs)
        bindings: dict[str, int] = {}
        on_device = [not isinstance(v, np.ndarray) and hasattr(v, "ptr") for v in values]
        flat = []
        for name, value, dev in zip(self.graph.inputs, values, on_device, strict=True):
            flat.append(self._check_input(name, value, dev, bindings))
        spec = self.specialise(bindings)
        out_types = spec.output_types()
        device_mode = any(on_device)
        outs: list[Any] = []
        for t in out_types:
            n = max(1, t.numel())
            dt = numpy_dtype(t.dtype)
            if device_mode:
                outs.append(self.device.allocate(n * dt.itemsize).view(dt, (n,)))
            else:
                outs.append(np.empty(n, dtype=dt))
        spec.module.forward(*flat, *spec.weights, *outs)
        shaped = [o.view(shape=tuple(int(d) for d in t.shape)) if device_mode
                  else o.reshape(tuple(int(d) for d in t.shape))
                  for o, t in zip(outs, out_types, strict=True)]
        return shaped[0] if len(shaped) == 1 else tuple(shaped)

    def capture(self, *args: Any, **kwargs: Any) -> CapturedForward:
        """Record one whole forward for these inputs' shapes (a CUDA graph on cuda, a recorded
        op list on cpu): the launch-bound case, e.g. batch-1 inference."""
        values = self._collect(args, kwargs)
        bindings: dict[str, int] = {}
        flat = [self._check_input(n, v, not isinstance(v, np.ndarray) and hasattr(v, "ptr"),
                                  bindings) for n, v in zip(self.graph.inputs, values,
                                                            strict=True)]
        spec = self.specialise(bindings)
        outs = []
        for t in spec.output_types():
            dt = numpy_dtype(t.dtype)
            n = max(1, t.numel())
            outs.append(self.device.allocate(n * dt.itemsize).view(dt, (n,)))
        captured = spec.module.capture("forward", *flat, *spec.weights, *outs)
        return CapturedForward(captured, len(flat), [tuple(int(d) for d in t.shape)
                                                     for t in spec.output_types()])

    def _collect(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
        names = self.graph.inputs
        if len(args) > len(names):
            raise InputError(f"forward takes {len(names)} inputs ({', '.join(names)}), got "
                             f"{len(args)}")
        values: dict[str, Any] = dict(zip(names, args, strict=False))
        for key, value in kwargs.items():
            if key not in names:
                raise InputError(f"forward got an unknown input '{key}' (inputs: "
                                 f"{', '.join(names)})")
            if key in values:
                raise InputError(f"forward got input '{key}' twice")
            values[key] = value
        missing = [n for n in names if n not in values]
        if missing:
            raise InputError(f"forward is missing input(s) {', '.join(missing)}")
        return [values[n] for n in names]

    def _check_input(self, name: str, value: Any, on_device: bool,
                     bindings: dict[str, int]) -> Any:
        expected = self.input_type(name)
        if not on_device:
            value = np.asarray(value)
        shape = tuple(int(d) for d in value.shape)
        dtype = np.dtype(value.dtype)
        want = numpy_dtype(expected.dtype)
        if dtype != want:
            raise InputError(f"input '{name}': expected dtype {expected.dtype} with shape "
                             f"{_spell(expected.shape)}, got {dtype}")
        if len(shape) != expected.rank:
            raise InputError(f"input '{name}': expected shape {_spell(expected.shape)}, got "
                             f"{list(shape)}")
        for axis, (want_d, got) in enumerate(zip(expected.shape, shape, strict=True)):
            if isinstance(want_d, str):
                bound = bindings.setdefault(want_d, got)
                if bound != got:
                    raise InputError(f"input '{name}': dim {axis} ('{want_d}') is {got}, but "
                                     f"another input bound '{want_d}' = {bound}")
            elif want_d != got:
                raise InputError(f"input '{name}': expected shape {_spell(expected.shape)}, got "
                                 f"{list(shape)}")
        if on_device:
            flat = value.view(shape=(max(1, math.prod(shape)),))
            if flat.ptr % 16:  # kernels assume 16-byte aligned buffers (see codegen.context)
                copy = self.device.allocate(flat.nbytes).view(flat.dtype, flat.shape)
                self.device.copy_dtod(copy, flat, flat.nbytes)
                flat = copy
            return flat
        if not value.size:
            return np.zeros(1, want)
        flat = np.ascontiguousarray(value).reshape(-1)
        return flat if flat.ctypes.data % 16 == 0 else flat.copy()


def _spell_bindings(bindings: dict[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(bindings.items())) or "static shapes"


def load(path: str | Path, device: Any = None) -> CompiledModel:
    """Run a `.nova` file written by `CompiledModel.save`: the program is loaded on `device`,
    its weights uploaded to device memory once, and `forward` checks inputs against the stored
    signature (the file serves the shapes it was specialised for)."""
    import nova

    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ModelError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    module = nova.load(data, device=device)  # checks the seal first: damage is reported as such
    section = read_section(data, str(path))
    if section is None:
        raise ModelError(f"{path}: no .nova.weights section: not a nova.models file (plain "
                         "Nova programs load with nova.load)")
    info = section.model
    graph = Graph(name=str(info.get("name", "model")))
    for entry in info["inputs"]:
        graph.inputs.append(entry["name"])
        graph.types[entry["name"]] = TensorType(entry["dtype"], tuple(entry["shape"]))
    graph.outputs = [o["name"] for o in info["outputs"]]
    model = CompiledModel.__new__(CompiledModel)
    model.graph = graph
    model.dtype = info.get("dtype", "float32")
    model.device = module.device
    model.compile_options = {}
    weights = [nova.to_device(np.asarray(section.weights[w]).reshape(-1), module.device)
               for w in info["weights"]]
    bindings = {k: int(v) for k, v in info.get("bindings", {}).items()}
    outputs = [TensorType(o["dtype"], tuple(o["shape"])) for o in info["outputs"]]
    spec = Specialisation(bindings, module, weights, data, outputs)
    model._cache = {tuple(sorted(bindings.items())): spec}
    model._frozen = True
    return model


def _spell(shape: tuple[Any, ...]) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


class CapturedForward:
    """A captured forward: `launch()` reruns it on the capture-time device buffers (`inputs`:
    write new data there; `outputs`: read results there), `replay(*arrays)` copies new inputs
    in, runs and returns the outputs as NumPy arrays."""

    def __init__(self, captured: Any, n_inputs: int, out_shapes: list[tuple[int, ...]]) -> None:
        self.captured = captured
        self.inputs = captured.buffers[:n_inputs]
        self.outputs = [b.view(shape=s) for b, s in zip(
            captured.buffers[len(captured.buffers) - len(out_shapes):], out_shapes,
            strict=True)]
        self._n_inputs = n_inputs

    def launch(self, stream: Any = None) -> None:
        self.captured.launch(stream)

    def replay(self, *inputs: Any) -> Any:
        if len(inputs) != self._n_inputs:
            raise InputError(f"replay takes {self._n_inputs} inputs, got {len(inputs)}")
        args = [np.ascontiguousarray(x).reshape(-1) for x in inputs]
        rest = self.captured.buffers[self._n_inputs:]
        self.captured.replay(*args, *rest)
        outs = [o.numpy() for o in self.outputs]
        return outs[0] if len(outs) == 1 else tuple(outs)
