"""`nova.lang` imports the intrinsics and `mma` on first use (a cached kernel's first call never
needs them): every name it exported before is still there, `__all__` lists the intrinsics
exactly, star imports work, and a fresh `import nova.lang` loads neither module."""

from __future__ import annotations

import os
import subprocess
import sys

import nova
import nova.lang
from nova.lang import intrinsics


def test_the_spelled_out_intrinsic_names_are_the_intrinsics() -> None:
    assert nova.lang._INTRINSIC_NAMES == intrinsics.INTRINSIC_NAMES
    assert set(intrinsics.INTRINSIC_NAMES) <= set(nova.lang.__all__)


def test_every_exported_name_resolves_to_its_object() -> None:
    for name in nova.lang.__all__:
        assert getattr(nova.lang, name) is not None
    for name in (*intrinsics.INTRINSIC_NAMES, "WARP_SIZE", "KernelCallError", "INTRINSIC_NAMES",
                 "intrinsic_name"):
        assert getattr(nova.lang, name) is getattr(intrinsics, name)
        assert getattr(nova, name, None) in (None, getattr(intrinsics, name))
    assert nova.lang.mma is sys.modules["nova.lang.mma"]
    assert nova.mma is nova.lang.mma
    assert nova.global_id is intrinsics.global_id


def test_unknown_names_raise_attribute_error() -> None:
    try:
        nova.lang.no_such_thing  # noqa: B018
    except AttributeError as exc:
        assert "no_such_thing" in str(exc)
    else:
        raise AssertionError("expected AttributeError")


def test_star_import_and_a_fresh_import() -> None:
    code = ("import sys\n"
            "import nova.lang\n"
            "print('nova.lang.intrinsics' in sys.modules, 'nova.lang.mma' in sys.modules)\n"
            "from nova.lang import *\n"
            "print(global_id.__name__, WARP_SIZE, mma.__name__)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["False False", "global_id 32 nova.lang.mma"]
