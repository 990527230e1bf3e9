"""`nova.models.Graph`: build a model in Python, one method per op.

    g = Graph("mlp")
    x = g.input("x", ("batch", 784))
    h = g.relu(g.linear(x, w1, b1))          # weights are NumPy arrays (torch layout: [out, in])
    g.output(g.linear(h, w2, b2))
    m = nova.models.compile(g, device="cpu")

Methods return tensor names (str); NumPy arrays and Python scalars passed where a tensor is
expected become weights. The ops are exactly those of nova.models.ops (ONNX semantics).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from nova.models.graph import Dim, Node, TensorType
from nova.models.graph import Graph as GraphIR

TensorLike = str | np.ndarray | float | int


class Graph(GraphIR):
    """A graph IR with builder methods (see the module doc)."""

    def __init__(self, name: str = "model") -> None:
        super().__init__(name=name)
        self._counter = 0
        self._output_names: set[str] = set()
        self._seen_nodes = 0

    # ---- tensors ------------------------------------------------------------------------------

    def _fresh(self, base: str) -> str:
        while True:
            self._counter += 1
            name = f"{base}_{self._counter}"
            if not self._taken(name):
                return name

    def _taken(self, name: str) -> bool:
        """Whether a tensor of this name exists (an input, weight or node output)."""
        return name in self.types or name in self.weights or name in self._outputs

    def _unique(self, name: str, count: int = 1) -> str:
        """`name` when it and its `_out<i>` names (count > 1) are free, else a fresh variant:
        explicit names (FX node names in the torch backend) may equal generated ones."""
        def free(n: str) -> bool:
            return not (self._taken(n) if count == 1 else
                        any(self._taken(f"{n}_out{i}") for i in range(count)))
        if free(name):
            return name
        while not free(candidate := self._fresh(name)):
            pass
        return candidate

    @property
    def _outputs(self) -> set[str]:
        """Every node output so far (nodes appended since the last call are added)."""
        for n in self.nodes[self._seen_nodes:]:
            self._output_names.update(n.outputs)
        self._seen_nodes = len(self.nodes)
        return self._output_names

    def input(self, name: str, shape: Sequence[Dim], dtype: str = "float32") -> str:
        """Declare a graph input; dims may be ints or symbols such as 'batch'."""
        self.inputs.append(name)
        self.types[name] = TensorType(dtype, tuple(shape))
        return name

    def weight(self, value: Any, name: str | None = None) -> str:
        """Add a constant tensor (an initializer)."""
        array = np.array(value, order="C")
        if array.dtype == np.float64:
            array = array.astype(np.float32)
        key = self._unique(name) if name else self._fresh("w")
        self.weights[key] = array
        return key

    def output(self, *names: str) -> None:
        self.outputs.extend(names)

    def _t(self, value: TensorLike) -> str:
        if isinstance(value, str):
            return value
        if isinstance(value, bool | int | float):
            return self.weight(np.asarray(value, np.float32))
        return self.weight(value)

    def node(self, op: str, inputs: Sequence[TensorLike | None], attrs: dict[str, Any] | None =
             None, outputs: int = 1, name: str | None = None) -> Any:
        """Append a node; returns its output name (or a tuple of names)."""
        node_name = self._unique(name, outputs) if name else self._fresh(op.lower())
        outs = [f"{node_name}_out{i}" if outputs > 1 else node_name for i in range(outputs)]
        self.nodes.append(Node(op, ["" if i is None else self._t(i) for i in inputs], outs,
                               {k: v for k, v in (attrs or {}).items() if v is not None},
                               node_name))
        return outs[0] if outputs == 1 else tuple(outs)

    # ---- elementwise --------------------------------------------------------------------------

    def add(self, a: TensorLike, b: TensorLike) -> str:
        return self.node("Add", [a, b])

    def sub(self, a: TensorLike, b: TensorLike) -> str:
        return self.node("Sub", [a, b])

    def mul(self, a: TensorLike, b: TensorLike) -> str:
        return self.node("Mul", [a, b])

    def div(self, a: TensorLike, b: TensorLike) -> str:
        return self.node("Div", [a, b])

    def pow(self, a: TensorLike, b: TensorLike) -> str:
        return self.node("Pow", [a, b])

    def relu(self, x: str) -> str:
        return self.node("Relu", [x])

    def gelu(self, x: str, approximate: str = "none") -> str:
        return self.node("Gelu", [x], {"approximate": approximate})

    def silu(self, x: str) -> str:
        return self.node("Silu", [x])

    def sigmoid(self, x: str) -> str:
        return self.node("Sigmoid", [x])

    def tanh(self, x: str) -> str:
        return self.node("Tanh", [x])

    def exp(self, x: str) -> str:
        return self.node("Exp", [x])

    def sqrt(self, x: str) -> str:
        return self.node("Sqrt", [x])

    def erf(self, x: str) -> str:
        return self.node("Erf", [x])

    def cast(self, x: str, dtype: str) -> str:
        return self.node("Cast", [x], {"to": dtype})

    # ---- linear algebra -----------------------------------------------------------------------

    def matmul(self, a: TensorLike, b: TensorLike, trans_a: bool = False, trans_b: bool = False,
               alpha: float = 1.0) -> str:
        return self.node("MatMul", [a, b], {"trans_a": int(trans_a), "trans_b": int(trans_b),
                                            "alpha": float(alpha)})

    def gemm(self, a: TensorLike, b: TensorLike, c: TensorLike | None = None, alpha: float = 1.0,
             beta: float = 1.0, trans_a: bool = False, trans_b: bool = False) -> str:
        return self.node("Gemm", [a, b, c], {"alpha": alpha, "beta": beta,
                                             "transA": int(trans_a), "transB": int(trans_b)})

    def linear(self, x: str, weight: TensorLike, bias: TensorLike | None = None) -> str:
        """x @ weight.T + bias, with weight in torch.nn.Linear's [out, in] layout."""
        y = self.matmul(x, weight, trans_b=True)
        return y if bias is None else self.add(y, bias)

    def conv2d(self, x: str, weight: TensorLike, bias: TensorLike | None = None,
               stride: int | Sequence[int] = 1, padding: int | Sequence[int] = 0,
               dilation: int | Sequence[int] = 1, groups: int = 1) -> str:
        """NCHW convolution, weight [out, in/groups, kh, kw]; padding symmetric (int or
        (ph, pw)) or ONNX's [top, left, bottom, right]."""
        pads = _pair(padding)
        pads4 = list(pads) * 2 if len(pads) == 2 else list(pads)
        return self.node("Conv", [x, weight, bias], {
            "strides": list(_pair(stride)), "pads": pads4, "dilations": list(_pair(dilation)),
            "group": groups})

    def batch_norm(self, x: str, scale: TensorLike, bias: TensorLike, mean: TensorLike,
                   var: TensorLike, epsilon: float = 1e-5) -> str:
        return self.node("BatchNormalization", [x, scale, bias, mean, var],
                         {"epsilon": epsilon})

    def max_pool2d(self, x: str, kernel: int | Sequence[int], stride: int | Sequence[int] |
                   None = None, padding: int | Sequence[int] = 0) -> str:
        k = list(_pair(kernel))
        p = list(_pair(padding))
        return self.node("MaxPool", [x], {"kernel_shape": k, "strides": list(
            _pair(stride if stride is not None else kernel)), "pads": p * 2})

    def avg_pool2d(self, x: str, kernel: int | Sequence[int], stride: int | Sequence[int] |
                   None = None, padding: int | Sequence[int] = 0,
                   count_include_pad: bool = False) -> str:
        k = list(_pair(kernel))
        p = list(_pair(padding))
        return self.node("AveragePool", [x], {
            "kernel_shape": k, "strides": list(_pair(stride if stride is not None else kernel)),
            "pads": p * 2, "count_include_pad": int(count_include_pad)})

    def global_avg_pool(self, x: str) -> str:
        return self.node("GlobalAveragePool", [x])

    # ---- rows ---------------------------------------------------------------------------------

    def softmax(self, x: str, axis: int = -1) -> str:
        return self.node("Softmax", [x], {"axis": axis})

    def layer_norm(self, x: str, scale: TensorLike, bias: TensorLike | None = None,
                   axis: int = -1, epsilon: float = 1e-5) -> str:
        return self.node("LayerNormalization", [x, scale, bias],
                         {"axis": axis, "epsilon": epsilon})

    def reduce_mean(self, x: str, axes: Sequence[int], keepdims: bool = True) -> str:
        return self._reduce("ReduceMean", x, axes, keepdims)

    def reduce_sum(self, x: str, axes: Sequence[int], keepdims: bool = True) -> str:
        return self._reduce("ReduceSum", x, axes, keepdims)

    def reduce_max(self, x: str, axes: Sequence[int], keepdims: bool = True) -> str:
        return self._reduce("ReduceMax", x, axes, keepdims)

    def _reduce(self, op: str, x: str, axes: Sequence[int], keepdims: bool) -> str:
        return self.node(op, [x, np.asarray(list(axes), np.int64)], {"keepdims": int(keepdims)})

    def attention(self, q: str, k: str, v: str, mask: TensorLike | None = None,
                  scale: float | None = None) -> str:
        """softmax(q @ k^T * scale + mask) @ v over the last two axes (scale: 1/sqrt(head dim))."""
        return self.node("Attention", [q, k, v, mask], {"scale": scale})

    # ---- shapes -------------------------------------------------------------------------------

    def reshape(self, x: str, shape: Sequence[int]) -> str:
        return self.node("Reshape", [x, np.asarray(list(shape), np.int64)])

    def transpose(self, x: str, perm: Sequence[int]) -> str:
        return self.node("Transpose", [x], {"perm": list(perm)})

    def flatten(self, x: str, axis: int = 1) -> str:
        return self.node("Flatten", [x], {"axis": axis})

    def concat(self, xs: Sequence[TensorLike], axis: int) -> str:
        return self.node("Concat", list(xs), {"axis": axis})

    def split(self, x: str, sizes: Sequence[int], axis: int = 0) -> tuple[str, ...]:
        out = self.node("Split", [x, np.asarray(list(sizes), np.int64)], {"axis": axis},
                        outputs=len(sizes))
        return out if isinstance(out, tuple) else (out,)

    def slice(self, x: str, starts: Sequence[int], ends: Sequence[int],
              axes: Sequence[int] | None = None, steps: Sequence[int] | None = None) -> str:
        ins: list[TensorLike | None] = [x, np.asarray(list(starts), np.int64),
                                        np.asarray(list(ends), np.int64)]
        if axes is not None or steps is not None:
            ins.append(np.asarray(list(axes if axes is not None else range(len(starts))),
                                  np.int64))
        if steps is not None:
            ins.append(np.asarray(list(steps), np.int64))
        return self.node("Slice", ins)

    def gather(self, x: TensorLike, indices: TensorLike, axis: int = 0) -> str:
        if isinstance(indices, np.ndarray | list):
            indices = self.weight(np.asarray(indices, np.int64))
        return self.node("Gather", [x, indices], {"axis": axis})

    def squeeze(self, x: str, axes: Sequence[int]) -> str:
        return self.node("Squeeze", [x, np.asarray(list(axes), np.int64)])

    def unsqueeze(self, x: str, axes: Sequence[int]) -> str:
        return self.node("Unsqueeze", [x, np.asarray(list(axes), np.int64)])


def _pair(value: int | Sequence[int]) -> tuple[int, ...]:
    if isinstance(value, int):
        return (value, value)
    return tuple(int(v) for v in value)
