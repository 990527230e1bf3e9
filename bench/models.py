"""nova.models against PyTorch eager, torch.compile (default and "reduce-overhead") and, when
installed, IREE — in ONE process, on the issue's rows (weights from a fixed seed):

    mlp-b1     MLP 1024->4096->4096->1024 with GELU, batch 1     (fp16, fp32)
    mlp-b4096  the same MLP, batch 4096                         (fp16, fp32)
    conv-b32   Conv3x3 64->64 + BN + ReLU + MaxPool, 32x64x56x56 (fp16, fp32)
    enc-b8     pre-LN encoder layer d=768, 12 heads, seq 512, batch 8 (fp16, fp32)

Every row first checks each runner's output against PyTorch eager (rel. L2 <= 1e-3 fp32 with TF32
off, <= 2e-2 fp16), then times it: warm-up, then enough iterations for >= --seconds, the device
synchronised at the end; the time per forward is reported in milliseconds. Nova is timed twice:
`model(x)` on device buffers (one Python call per forward) and a captured forward
(`model.capture(x).launch()`, one CUDA graph per forward). Prints a table (and writes it with
--out). A peer that fails to run prints its error in its cell; a runner whose output misses the
tolerance (Nova's call or graph, or a peer), or a Nova that fails to run, is a failed check
(bench/checks.py): FAIL in the table, exit 1, no --out file.

    python bench/models.py [--device cuda] [--rows mlp-b1,enc-b8] [--dtypes fp16,fp32]
                           [--seconds 1.0] [--gemm auto|nova|library]
                           [--conv auto|nova|library] [--attention MODE[,MODE...]]
                           [--out bench/results/models-<card>.md]

--gemm is Nova's GEMM backend policy (docs/models.md "Libraries"): `auto` (default) gives large
GEMMs to cuBLASLt, `nova` keeps every GEMM a generated kernel, `library` forces cuBLASLt; the
`gemm` column says where the row's MatMuls ran (backend x count). --conv is the same for
convolutions (`auto`: cuDNN when it loads; the `conv` column). --attention fused runs each
softmax(Q K^T) V as one flash-attention kernel, `unfused` as QK^T GEMM, softmax and PV GEMM (the
A/B baseline), `auto` (default) fuses where the fused kernel wins (passes/attention.py); the
`attention` column says which kernel each pattern got. `fused-wmma` / `fused-mma` pick the
tensor-core kernel (WMMA or FlashAttention-2 style mma.sync, the default), `fused-mma-BMxBN`
the mma kernel's tile (BM 64/128, BN 32/64). A comma-separated list runs one table row per mode
(the PyTorch peers once per row and dtype), e.g. to sweep the tiles in one run:
    python bench/models.py --rows enc-b8 --dtypes fp16 \
        --attention fused-wmma,fused-mma-64x64,fused-mma-128x64,fused-mma-64x32,fused-mma-128x32
    python bench/models.py --device cpu --quick      # small shapes, to debug without a GPU
--peers eager (a comma-separated subset of eager, default, reduce-overhead) limits the PyTorch
runners (torch.compile on the cpu takes minutes).
"""

from __future__ import annotations

import argparse
import math
import platform
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/checks.py, also when imported
from checks import finish, record

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import nova
import nova.models as nm
from nova.models import examples
from nova.models.passes.attention import check_attention_mode


@dataclass
class Row:
    name: str
    example: examples.Example
    shape: tuple[int, ...]
    torch_fn: Callable[..., Any]  # (params as tensors, x) -> y


def _torch_mlp(p: dict[str, Any], x: Any) -> Any:
    import torch.nn.functional as F

    n = len([k for k in p if k.startswith("w")])
    for i in range(n):
        x = F.linear(x, p[f"w{i}"], p[f"b{i}"])
        if i < n - 1:
            x = F.gelu(x)
    return x


