"""nova-lz4 and the .lz4 file format: round trips (cpu device and liblz4; cuda marked gpu),
interop with python-lz4 and the lz4 CLI both ways, and every error path: one line on stderr,
exit code 1, no traceback, and a good OUT never replaced by a partial one."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import lz4.frame
import numpy as np
import pytest

from nova.lz4.cli import main
from nova.lz4.frame import TRAILER_BYTES


def _data(corpus, n_pages: int, tail: int) -> bytes:
    pages = np.concatenate([corpus[c][:2] for c in ("text", "binary", "zeros", "random",
                                                    "floats")])
    data = np.resize(pages.reshape(-1), n_pages * 4096).tobytes()
    return data + bytes(range(256)) * (tail // 256) + b"x" * (tail % 256)


def _run(capsys, *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().err


@pytest.mark.parametrize("n_pages, tail", [(10, 0), (9, 1000), (0, 3), (0, 0)])
def test_roundtrip(tmp_path, capsys, device, corpus, n_pages, tail):
    src, packed, back = tmp_path / "in.bin", tmp_path / "in.lz4", tmp_path / "out.bin"
    src.write_bytes(_data(corpus, n_pages, tail))
    assert _run(capsys, "compress", str(src), str(packed), "--device", device, "-q") == (0, "")
    assert _run(capsys, "decompress", str(packed), str(back), "--device", device, "-q") == \
        (0, "")
    assert back.read_bytes() == src.read_bytes()
    assert lz4.frame.decompress(packed.read_bytes()) == src.read_bytes()  # python-lz4 reads it
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.bin", "in.lz4", "out.bin"]
    assert packed.stat().st_mode & 0o777 == src.stat().st_mode & 0o777  # umask, not 0600


def test_page_size_option_and_progress(tmp_path, capsys, corpus):
    src, packed, back = tmp_path / "in.bin", tmp_path / "in.lz4", tmp_path / "out.bin"
    src.write_bytes(_data(corpus, 6, 100))
    code, err = _run(capsys, "compress", str(src), str(packed), "--device", "cpu",
                     "--page-size", "1024")
    assert code == 0 and "compress" in err and "ratio" in err and "pages=" in err
    assert _run(capsys, "decompress", str(packed), str(back), "-q", "--device", "cpu")[0] == 0
    assert back.read_bytes() == src.read_bytes()


def test_no_checksum_option(tmp_path, capsys, corpus):
    src, packed, back = tmp_path / "in.bin", tmp_path / "in.lz4", tmp_path / "out.bin"
    src.write_bytes(_data(corpus, 4, 9))
    assert _run(capsys, "compress", str(src), str(packed), "--no-checksum", "-q",
                "--device", "liblz4")[0] == 0
    with_sum = tmp_path / "sum.lz4"
    assert _run(capsys, "compress", str(src), str(with_sum), "-q", "--device", "liblz4")[0] == 0
    assert packed.stat().st_size == with_sum.stat().st_size - 4
    assert _run(capsys, "decompress", str(packed), str(back), "-q") == (0, "")
    assert back.read_bytes() == src.read_bytes()
    assert lz4.frame.decompress(packed.read_bytes()) == src.read_bytes()


def test_reads_other_writers_frames(tmp_path, capsys, corpus):
    data = _data(corpus, 5, 17)
    foreign, back = tmp_path / "f.lz4", tmp_path / "f.bin"
    foreign.write_bytes(lz4.frame.compress(data, content_checksum=True, block_linked=True))
    assert _run(capsys, "decompress", str(foreign), str(back), "-q") == (0, "")
    assert back.read_bytes() == data


@pytest.mark.skipif(shutil.which("lz4") is None, reason="the lz4 command is not installed")
def test_lz4_command_reads_nova_files(tmp_path, capsys, corpus):
    src, packed, back = tmp_path / "in.bin", tmp_path / "in.lz4", tmp_path / "back.bin"
    src.write_bytes(_data(corpus, 7, 5))
    assert _run(capsys, "compress", str(src), str(packed), "--device", "cpu", "-q")[0] == 0
    subprocess.run(["lz4", "-d", "-q", "-f", str(packed), str(back)], check=True)
    assert back.read_bytes() == src.read_bytes()


@pytest.fixture
def packed(tmp_path, capsys, corpus) -> tuple[Path, bytes]:
    src = tmp_path / "in.bin"
    data = _data(corpus, 9, 10)  # text, binary, zero, random (stored raw) and float pages
    src.write_bytes(data)
    out = tmp_path / "in.lz4"
    assert _run(capsys, "compress", str(src), str(out), "--device", "liblz4", "-q")[0] == 0
    return out, data


def _block_offsets(blob: bytes) -> list[tuple[int, int]]:
    """(offset of the size field, size field) of every block of a Nova file."""
    at, out = 7, []
    while True:
        (field,) = struct.unpack_from("<I", blob, at)
        if field == 0:
            return out
        out.append((at, field))
        at += 4 + (field & 0x7FFFFFFF)


def _corrupt(kind: str, blob: bytes) -> bytes:
    b = bytearray(blob)
    blocks = _block_offsets(blob)
    if kind == "bad magic":
        b[0] ^= 0xFF
    elif kind == "empty":
        return b""
    elif kind == "truncated in a block":
        return bytes(b[:blocks[3][0] + 10])
    elif kind == "truncated header":
        return bytes(b[:5])
    elif kind == "header checksum":
        b[6] ^= 0x01
    elif kind == "content checksum":
        raw = next(at for at, field in blocks if field == 4096 | 0x80000000)
        b[raw + 100] ^= 0x01  # a byte of a page stored raw: the block stays valid
    elif kind == "out-of-bounds block":
        at = next(a for a, f in blocks if not f & 0x80000000 and f > 40)
        b[at + 4] = 0x0F  # token: no literals, a long match
        b[at + 5:at + 7] = b"\xff\xff"  # offset 65535: far before the page's start
    elif kind == "block bigger than the frame allows":
        struct.pack_into("<I", b, blocks[1][0], 0x00FFFFFF)
    elif kind == "extra data after the frame":
        return bytes(b[:-TRAILER_BYTES]) + b"junk" + bytes(b[-TRAILER_BYTES:])
    else:
        raise AssertionError(kind)
    return bytes(b)


@pytest.mark.parametrize("kind, message", [
    ("bad magic", "bad magic number"),
    ("empty", "it is empty"),
    ("truncated in a block", "truncated input"),
    ("truncated header", "bad magic|truncated|shorter"),
    ("header checksum", "checksum mismatch in the LZ4 frame header"),
    ("content checksum", "content checksum mismatch"),
    ("out-of-bounds block", r"block \d+ is invalid: it would decode out of bounds"),
    ("block bigger than the frame allows", "more than the frame's block maximum"),
    ("extra data after the frame", "unexpected data"),
])
@pytest.mark.parametrize("device", ["cpu", "liblz4"])
def test_corrupt_input_is_one_line_and_keeps_out(tmp_path, capsys, packed, kind, message,
                                                 device):
    path, _ = packed
    bad = tmp_path / "bad.lz4"
    bad.write_bytes(_corrupt(kind, path.read_bytes()))
    out = tmp_path / "out.bin"
    out.write_bytes(b"a good file from before")
    code, err = _run(capsys, "decompress", str(bad), str(out), "--device", device, "-q")
    assert code == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("nova-lz4: error: "), err
    assert re.search(message, lines[0]), lines[0]
    assert out.read_bytes() == b"a good file from before"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".part")]


@pytest.mark.parametrize("argv, message", [
    (["compress", "{missing}", "{out}"], "No such file"),
    (["compress", "{src}", "{src}"], "same file"),
    (["compress", "{src}", "{out}", "--page-size", "3000"], "power of two"),
    (["decompress", "{src}", "{out}"], "bad magic number"),
    (["compress", "{src}", "{nodir}"], "No such file"),
])
def test_usage_errors(tmp_path, capsys, argv, message):
    src = tmp_path / "src.bin"
    src.write_bytes(b"hello" * 1000)
    names = {"missing": str(tmp_path / "missing"), "out": str(tmp_path / "o.lz4"),
             "src": str(src), "nodir": str(tmp_path / "no" / "dir" / "o.lz4")}
    code, err = _run(capsys, *[a.format(**names) for a in argv], "-q")
    assert code == 1 and err.count("\n") == 1 and message in err, err


def test_console_script_entry_point(tmp_path):
    """python -m nova.lz4.cli (what the nova-lz4 script runs) exits 1 on a bad file."""
    bad = tmp_path / "bad.lz4"
    bad.write_bytes(b"\x00" * 64)
    proc = subprocess.run([sys.executable, "-m", "nova.lz4.cli", "decompress", str(bad),
                           str(tmp_path / "o"), "-q"], capture_output=True, text=True)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("nova-lz4: error: not an LZ4 file")


def test_bench_subcommand(tmp_path, capsys, corpus):
    code = main(["bench", "--device", "cpu", "--pages", "12", "-q"])
    out = capsys.readouterr().out
    assert code == 0 and "pages of 4096 B on cpu" in out and "liblz4" in out
    src = tmp_path / "in.bin"
    src.write_bytes(_data(corpus, 5, 0))
    assert main(["bench", str(src), "--device", "liblz4", "-q"]) == 0
    assert "5 pages of 4096 B on liblz4" in capsys.readouterr().out
