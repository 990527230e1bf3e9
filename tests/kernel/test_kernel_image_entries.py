"""The kernel image cache's entry format (nova.lang.image_cache.encode/decode): every image
survives the round trip byte for byte, and anything that is not a whole entry is refused with
ValueError (which `get` turns into a miss that removes the file)."""

from __future__ import annotations

import pytest

from nova import config
from nova.bundle.format import Kernel, KernelParam, TypeSpec
from nova.lang import image_cache
from nova.lang.image_cache import CompiledImages
from nova.runtime.digested import write_digested

KERNEL = Kernel("axpy", (TypeSpec("memref", "f32", "memref<?xf32>", (-1,)),
                         TypeSpec("scalar", "f32", "f32")),
                (KernelParam("ptr", 8, 0), KernelParam("float", 4, 1, 4)), 128, True)


@pytest.mark.parametrize("images", [
    CompiledImages(KERNEL, "// ptx \u00e9\n.entry axpy", b"\x00cubin\n\xff", "sm_90",
                   b"\x7fELF\n" + bytes(range(256))),
    CompiledImages(KERNEL, None, None, None, b"\x7fELF"),
    CompiledImages(KERNEL, "ptx", None, None, None),
    CompiledImages(KERNEL, "", b"", "sm_80", b""),
])
def test_entries_round_trip(images: CompiledImages) -> None:
    assert image_cache.decode(image_cache.encode(images)) == images


@pytest.mark.parametrize("damage", [
    lambda d: d[:-1],  # truncated image
    lambda d: d + b"x",  # trailing bytes
    lambda d: b"{" + d,  # no magic line (an entry of the old JSON format)
    lambda d: d[:30],  # cut inside the JSON line
    lambda d: d.replace(b'"cpu_object": 4', b'"cpu_object": "4"'),  # a size that is no int
    lambda d: d.replace(b'"cpu_object": 4', b'"cpu_object": -4'),
])
def test_damaged_entries_are_refused(damage: object) -> None:
    data = image_cache.encode(CompiledImages(KERNEL, "ptx", None, None, b"\x7fELF"))
    assert callable(damage)
    with pytest.raises((ValueError, KeyError, TypeError)):
        image_cache.decode(damage(data))


def test_a_malformed_entry_is_a_miss_and_is_removed(tmp_path) -> None:
    with config.scoped(cache_dir=tmp_path, cache_enabled=True):
        good = CompiledImages(KERNEL, None, None, None, b"\x7fELF")
        image_cache.put("ab" * 32, good)
        assert image_cache.get("ab" * 32) == good
        path = image_cache._path("cd" * 32)
        write_digested(path, image_cache.encode(good)[:-2])  # digest fine, content truncated
        assert image_cache.get("cd" * 32) is None
        assert not (tmp_path / "kernels" / "cd").exists() or not list(
            (tmp_path / "kernels" / "cd").iterdir())