def _torch_conv(p: dict[str, Any], x: Any) -> Any:
    import torch.nn.functional as F

    y = F.conv2d(x, p["w"], p["bias"], padding=1)
    y = F.batch_norm(y, p["bn_mean"], p["bn_var"], p["bn_scale"], p["bn_shift"], False, 0.0,
                     1e-5)
    return F.max_pool2d(F.relu(y), 2)


def _torch_encoder(heads: int) -> Callable[..., Any]:
    def run(p: dict[str, Any], x: Any) -> Any:
        import torch
        import torch.nn.functional as F

        b, s, d = x.shape
        dh = d // heads
        h = F.layer_norm(x, (d,), p["ln1_s"], p["ln1_b"])
        q, k, v = F.linear(h, p["wqkv"], p["bqkv"]).split(d, dim=2)
        q, k, v = (t.reshape(b, s, heads, dh).transpose(1, 2) for t in (q, k, v))
        att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(dh), dim=-1) @ v
        x = x + F.linear(att.transpose(1, 2).reshape(b, s, d), p["wo"], p["bo"])
        f = F.linear(F.gelu(F.linear(F.layer_norm(x, (d,), p["ln2_s"], p["ln2_b"]), p["w1"],
                                     p["b1"])), p["w2"], p["b2"])
        return x + f
    return run


def rows(quick: bool) -> dict[str, Row]:
    if quick:
        mlp = examples.mlp((64, 256, 256, 64))
        return {
            "mlp-b1": Row("mlp-b1", mlp, (1, 64), _torch_mlp),
            "mlp-b4096": Row("mlp-b4096", mlp, (256, 64), _torch_mlp),
            "conv-b32": Row("conv-b32", examples.conv_block((8, 8)), (2, 8, 16, 16),
                            _torch_conv),
            "enc-b8": Row("enc-b8", examples.encoder_layer(64, 4, 256), (2, 32, 64),
                          _torch_encoder(4)),
        }
    mlp = examples.mlp((1024, 4096, 4096, 1024))
    return {
        "mlp-b1": Row("mlp-b1", mlp, (1, 1024), _torch_mlp),
        "mlp-b4096": Row("mlp-b4096", mlp, (4096, 1024), _torch_mlp),
        "conv-b32": Row("conv-b32", examples.conv_block((64, 64)), (32, 64, 56, 56),
                        _torch_conv),
        "enc-b8": Row("enc-b8", examples.encoder_layer(768, 12, 3072), (8, 512, 768),
                      _torch_encoder(12)),
    }


def _time(fn: Callable[[], Any], sync: Callable[[], None], seconds: float) -> float:
    """Milliseconds per call: 3 warm-up calls, then batches until `seconds` have passed."""
    for _ in range(3):
        fn()
    sync()
    n, total = 0, 0.0
    batch = 1
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
    return float(np.linalg.norm(a64 - b64) / max(np.linalg.norm(b64), 1e-30))


PEERS = ("eager", "default", "reduce-overhead")
"""The PyTorch runners: eager and torch.compile's two modes."""


