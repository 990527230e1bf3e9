"""Memory-bound kernels of nova.models (rows and copies) against named peers, in ONE process:

    softmax-attn   Softmax over 8x12x512 rows of 512 (the fp16 encoder layer's attention)
    layernorm      LayerNormalization over 4096 rows of 768
    ln-4096        LayerNormalization over 2048 rows of 4096 (a block per row)
    softmax-32k    Softmax over 64 rows of 32000 (longer than registers hold: the fallback)
    head-split     Slice -> Reshape -> Transpose of a [8, 512, 2304] QKV to [8, 12, 512, 64]
    head-merge     Transpose -> Reshape of [8, 12, 512, 64] to [8, 512, 768]
    gelu           exact GELU of [8, 512, 3072]

Columns (ms per call, and the effective bandwidth: bytes the op must read and write once):
`nova` (today's kernels: register-resident rows, 16-byte vector chunks), `nova scalar` (the same
graph with the previous shapes forced: rows strided over by a block with gpu.all_reduce and read
three times, one element per thread, no vectors), PyTorch eager when installed. Each result is
checked against NumPy first (rel. L2 <= 1e-5 fp32, 2e-2 fp16); a wrong result or a failing
Nova runner prints in its cell, fails the run (CHECK FAILED, exit 1, no result file).

    python bench/row_kernels.py [--device cuda] [--dtype fp16|fp32] [--rows softmax-attn,...]
                                [--seconds 0.5] [--out bench/results/row-kernels-<card>.md]
    python bench/row_kernels.py --device cpu --quick     # small shapes, to debug without a GPU
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from checks import finish, record

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import nova
import nova.models as nm
from nova.models.codegen import context as codegen_context
from nova.models.codegen import rows_resident
from nova.models.reference import run_reference


@dataclass
class Case:
    name: str
    shape: tuple[int, ...]
    build: Callable[[nm.Graph, str], str]
    """Adds the op to the graph (input name given), returns the output name."""
    torch_fn: Callable[[Any], Any]


def _split(g: nm.Graph, x: str) -> str:
    part = g.slice(x, [768], [1536], [2])  # K of the fused QKV
    return g.transpose(g.reshape(part, [-1, 512, 12, 64]), [0, 2, 1, 3])


def _merge(g: nm.Graph, x: str) -> str:
    return g.reshape(g.transpose(x, [0, 2, 1, 3]), [-1, 512, 768])


class _Functional:
    """torch.nn.functional, imported on first use (torch is an optional peer)."""

    def __getattr__(self, name: str) -> Any:
        import torch.nn.functional

        return getattr(torch.nn.functional, name)


f = _Functional()


def cases(quick: bool) -> dict[str, Case]:
    rng = np.random.default_rng(0)
    gamma768, beta768 = rng.standard_normal(768), rng.standard_normal(768)
    gamma4k, beta4k = rng.standard_normal(4096), rng.standard_normal(4096)
    b = 1 if quick else 8

    def ln(gamma: np.ndarray, beta: np.ndarray) -> Callable[[nm.Graph, str], str]:
        return lambda g, x: g.layer_norm(x, gamma.astype(np.float32), beta.astype(np.float32))

    def torch_ln(gamma: np.ndarray, beta: np.ndarray) -> Callable[[Any], Any]:
        import torch

        def run(x: Any) -> Any:
            w = torch.from_numpy(gamma).to(x.device, x.dtype)
            bias = torch.from_numpy(beta).to(x.device, x.dtype)
            return f.layer_norm(x, (x.shape[-1],), w, bias, 1e-5)
        return run

    return {
        "softmax-attn": Case("softmax-attn", (b, 12, 512, 512),
                             lambda g, x: g.softmax(x, -1), lambda x: f.softmax(x, -1)),
        "layernorm": Case("layernorm", (b * 512, 768), ln(gamma768, beta768),
                          torch_ln(gamma768, beta768)),
        "ln-4096": Case("ln-4096", (b * 256, 4096), ln(gamma4k, beta4k),
                        torch_ln(gamma4k, beta4k)),
        "softmax-32k": Case("softmax-32k", (b * 8, 32000), lambda g, x: g.softmax(x, -1),
                            lambda x: f.softmax(x, -1)),
        "head-split": Case("head-split", (b, 512, 2304), _split,
                           lambda x: x[..., 768:1536].reshape(x.shape[0], 512, 12, 64)
                           .transpose(1, 2).contiguous()),
        "head-merge": Case("head-merge", (b, 12, 512, 64), _merge,
                           lambda x: x.transpose(1, 2).reshape(x.shape[0], 512, 768)),
        "gelu": Case("gelu", (b, 512, 3072), lambda g, x: g.gelu(x), lambda x: f.gelu(x)),
    }


@contextmanager
def previous_kernels() -> Iterator[None]:
    """Generate the kernel shapes from before register-resident rows and vector chunks."""
    saved = rows_resident.ROW_MAX, codegen_context.VECTOR_BYTES
    rows_resident.ROW_MAX, codegen_context.VECTOR_BYTES = 0, 1
    try:
        yield
    finally:
        rows_resident.ROW_MAX, codegen_context.VECTOR_BYTES = saved


def _time(fn: Callable[[], Any], sync: Callable[[], None], seconds: float) -> float:
    """Milliseconds per call: 3 warm-up calls, then batches until `seconds` have passed."""
    for _ in range(3):
        fn()
    sync()
    n, total, batch = 0, 0.0, 1
    while total < seconds:
        start = time.perf_counter()
        for _ in range(batch):
            fn()
        sync()
        total += time.perf_counter() - start
        n += batch
        batch = min(batch * 2, 1000)
    return total / n * 1e3


def _rel(a: np.ndarray, b: np.ndarray) -> float:
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    return float(np.linalg.norm(a64 - b64)) / max(float(np.linalg.norm(b64)), 1e-30)


def _call(model: Any, x: Any) -> Callable[[], Any]:
    return lambda: model(x)


def run_case(case: Case, dtype: str, device: str, seconds: float) -> dict[str, Any]:
    ndtype = {"fp16": "float16", "fp32": "float32"}[dtype]
    tol = 1e-5 if dtype == "fp32" else 2e-2
    g = nm.Graph(case.name)
    x = g.input("x", case.shape)
    g.output(case.build(g, x))
    x_np = np.random.default_rng(1).standard_normal(case.shape).astype(np.float32)
    ref = np.asarray(run_reference(g, x_np))
    x_half = x_np.astype(nm.graph.numpy_dtype(ndtype))
    moved = (x_half.nbytes + ref.size * x_half.itemsize)
    if case.name == "head-split":
        moved = 2 * ref.size * x_half.itemsize  # one third of the QKV is read
    result: dict[str, Any] = {"row": case.name, "dtype": dtype, "MB": moved / 1e6}
    for column, scope in (("nova", None), ("nova scalar", previous_kernels)):
        try:
            if scope is None:
                model = nm.compile(g, device=device, dtype=ndtype)
            else:
                with scope():
                    model = nm.compile(g, device=device, dtype=ndtype)
                    model(x_half)  # specialise (generate) inside the scope
            x_dev = nova.to_device(x_half, device)
            err = _rel(model(x_dev).numpy(), ref)
            if not record(f"{case.name} {dtype} {column}: rel. error {err:.2e} <= {tol}",
                          err <= tol):
                result[column] = f"wrong: rel. error {err:.2e}"
                continue
            result[column] = _time(_call(model, x_dev), model.synchronize, seconds)
        except Exception as exc:  # Nova failing to run is a failed check
            record(f"{case.name} {dtype} {column}: {type(exc).__name__}: {exc}", False)
            result[column] = f"error: {type(exc).__name__}: {str(exc)[:100]}"
    try:
        import torch

        tdev = "cuda" if device == "cuda" else "cpu"
        xt = torch.from_numpy(x_half).to(tdev)
        sync = torch.cuda.synchronize if tdev == "cuda" else (lambda: None)
        with torch.no_grad():
            err = _rel(case.torch_fn(xt).float().cpu().numpy(), ref)
            if not record(f"{case.name} {dtype} torch eager: rel. error {err:.2e}", err <= tol):
                result["torch eager"] = f"wrong: rel. error {err:.2e}"
            else:
                result["torch eager"] = _time(lambda: case.torch_fn(xt), sync, seconds)
    except Exception as exc:
        result["torch eager"] = f"error: {type(exc).__name__}: {str(exc)[:100]}"
    return result


COLUMNS = ("nova", "nova scalar", "torch eager")


def table(results: list[dict[str, Any]]) -> str:
    head = "| row | dtype | MB moved | " + " | ".join(
        f"{c} ms (GB/s)" for c in COLUMNS) + " |"
    lines = [head, "|" + "---|" * (3 + len(COLUMNS))]
    for r in results:
        cells = []
        for c in COLUMNS:
            v = r.get(c, "")
            cells.append(f"{v:.4f} ({r['MB'] / v:.0f})" if isinstance(v, float) else str(v))
        lines.append(f"| {r['row']} | {r['dtype']} | {r['MB']:.1f} | " + " | ".join(cells)
                     + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda")
    p.add_argument("--dtype", default="fp16", choices=["fp16", "fp32"])
    p.add_argument("--rows", default="")
    p.add_argument("--seconds", type=float, default=0.5)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--out")
    args = p.parse_args(argv)
    all_cases = cases(args.quick)
    names = [n for n in args.rows.split(",") if n] or list(all_cases)
    results = [run_case(all_cases[n], args.dtype, args.device, args.seconds) for n in names]
    text = table(results)
    print(text)
    if finish():
        return 1  # no result file for wrong results
    if args.out:
        Path(args.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
