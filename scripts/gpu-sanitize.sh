#!/usr/bin/env bash
# compute-sanitizer over the gpu tests that launch kernels (issue 12 item 5). Run on the GPU
# machine (device tool) from the repo root with .wheelhouse carried, in one call:
#   scripts/gpu-sanitize.sh [--tools memcheck,racecheck] [--budget SECONDS] [--workers N]
#                           [TEST_PATHS...]
# For each tool: a preflight with a probe kernel (scripts/gpu_sanitize.py probe): a clean launch
# must give 0 errors and a planted fault must be reported (memcheck: a store 256 MiB past a
# buffer; racecheck: a shared-memory race), else the tool is not trusted and the tests do not run.
# Then `compute-sanitizer --tool T --target-processes all` over `pytest -m gpu` of TEST_PATHS
# (default: the runtime, kernel and lz4 tests and the nvptx/host-device unit tests), without the
# tests that fault on purpose (traps, device asserts, illegal addresses, the soak and mma
# benches), within --budget seconds per tool (default 150: both tools fit an 8-minute call).
# --workers: pytest-xdist workers (default 8; 0: one process, no xdist). Under the sanitizer
# each xdist worker starts instrumented, which on the H100 machine took longer than a 200 s
# budget before any test ran (2026-11-26): use --workers 0 with a few test paths there.
# CUDA API calls that return an error are not counted (--report-api-errors no): the runtime
# probes pointers with cuPointerGetAttribute and the error-path tests provoke invalid launches on
# purpose, which memcheck otherwise counts as errors (756 of them hid the verdict on 2026-11-26);
# every memory, race or hazard report is printed (print limit 1000).
# Per-process logs go to /tmp/nova-sanitize; the summary (errors, distinct error lines with their
# kernels, pytest's result) to $OUT/sanitize-summary.txt. Exit 0 when every tool's tests ran and
# reported 0 errors; 1 on errors or failed tests; 2 when the tool is missing, refuses the device
# (gVisor machines do, KINDS.md: ask for nvidia-h100-x1) or misses a planted fault.
set -uo pipefail
OUT=${OUT:-out}; mkdir -p "$OUT"
SUMMARY="$OUT/sanitize-summary.txt"; : > "$SUMMARY"
export PYTHONUNBUFFERED=1 NOVA_DEVICE=cuda NOVA_CACHE_DIR=/tmp/nova-cache
tools=memcheck,racecheck; budget=150; workers=8; tests=()
while [ $# -gt 0 ]; do
  case "$1" in
    --tools) tools=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    --workers) workers=$2; shift 2 ;;
    *) tests+=("$1"); shift ;;
  esac