def run_row(row: Row, dtype: str, device: str, seconds: float,
            gemm: str = "auto", conv: str = "auto", attention: str = "auto",
            peers: tuple[str, ...] = PEERS) -> dict[str, Any]:
    import torch

    tdev = "cuda" if device == "cuda" else "cpu"
    tdtype = {"fp16": torch.float16, "fp32": torch.float32}[dtype]
    ndtype = {"fp16": "float16", "fp32": "float32"}[dtype]
    tol = 1e-3 if dtype == "fp32" else 2e-2
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal(row.shape).astype(np.float32)
    params = {k: torch.from_numpy(v).to(tdev, tdtype) for k, v in row.example.params.items()}
    x_t = torch.from_numpy(x_np).to(tdev, tdtype)
    sync_t = torch.cuda.synchronize if tdev == "cuda" else (lambda: None)
    result: dict[str, Any] = {"row": row.name, "dtype": dtype, "tol": tol}
    with torch.no_grad():
        ref = row.torch_fn(params, x_t).float().cpu().numpy()
        runners: dict[str, Callable[[], Any]] = {}
        if "eager" in peers:
            runners["eager"] = lambda: row.torch_fn(params, x_t)
        for mode in (m for m in ("default", "reduce-overhead") if m in peers):
            torch._dynamo.reset()
            compiled = torch.compile(row.torch_fn, mode=mode)
            runners[f"torch.compile {mode}"] = (lambda c=compiled: c(params, x_t))
        for name, fn in runners.items():
            try:
                err = _rel(fn().float().cpu().numpy(), ref)
                result[name] = _time(fn, sync_t, seconds)
                result[name + " err"] = err
                record(f"{row.name} {dtype} {name}: rel. error {err:.1e} > {tol}", err <= tol)
            except Exception as exc:  # a failing peer is reported, not fatal
                result[name] = f"error: {type(exc).__name__}: {str(exc)[:80]}"
    try:
        start = time.perf_counter()
        model = nm.compile(row.example.graph, device=device, dtype=ndtype, gemm=gemm,
                           conv=conv, attention=attention)
        x_dev = nova.to_device(x_np.astype(nm.graph.numpy_dtype(ndtype)), device)
        out = model(x_dev)
        model.synchronize()
        result["nova compile s"] = time.perf_counter() - start
        err = _rel(out.numpy(), ref)
        result["nova err"] = err
        result["nova ok"] = record(f"{row.name} {dtype} nova: rel. error {err:.1e} > {tol}",
                                   err <= tol)
        result["nova"] = _time(lambda: model(x_dev), model.synchronize, seconds)
        captured = model.capture(x_dev)
        captured.launch()
        model.device.synchronize()
        result["nova graph err"] = _rel(captured.outputs[0].numpy(), ref)
        result["nova graph"] = _time(captured.launch, model.device.synchronize, seconds)
        graph_err = max(result["nova graph err"],  # after the timed replays too
                        _rel(captured.outputs[0].numpy(), ref))
        result["nova ok"] &= record(f"{row.name} {dtype} nova graph: rel. error "
                                    f"{graph_err:.1e} > {tol}", graph_err <= tol)
        (spec,) = model._cache.values()
        result["kernels"] = len(spec.lowered.plan.kernels)
        result["gemm"] = gemm_summary(spec.lowered.program.gemm)
        result["conv"] = gemm_summary(spec.lowered.program.conv)
        result["attention"] = attention_summary(spec.lowered.program.attention)
    except Exception as exc:
        traceback.print_exc()
        result["nova"] = f"FAIL: {type(exc).__name__}: {str(exc)[:120]}"
        record(f"{row.name} {dtype} nova: {type(exc).__name__}: {exc}", False)
    try:
        import iree.runtime  # noqa: F401
        result["iree"] = "installed, not wired up in this script yet"
    except ImportError:
        result["iree"] = "not installed"
    return result


def gemm_summary(choices: list[Any]) -> str:
    """Where a row's MatMuls (or Convs, or attention patterns) ran, e.g. `cublaslt x4` or
    `nova x1, cublaslt x3` (`fused-wmma x1`)."""
    counts: dict[str, int] = {}
    for choice in choices:
        counts[choice.backend] = counts.get(choice.backend, 0) + 1
    return ", ".join(f"{name} x{n}" for name, n in sorted(counts.items())) or "-"


def attention_summary(choices: list[Any]) -> str:
    """gemm_summary for attention patterns, the fused-mma tile named: `fused-mma 64x64 x1`."""
    counts: dict[str, int] = {}
    for choice in choices:
        tile = getattr(choice, "tile", None)
        name = choice.backend + (f" {tile[0]}x{tile[1]}" if tile else "")
        counts[name] = counts.get(name, 0) + 1
    return ", ".join(f"{name} x{n}" for name, n in sorted(counts.items())) or "-"


