"""nova.records: Records behave as the frozen dataclasses they replace on the cold-start paths
(repr, equality, hashing, immutability, pickling, copying, `_replace`, `as_dict`), MutableRecords
as plain dataclasses; checked side by side with real dataclasses of the same fields."""

from __future__ import annotations

import copy
import dataclasses
import json
import pickle
from dataclasses import dataclass, field

import pytest

from nova.records import MutableRecord, Record, as_dict


class Point(Record):
    """A frozen Record with a default."""

    __match_args__ = ("x", "y", "tag")
    _fields = __match_args__
    x: int
    y: int
    tag: str

    def __init__(self, x: int, y: int, tag: str = "p") -> None:
        object.__setattr__(self, "x", x)
        object.__setattr__(self, "y", y)
        object.__setattr__(self, "tag", tag)


@dataclass(frozen=True)
class DPoint:
    x: int
    y: int
    tag: str = "p"


class Cell(MutableRecord):
    """A mutable Record with a field left out of the repr."""

    __match_args__ = ("value", "hidden")
    _fields = __match_args__
    _repr_fields = ("value",)

    def __init__(self, value: int, hidden: str = "") -> None:
        self.value = value
        self.hidden = hidden


@dataclass
class DCell:
    value: int
    hidden: str = field(default="", repr=False)


class Line(Record):
    __match_args__ = ("a", "b", "notes")
    _fields = __match_args__

    def __init__(self, a: Point, b: Point, notes: dict[str, str]) -> None:
        object.__setattr__(self, "a", a)
        object.__setattr__(self, "b", b)
        object.__setattr__(self, "notes", notes)


def test_frozen_records_behave_as_frozen_dataclasses() -> None:
    r, d = Point(1, 2), DPoint(1, 2)
    assert repr(r).replace("Point", "DPoint") == repr(d)
    assert r == Point(1, 2, "p") and r != Point(1, 3) and hash(r) == hash(Point(1, 2))
    assert (r == d) is False and r.__eq__(d) is NotImplemented  # other classes never compare
    assert hash(r) == hash(d)  # the same field tuple
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'x'"):
        r.x = 5  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot delete field 'y'"):
        del r.y  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(r)) == r and copy.deepcopy(r) == r and copy.copy(r) == r
    assert r._replace(y=7) == Point(1, 7) and r == Point(1, 2)
    with pytest.raises(TypeError, match="no fields"):
        r._replace(z=1)
    match r:
        case Point(1, y, tag):
            assert (y, tag) == (2, "p")
        case _:
            pytest.fail("__match_args__ must list the fields")


def test_mutable_records_behave_as_dataclasses() -> None:
    r, d = Cell(3, "secret"), DCell(3, "secret")
    assert repr(r).replace("Cell", "DCell") == repr(d)
    assert r == Cell(3, "secret") and r != Cell(3, "other")
    with pytest.raises(TypeError):
        hash(r)
    with pytest.raises(TypeError):
        hash(d)
    r.value = 4
    assert r.value == 4 and pickle.loads(pickle.dumps(r)) == r


def test_as_dict_is_asdict_for_records() -> None:
    line = Line(Point(1, 2), Point(3, 4, "q"), {"k": "v"})
    out = as_dict(line)
    assert out == {"a": {"x": 1, "y": 2, "tag": "p"}, "b": {"x": 3, "y": 4, "tag": "q"},
                   "notes": {"k": "v"}}
    assert out["notes"] is not line.notes  # a copy, as asdict makes
    assert as_dict((Point(0, 0),)) == ({"x": 0, "y": 0, "tag": "p"},)
    assert as_dict([1, "a", None]) == [1, "a", None]


def test_the_bundle_manifest_json_is_unchanged() -> None:
    """Manifest.to_json (asdict before, as_dict now) keeps its exact text."""
    from nova.bundle.format import (
        DeviceModule,
        EntryPoint,
        Kernel,
        KernelParam,
        Manifest,
        Payload,
        PayloadKind,
        TypeSpec,
    )

    spec = TypeSpec("memref", "f32", "memref<4xf32>", (4,))
    manifest = Manifest(
        arch="sm_90", entries=(EntryPoint("main", "__nova_entry_main", (spec,), ()),),
        modules=(DeviceModule("m", (Kernel("k", (spec,), (KernelParam("ptr", 8, 0, 8),), 16,
                                           True),),
                              (Payload(PayloadKind.PTX, ".nova.ptx.m", 10, "ab" * 32,
                                       "sm_90"),)),),
        extra={"note": "x"})
    text = manifest.to_json()
    assert Manifest.from_json(text) == manifest
    spec_d = {"kind": "memref", "dtype": "f32", "mlir": "memref<4xf32>", "shape": [4]}
    expected = {
        "arch": "sm_90", "source_name": "", "format": "nova-bundle", "format_version": 1,
        "producer": "nova 0.1.0", "abi_version": 1, "host_triple": "x86_64-unknown-linux-gnu",
        "extra": {"note": "x"},
        "entries": [{"name": "main", "symbol": "__nova_entry_main", "args": [spec_d],
                     "results": [], "replay_ops": 0}],
        "modules": [{"name": "m", "kernels": [{
            "name": "k", "args": [spec_d], "static_shared_bytes": 16, "uses_barriers": True,
            "params": [{"llvm_type": "ptr", "size": 8, "arg_index": 0, "align": 8}]}],
            "payloads": [{"kind": "ptx", "section": ".nova.ptx.m", "size": 10,
                          "sha256": "ab" * 32, "arch": "sm_90"}]}],
    }
    assert text == json.dumps(expected, indent=1, sort_keys=True)  # what asdict gave