done
[ ${#tests[@]} -gt 0 ] || tests=(tests/runtime tests/kernel tests/lz4 tests/unit/test_nvptx_exec.py
                                  tests/unit/test_host_devices.py)
say() { echo "$*" | tee -a "$SUMMARY"; }
if [ "$workers" -gt 0 ]; then parallel=(-n "$workers"); else parallel=(-p no:xdist); fi
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
if [ -z "$SAN" ]; then say "compute-sanitizer not found (PATH, /usr/local/cuda/bin)"; exit 2; fi
if [ -d .wheelhouse ]; then
  python3 -m pip install -q --no-index --find-links .wheelhouse xdsl==0.74.0 filecheck==1.0.6 \
    lit pytest-xdist hypothesis lz4 xxhash 2>&1 | grep -v -i warning | tail -2
  python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | grep -v -i warning | tail -2
fi
say "$("$SAN" --version | tail -1); $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
LOGS=/tmp/nova-sanitize; rm -rf "$LOGS"; mkdir -p "$LOGS"
# deliberate faults: traps, device asserts (the corpus' `not nova-run` programs), illegal
# addresses, CUDA error paths; the soak and mma benches are long and launch nothing new
# tests/runtime/test_bounds_check.py, the kernel-fault and real out-of-memory tests fault on
# purpose too: a memcheck run over tests/runtime and tests/kernel (2026-11-26) printed device
# asserts, an out-of-memory allocation and a missing kernel name from them
ignore=(--ignore=tests/runtime/test_gpu_faults.py --ignore=tests/runtime/test_device_cuda_errors.py
        --ignore=tests/runtime/test_assert_reports.py --ignore=tests/runtime/test_soak_bench.py
        --ignore=tests/kernel/test_mma_bench.py --ignore=tests/runtime/test_bounds_check.py)
deselect="not assert-callsite-report and not assert-fail-kernel and not assert-name-location"
deselect+=" and not assert-in-kernel and not kernel_fault and not real_out_of_memory"
deselect+=" and not host_assert and not no_kernel_named and not missing_kernel"
# nova.lz4's fault injection: a device-side assert in the compress kernel on purpose (one warp's
# 32 "Warp assert" reports in a memcheck run over tests/lz4, 2026-11-26)
deselect+=" and not fault_in_a_slot"
# automatic graphs: device-side asserts in replayed graphs on purpose
deselect+=" and not fault_in_a_replay and not fault_in_an_unwaited_replay"
status=0
for tool in ${tools//,/ }; do
  planted=$([ "$tool" = racecheck ] && echo race || echo oob)
  mkdir -p "$LOGS/probe-$tool"
  for mode in clean "$planted"; do
    "$SAN" --tool "$tool" --log-file "$LOGS/probe-$tool/$tool.$mode.%p.log" \
      python3 scripts/gpu_sanitize.py probe "$mode" >> "$LOGS/probe-$tool/stdout.txt" 2>&1
  done
  mkdir -p "$LOGS/clean-$tool" "$LOGS/planted-$tool"
  mv "$LOGS/probe-$tool/$tool.clean."*.log "$LOGS/clean-$tool/" 2>/dev/null
  mv "$LOGS/probe-$tool/$tool.$planted."*.log "$LOGS/planted-$tool/" 2>/dev/null
  python3 scripts/gpu_sanitize.py summary "$tool" "$LOGS/clean-$tool" > "$LOGS/clean.txt"
  clean=$?
  python3 scripts/gpu_sanitize.py summary "$tool" "$LOGS/planted-$tool" > "$LOGS/planted.txt"
  caught=$?
  if [ $clean -ne 0 ] || [ $caught -ne 1 ]; then
    say "$tool preflight FAILED: clean probe exit $clean (want 0), planted $planted exit $caught (want 1: reported)"
    cat "$LOGS/clean.txt" "$LOGS/planted.txt" "$LOGS/probe-$tool/stdout.txt" | tee -a "$SUMMARY"
    status=2; continue
  fi
  say "$tool preflight: clean probe 0 errors, planted $planted reported"
  start=$(date +%s)
  timeout --signal=INT --kill-after=20 "$budget" "$SAN" --tool "$tool" --target-processes all \
    --report-api-errors no --print-limit 1000 --log-file "$LOGS/$tool.%p.log" \
    python3 -m pytest -v -m gpu "${parallel[@]}" -p no:cacheprovider "${ignore[@]}" -k "$deselect" \
    "${tests[@]}" > "$LOGS/$tool-pytest.log" 2>&1
  rc=$?
  # the sanitizer's target processes outlive it when timeout kills it: a racecheck-instrumented
  # pytest left running slowed the next command's GPU work 2-4x (2026-11-26, H100)
  pkill -KILL -f -- "-m pytest -v -m gpu" 2>/dev/null && sleep 2
  say "=== $tool over ${tests[*]}: pytest exit $rc in $(( $(date +%s) - start )) s$([ $rc -eq 124 ] || [ $rc -eq 130 ] && echo " (budget of $budget s hit: partial)")"
  say "pytest: $(grep -E '(passed|failed|error)' "$LOGS/$tool-pytest.log" | tail -1)"
  grep -E "^(FAILED|ERROR)" "$LOGS/$tool-pytest.log" | head -20 | tee -a "$SUMMARY"
  python3 scripts/gpu_sanitize.py summary "$tool" "$LOGS" | tee -a "$SUMMARY"
  found=${PIPESTATUS[0]}
  [ $found -ne 0 ] && status=$(( status > found ? status : found ))
  [ $rc -ne 0 ] && [ $status -eq 0 ] && status=1
  tar czf "$OUT/$tool-logs.tgz" -C "$LOGS" . 2>/dev/null
done
say "gpu-sanitize exit $status"
exit $status
