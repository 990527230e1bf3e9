"""The CI slice of the fuzzer (fixed seeds, a bounded number of inputs per target: well under
a minute on 2 cores), the oracle's own checks, and the replay of every saved finding.

The long run is scripts/fuzz.sh (tests/fuzz/runner.py)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from tests.fuzz import runner
from tests.fuzz.runner import Input, Outcome, generate, run_all, saved_findings

pytestmark = pytest.mark.fuzz


def _findings(outcomes: list[tuple[Input, Outcome]]) -> list[str]:
    return [f"{o.status} ({i.note}): {o.detail}" for i, o in outcomes if o.is_finding]


@pytest.mark.parametrize(("target", "seed", "count"), [("mlir", 101, 300), ("bundle", 102, 200),
                                                       ("kernel", 103, 200)])
def test_fuzz_slice(target: str, seed: int, count: int) -> None:
    outcomes = list(run_all(generate(seed, count, (target,)), jobs=2, timeout=60))
    assert len(outcomes) == count
    assert not _findings(outcomes), "\n".join(_findings(outcomes))
    statuses = {o.status for _, o in outcomes}
    # The mutants reach both sides of the oracle (not all rejected up front, not all accepted).
    assert "diagnostic" in statuses, statuses
    if target != "bundle":  # most damaged bundles are refused; resealed no-op edits pass
        assert "ok" in statuses, statuses


def test_generate_is_deterministic() -> None:
    first = [(i.target, i.data) for i in generate(7, 30)]
    assert first == [(i.target, i.data) for i in generate(7, 30)]
    assert {t for t, _ in first} == {"mlir", "bundle", "kernel"}


# --- the oracle -----------------------------------------------------------------------------

def _bundle_input() -> list[Input]:
    return [Input("bundle", b"\x7fELF", "oracle check")]


def test_oracle_flags_internal_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(data: bytes) -> None:
        raise KeyError("boom")

    monkeypatch.setattr(runner, "_run_bundle", broken)
    [(_, outcome)] = run_all(iter(_bundle_input()), jobs=1, timeout=60)
    assert outcome.status == "internal" and "KeyError" in outcome.detail, outcome


def test_oracle_flags_signals(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "_run_bundle",
                        lambda data: os.kill(os.getpid(), signal.SIGSEGV))
    [(_, outcome)] = run_all(iter(_bundle_input()), jobs=1, timeout=60)
    assert outcome.status == "signal" and outcome.detail.startswith("SIGSEGV"), outcome
    assert "Fatal Python error: Segmentation fault" in outcome.detail, outcome


def test_oracle_flags_hangs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "_run_bundle", lambda data: time.sleep(60))
    start = time.monotonic()
    [(_, outcome)] = run_all(iter(_bundle_input()), jobs=1, timeout=1)
    assert outcome.status == "hang" and time.monotonic() - start < 30


def test_oracle_accepts_diagnostics() -> None:
    outcomes = run_all(iter([*_bundle_input(), Input("mlir", b"func.func @f(", "oracle"),
                             Input("kernel", b"import nova\n@nova.kernel\ndef k(out, a, n):\n"
                                   b"    with open('x'):\n        pass\n", "oracle")]),
                       jobs=2, timeout=60)
    assert sorted(o.status for _, o in outcomes) == ["diagnostic"] * 3


def test_findings_are_saved_and_found(tmp_path: Path) -> None:
    item = Input("mlir", b"func.func @x() {", "note")
    path = runner.save_finding(item, Outcome("internal", "KeyError: 1"), tmp_path)
    assert path.read_bytes() == item.data
    assert "KeyError" in path.with_suffix(".mlir.txt").read_text()
    assert saved_findings(tmp_path) == [("mlir", path)]


# --- every finding so far, replayed ---------------------------------------------------------

FINDINGS = saved_findings()


@pytest.mark.parametrize(("target", "path"), FINDINGS, ids=[p.name for _, p in FINDINGS])
def test_saved_finding(target: str, path: Path) -> None:
    """A saved finding (its note in the .txt beside it) now gives a diagnostic or succeeds."""
    [(_, outcome)] = run_all(iter([Input(target, path.read_bytes(), path.name)]), jobs=1,
                             timeout=60)
    assert not outcome.is_finding, f"{path.name}: {outcome.status}: {outcome.detail}"


# --- the fixes for findings, checked directly -----------------------------------------------

def test_scalar_conversion_errors_are_diagnostics() -> None:
    """nova.float64(a_function) raised NumPy's TypeError (finding kernel-internal-2f1ba981178c);
    now a NovaError that is still a TypeError/ValueError/OverflowError."""
    import nova
    from nova.errors import ArgumentError, ScalarConversionError

    for value, old in ((print, TypeError), ("s", ValueError), (300, OverflowError)):
        with pytest.raises(ScalarConversionError) as info:
            nova.int8(value)
        assert isinstance(info.value, ArgumentError | old)
        assert str(info.value).startswith("nova.int8() cannot convert ")
    assert nova.int8(3) == 3


def test_non_integer_dimension_is_located() -> None:
    """nova.thread_id(0j) indexed a tuple with a complex (finding kernel-internal-ebbef0e778d5)."""
    outcomes = run_all(iter([Input("kernel", f"import nova\n@nova.kernel\ndef k(out, a, n):\n"
                                   f"    out[0] = nova.thread_id({v})\n".encode(), v)
                             for v in ("0j", "0.0", "True", "1")]), jobs=2, timeout=60)
    assert {i.note: o.status for i, o in outcomes} == {"0j": "diagnostic", "0.0": "diagnostic",
                                                       "True": "diagnostic", "1": "ok"}


def test_constant_comparison_of_non_numbers_is_located() -> None:
    """`min < 10` was folded in Python and raised a TypeError (kernel-internal-a3f185c6c477)."""
    import nova
    from nova.lang import KernelTypeError

    source = ("import nova\n\n\n@nova.kernel\ndef k(out, a, n):\n    if min < 10:\n"
              "        out[0] = 1.0\n")
    [(_, outcome)] = run_all(iter([Input("kernel", source.encode(), "min < 10")]), jobs=1,
                             timeout=60)
    assert outcome.status == "diagnostic" and "cannot compare these constants" in outcome.detail
    assert issubclass(KernelTypeError, nova.errors.NovaError)


@pytest.mark.parametrize(("expr", "status"), [("-2**63**64", "diagnostic"),
                                              ("1 << 10**12", "diagnostic"),
                                              ("2**62 // 2**62", "ok"), ("(1 << 100) >> 100", "ok"),
                                              ("(-1)**10**12", "ok")])
def test_huge_constant_folds_are_refused(expr: str, status: str) -> None:
    """Folding 2 ** 63 ** 64 hung (finding kernel-hang-fb6fea0b23e6); now a located error."""
    source = f"import nova\n\n\n@nova.kernel\ndef k(out, a, n):\n    out[0] = {expr}\n"
    [(_, outcome)] = run_all(iter([Input("kernel", source.encode(), expr)]), jobs=1, timeout=20)
    assert outcome.status == status, outcome
    if status == "diagnostic":
        assert "constant expression fails: a" in outcome.detail, outcome
