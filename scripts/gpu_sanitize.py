"""Helpers of scripts/gpu-sanitize.sh (compute-sanitizer over the gpu tests, issue 12 item 5).

`probe MODE` launches one tiny Nova kernel, the control that shows the sanitizer sees Nova's
launches before its silence over the tests is trusted:
  clean  x[t] += 1 on 64 threads (must give 0 errors under every tool; exits 1 on a wrong result);
  oob    the same kernel storing 256 MiB past its 256-byte buffer (memcheck must report it);
  race   64 threads (two warps) store their id into shared memory and read the other warp's
         slot with no barrier between (racecheck must report the hazard).
The faulting modes catch Nova's error and exit 0: the sanitizer's log is what is checked.

`summary TOOL LOGDIR` reads the per-process logs compute-sanitizer wrote (--log-file
LOGDIR/TOOL.%p.log) and prints the error count and the distinct error headlines (kernel names
included), most frequent first; exit 0 when the logs report no error, 1 otherwise, 2 when the tool
refused the device or wrote no summary at all.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

ERROR_SUMMARY = re.compile(r"ERROR SUMMARY: (\d+) errors?")
RACE_SUMMARY = re.compile(r"RACECHECK SUMMARY: (\d+) hazards? displayed \((\d+) errors?")
HEADLINE = re.compile(r"^=+ (?!ERROR SUMMARY|RACECHECK SUMMARY|COMPUTE-SANITIZER|\s)(.*\S)\s*$")
AT = re.compile(r"^=+\s+at (?:0x[0-9a-f]+ in )?([^+\s(]+)")
REFUSED = ("Device not supported", "device not supported", "Target application returned an "
           "error", "Unable to find injection library")


def probe(mode: str) -> int:
    import numpy as np

    import nova
    from nova.errors import NovaError

    @nova.kernel
    def add1(x, offset):  # type: ignore[no-untyped-def]
        t = nova.thread_id(0)
        x[t + offset] += 1

    @nova.kernel
    def race(x):  # type: ignore[no-untyped-def]
        slots = nova.shared_array(64, nova.int32)
        t = nova.thread_id(0)
        slots[t] = t
        x[t] = slots[(t + 32) % 64]  # the other warp's slot, with no barrier in between

    dev = nova.get_device()
    x = nova.to_device(np.zeros(64, np.int32), dev)
    try:
        if mode == "clean":
            add1[1, 64](x, 0)
            dev.synchronize()
            ok = bool(np.all(x.numpy() == 1))
            print(f"probe clean: {'result right' if ok else 'WRONG result'}")
            return 0 if ok else 1
        if mode == "oob":
            add1[1, 64](x, 1 << 26)  # int32 elements: 256 MiB past the buffer
        elif mode == "race":
            race[1, 64](x)
        else:
            print(f"unknown probe mode {mode!r} (clean, oob or race)", file=sys.stderr)
            return 2
        dev.synchronize()
    except NovaError as exc:  # the fault memcheck stopped: expected for oob
        print(f"probe {mode}: {type(exc).__name__}: {str(exc).splitlines()[0]}")
    return 0


def summarize(tool: str, logdir: Path) -> tuple[int, int, Counter[str], list[str]]:
    """(processes with a summary, errors, headline counts, refusals) of TOOL's logs."""
    processes = errors = 0
    headlines: Counter[str] = Counter()
    refused: list[str] = []
    for log in sorted(logdir.glob(f"{tool}.*.log")):
        text = log.read_text(errors="replace")
        refused += [f"{log.name}: {r}" for r in REFUSED if r in text]
        found = [int(m.group(1)) for m in ERROR_SUMMARY.finditer(text)]
        found += [int(m.group(2)) for m in RACE_SUMMARY.finditer(text)]
        if found:
            processes += 1
            errors += max(found)  # racecheck prints both lines for the same hazards
        lines = text.splitlines()
        for i, line in enumerate(lines):
            m = HEADLINE.match(line)
            if m is None:
                continue
            headline = m.group(1)
            where = AT.match(lines[i + 1]) if i + 1 < len(lines) else None
            if where is not None:  # memcheck: "at KERNEL+0x70" on the next line
                headline += f" in {where.group(1)}"
            headlines[re.sub(r"0x[0-9a-f]+", "0x..", headline)] += 1
    return processes, errors, headlines, refused


def summary(tool: str, logdir: Path) -> int:
    processes, errors, headlines, refused = summarize(tool, logdir)
    api = sum(n for line, n in headlines.items() if line.startswith("Program hit"))
    print(f"{tool}: {processes} processes reported, {errors} errors ({api} of them CUDA API "
          "calls that returned an error: 'Program hit ...')")
    for line, count in headlines.most_common(30):
        print(f"  {count:6d} x {line}")
    for line in refused:
        print(f"  refused: {line}")
    if refused or processes == 0:
        return 2
    return 1 if errors else 0


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "probe":
        return probe(argv[1])
    if len(argv) == 3 and argv[0] == "summary":
        return summary(argv[1], Path(argv[2]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
