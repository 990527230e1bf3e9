"""Interleaved A/B of compile time and tool start-up between two Nova source trees, under the same
machine load: the method of bench/results/compile_time-2026-11-26.md (whose first runs used
throw-away copies of this script). Rounds alternate the order (base, head), (head, base), ... so a
load drift hits both sides alike; each run is a fresh process, and every result is verified.

    python scripts/ab_interleaved.py compile ROUNDS --base DIR --head DIR
        bench/compile_time.py's `run_once` (emit nova, an empty compile cache each time; its
        bundle run on the cpu device against NumPy by the same tree): median stage times, import,
        compile call, process wall and CPU per side.
    python scripts/ab_interleaved.py tools ROUNDS --base DIR --head DIR [--program FILE]
        `nova-translate FILE -o OUT` and `nova-run FILE --device cpu` with NOVA_CACHE=0: median
        wall and CPU (user + system of the process) per side; nova-run's output must be the
        same on both sides and its exit status 0.

DIR is a source tree's `src` directory (e.g. a `git archive` of the base commit, unpacked).
Exit 1 when a run's result is wrong.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import compile_time  # noqa: E402  (bench/compile_time.py: run_once, PROGRAM)


def _with_src(src: Path) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    for name in ("NOVA_DUMP_DIR", "NOVA_OVERRIDE_DIR"):
        env.pop(name, None)
    return env


def _order(rounds: int) -> list[str]:
    return [side for r in range(rounds) for side in (("base", "head") if r % 2 == 0
                                                     else ("head", "base"))]


def ab_compile(rounds: int, trees: dict[str, Path]) -> int:
    reports: dict[str, list[dict]] = {"base": [], "head": []}
    with tempfile.TemporaryDirectory(prefix="nova-ab-") as tmp:
        source = Path(tmp) / "program.mlir"
        source.write_text(compile_time.PROGRAM)
        for i, side in enumerate(_order(rounds)):
            saved = os.environ.get("PYTHONPATH")
            os.environ["PYTHONPATH"] = str(trees[side])  # run_once's child inherits it
            try:
                reports[side].append(compile_time.run_once(source, "nova",
                                                           Path(tmp) / f"cache-{i}"))
            finally:
                if saved is None:
                    os.environ.pop("PYTHONPATH")
                else:
                    os.environ["PYTHONPATH"] = saved
    results = {side: compile_time.summarize(r) for side, r in reports.items()}
    compile_time.print_table(results, rounds)
    wrong = [side for side, r in reports.items() if any(x["verified"] is not True for x in r)]
    for side in wrong:
        print(f"FAILED: {side}: a compiled bundle computes a wrong result (or failed to compile)")
    return 1 if wrong else 0


Run = subprocess.CompletedProcess[str]


def _timed(argv: list[str], env: dict[str, str]) -> tuple[float, float, Run]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall * 1e3, cpu * 1e3, done


def ab_tools(rounds: int, trees: dict[str, Path], program: Path) -> int:
    samples: dict[tuple[str, str], list[tuple[float, float]]] = {}
    outputs: dict[str, set[str]] = {"base": set(), "head": set()}
    failures: list[str] = []
    with tempfile.TemporaryDirectory(prefix="nova-ab-") as tmp:
        for side in _order(rounds):
            env = {**_with_src(trees[side]), "NOVA_CACHE": "0"}
            commands = {
                "nova-translate": [sys.executable, "-m", "nova.cli.translate", str(program),
                                   "-o", str(Path(tmp) / "ab.nova")],
                "nova-run": [sys.executable, "-m", "nova.cli.run", str(program), "--device",
                             "cpu"],
            }
            for tool, argv in commands.items():
                wall, cpu, done = _timed(argv, env)
                samples.setdefault((tool, side), []).append((wall, cpu))
                if done.returncode != 0:
                    failures.append(f"{side} {tool}: exit {done.returncode}: "
                                    f"{done.stderr.strip()[-200:]}")
                if tool == "nova-run":  # memref prints name their address: not compared
                    outputs[side].add(re.sub(r"base@ = 0x[0-9a-f]+", "base@ = ..", done.stdout))
    print(f"tools, cold (NOVA_CACHE=0), {rounds} interleaved runs each: median wall / CPU ms")
    for tool in ("nova-translate", "nova-run"):
        cells = []
        for side in ("base", "head"):
            walls, cpus = zip(*samples[(tool, side)], strict=True)
            cells.append(f"{side} {statistics.median(walls):7.0f} / {statistics.median(cpus):5.0f}")
        print(f"  {tool:<15} " + "   ".join(cells))
    if len(outputs["base"] | outputs["head"]) != 1:
        failures.append("nova-run printed different outputs across runs or sides")
    for line in failures:
        print(f"FAILED: {line}")
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("compile", "tools"))
    parser.add_argument("rounds", type=int)
    parser.add_argument("--base", type=Path, required=True, help="the base tree's src directory")
    parser.add_argument("--head", type=Path, default=ROOT / "src",
                        help="the head tree's src directory (default: this checkout's)")
    parser.add_argument("--program", type=Path, default=ROOT / "examples" / "vecadd.mlir")
    args = parser.parse_args(argv)
    trees = {"base": args.base.resolve(), "head": args.head.resolve()}
    if args.what == "compile":
        return ab_compile(args.rounds, trees)
    return ab_tools(args.rounds, trees, args.program.resolve())


if __name__ == "__main__":
    sys.exit(main())