COLUMNS = ["nova", "nova graph", "eager", "torch.compile default",
           "torch.compile reduce-overhead"]


def table(results: list[dict[str, Any]]) -> str:
    head = ["row", "dtype", "steps", "gemm", "conv", "attention", *[c + " ms" for c in COLUMNS],
            "nova best / best peer", "nova err"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in results:
        cells = [r["row"], r["dtype"], str(r.get("kernels", "-")), str(r.get("gemm", "-")),
                 str(r.get("conv", "-")),
                 str(r.get("attention", "-"))]
        for c in COLUMNS:
            v = r.get(c, "-")
            wrong = r.get(c + " err", 0.0) > r["tol"]
            cells.append((f"{v:.4f}" if isinstance(v, float) else str(v))
                         + (" (FAIL)" if wrong else ""))
        nova = [r[c] for c in ("nova", "nova graph") if isinstance(r.get(c), float)]
        peers = [r[c] for c in COLUMNS[2:] if isinstance(r.get(c), float)]
        cells.append(f"{min(peers) / min(nova):.2f}x" if nova and peers else "-")
        err = r.get("nova err")
        cells.append(f"{err:.1e}{'' if r.get('nova ok') else ' (FAIL)'}"
                     if isinstance(err, float) else "-")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--rows", default="mlp-b1,mlp-b4096,conv-b32,enc-b8")
    ap.add_argument("--dtypes", default="fp16,fp32")
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--quick", action="store_true", help="small shapes (cpu debugging)")
    ap.add_argument("--gemm", default="auto", choices=("auto", "nova", "library"),
                    help="Nova's GEMM backend policy")
    ap.add_argument("--conv", default="auto", choices=("auto", "nova", "library"),
                    help="Nova's convolution backend policy")
    ap.add_argument("--attention", default="auto",
                    help="comma-separated attention modes, one table row each (auto, fused, "
                         "unfused, fused-wmma, fused-mma, fused-mma-BMxBN)")
    ap.add_argument("--peers", default=",".join(PEERS),
                    help="PyTorch runners: a comma-separated subset of " + ", ".join(PEERS))
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    peers = tuple(p for p in args.peers.split(",") if p)
    if not set(peers) <= set(PEERS):
        ap.error(f"--peers: expected a subset of {', '.join(PEERS)}, got {args.peers!r}")
    modes = args.attention.split(",")
    for mode in modes:
        try:
            check_attention_mode(mode)
        except nm.ModelError as exc:
            ap.error(f"--attention: {exc}")
    all_rows = rows(args.quick)
    results = []
    for name in args.rows.split(","):
        for dtype in args.dtypes.split(","):
            first: dict[str, Any] | None = None
            for mode in modes:
                print(f"== {name} {dtype} attention={mode}", flush=True)
                # the peers run once per row and dtype; later modes reuse their times
                result = run_row(all_rows[name], dtype, args.device, args.seconds, args.gemm,
                                 args.conv, mode, peers if first is None else ())
                if first is None:
                    first = result
                else:
                    result.update({k: v for k, v in first.items()
                                   if k.startswith(("eager", "torch.compile"))})
                results.append(result)
                print(results[-1], flush=True)
    card = nova.get_device(args.device).name
    import torch

    header = (f"# nova.models benchmark\n\n{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, device "
              f"{args.device} ({card}), torch {torch.__version__}, python "
              f"{platform.python_version()}\n\ncommand: python bench/models.py "
              f"{' '.join(argv if argv is not None else sys.argv[1:])}\n\n"
              "Times are ms per forward (lower is better); 'nova best / best peer' > 1 means "
              "Nova is faster than the fastest PyTorch runner.\n\n")
    text = header + table(results) + "\n"
    print(text)
    if finish():
        print("FAILED: a runner's output misses the tolerance or Nova failed to run (above); "
              "no result file written")
        return 1
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
