"""The kernel image cache's entry format (nova.lang.image_cache.encode/decode): every image
survives the round trip byte for byte, and anything that is not a whole entry is refused with
ValueError, KeyError or TypeError (which `get` turns into a miss that removes the file)."""

from __future__ import annotations

import marshal

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


def _entry(record: object) -> bytes:
    """An entry of the current format around any marshal record."""
    raw = marshal.dumps(record)
    return image_cache._MAGIC + len(raw).to_bytes(8, "little") + raw


def _fields(**changes: object) -> dict[str, object]:
    data = image_cache.encode(CompiledImages(KERNEL, "ptx", None, None, b"\x7fELF"))
    record = marshal.loads(data[len(image_cache._MAGIC) + 8:])
    assert isinstance(record, dict)
    return {**record, **changes}


@pytest.mark.parametrize("damage", [
    lambda d: d[:-1],  # truncated image
    lambda d: d + b"x",  # trailing bytes
    lambda d: b"{" + d,  # no magic line
    lambda d: b"nova-kernel-images/1\n" + d[len(image_cache._MAGIC):],  # the old JSON format
    lambda d: d[:30],  # cut inside the length
    lambda d: d[:len(image_cache._MAGIC) + 8] + d[len(image_cache._MAGIC) + 9:] + b"?",  # bad
    lambda d: _entry([1, 2]),  # a record that is no dict
    lambda d: _entry(_fields(cpu_object=4)),  # an image that is no bytes
    lambda d: _entry(_fields(ptx="text")),
    lambda d: _entry(_fields(cubin_arch=90)),
    lambda d: _entry({k: v for k, v in _fields().items() if k != "cubin"}),  # a field missing
    lambda d: _entry(_fields(kernel={"name": "k"})),  # a manifest entry missing fields
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
