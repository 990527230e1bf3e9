"""Text and byte mutations shared by the fuzzer (tests/fuzz) and the command-line robustness
tests (tests/unit/test_robustness_cli.py). Every mutation takes the input and a seeded
`random.Random` and is deterministic given both."""

from __future__ import annotations

import random
import re
from collections.abc import Callable

_TOKEN = re.compile(r"%[\w.$#-]+|@[\w.$-]+|\^[\w.$-]+|[\w.]+|\S")
_TYPE = re.compile(r"\b(f16|bf16|f32|f64|i1|i8|i32|i64|index)\b")
_OP = re.compile(r"\b(arith|gpu|memref|scf|func|math|cf|vector|index)\.(\w+)")
_NUMBER = re.compile(r"(?<![\w.#%@^])\d+\b")

Mutation = Callable[[str, random.Random], str]

def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def delete_line(text: str, rnd: random.Random) -> str:
    lines = _lines(text)
    del lines[rnd.randrange(len(lines))]
    return "".join(lines)


def duplicate_line(text: str, rnd: random.Random) -> str:
    lines = _lines(text)
    i = rnd.randrange(len(lines))
    return "".join(lines[:i + 1] + lines[i:])


def swap_lines(text: str, rnd: random.Random) -> str:
    lines = _lines(text)
    if len(lines) < 2:
        return text
    i = rnd.randrange(len(lines) - 1)
    lines[i], lines[i + 1] = lines[i + 1], lines[i]
    return "".join(lines)


def _replace_match(text: str, rnd: random.Random, pattern: re.Pattern[str],
                   make: Callable[[re.Match[str]], str]) -> str:
    matches = list(pattern.finditer(text))
    if not matches:
        return text
    m = rnd.choice(matches)
    return text[:m.start()] + make(m) + text[m.end():]


def delete_token(text: str, rnd: random.Random) -> str:
    return _replace_match(text, rnd, _TOKEN, lambda m: "")


def duplicate_token(text: str, rnd: random.Random) -> str:
    return _replace_match(text, rnd, _TOKEN, lambda m: m.group() + " " + m.group())


def swap_tokens(text: str, rnd: random.Random) -> str:
    tokens = _TOKEN.findall(text)
    return _replace_match(text, rnd, _TOKEN, lambda m: rnd.choice(tokens))


def change_type(text: str, rnd: random.Random) -> str:
    others = ["f32", "f64", "i1", "i8", "index", "bf16", "i128", "vector<4xf32>", "tensor<4xf32>",
              "complex<f32>", "memref<?xf32>", "f8E4M3FN", "none"]
    return _replace_match(text, rnd, _TYPE, lambda m: rnd.choice(others))


def unknown_op(text: str, rnd: random.Random) -> str:
    return _replace_match(text, rnd, _OP, lambda m: f"{m.group(1)}.no_such_op")


def unknown_dialect(text: str, rnd: random.Random) -> str:
    return _replace_match(text, rnd, _OP, lambda m: f"nodialect.{m.group(2)}")


def truncate(text: str, rnd: random.Random) -> str:
    return text[:rnd.randrange(len(text))]


def insert_garbage(text: str, rnd: random.Random) -> str:
    garbage = ["\x00", "\x01", "{", "}", "(", ")", '"', "%", "^bb9:", "#", "<<", ">", "!", ":",
               "// ", "\u00e9", "\ufeff", "0x", "-", "@", "[", "]", "=", ",", "\t\t"]
    i = rnd.randrange(len(text) + 1)
    return text[:i] + rnd.choice(garbage) + text[i:]


def change_number(text: str, rnd: random.Random) -> str:
    numbers = ["0", "-1", "4294967296", "99999999999999999999999", "18446744073709551616",
               "1.5", "1e309", "0x7fffffffffffffff"]
    return _replace_match(text, rnd, _NUMBER, lambda m: rnd.choice(numbers))


MUTATIONS: dict[str, Mutation] = {
    f.__name__: f for f in (delete_line, duplicate_line, swap_lines, delete_token,
                            duplicate_token, swap_tokens, change_type, unknown_op,
                            unknown_dialect, truncate, insert_garbage, change_number)}




_SSA = re.compile(r"%[\w.$-]+(#\d+)?|\^[\w.$-]+")


def change_ssa_name(text: str, rnd: random.Random) -> str:
    """Replace an SSA value or block name with another one of the program (often of another
    type, defined later, or of the wrong kind) or an undefined one."""
    names = [m.group() for m in _SSA.finditer(text)] or ["%x"]
    extra = ["%undefined", "%0#7", "^nowhere", "%arg99", "%c0", "^bb0"]
    return _replace_match(text, rnd, _SSA, lambda m: rnd.choice(names + extra))


# The fuzzer's MLIR mutations: the CLI tests' set (kept as is: their seeded lists stay the same)
# and SSA-name edits.
MLIR_MUTATIONS: dict[str, Mutation] = {**MUTATIONS, "change_ssa_name": change_ssa_name}


# --- Python kernel source -------------------------------------------------------------------

_PY_NAME = re.compile(r"\b(out|a|b|n|i|j|k|x|acc|tid|nova\.\w+|range|len|float32|int32)\b")
_PY_OP = re.compile(r"(?<![=<>!*/+-])(\+|-|\*|//|/|%|<<|>>|<=|>=|<|>|==|!=|&|\||\^)(?![=<>*/])")


def python_name(text: str, rnd: random.Random) -> str:
    names = ["out", "a", "n", "i", "nova.thread_id", "nova.block_id", "nova.syncthreads",
             "nova.shared_array", "nova.atomic_add", "nova.float64", "nova.uint8", "range",
             "len", "print", "abs", "min", "max", "math.sqrt", "True", "None", "nova.nope"]
    return _replace_match(text, rnd, _PY_NAME, lambda m: rnd.choice(names))


def python_operator(text: str, rnd: random.Random) -> str:
    ops = ["+", "-", "*", "/", "//", "%", "**", "<<", ">>", "&", "|", "^", "<", "==", "and",
           "or", "@", "is", "in"]
    return _replace_match(text, rnd, _PY_OP, lambda m: rnd.choice(ops))


def python_number(text: str, rnd: random.Random) -> str:
    numbers = ["0", "-1", "2**64", "1e308", "1.5", "3", "256", "-2**63", "True", "0j", "'s'",
               "(1, 2)", "[1]", "None"]
    return _replace_match(text, rnd, _NUMBER, lambda m: rnd.choice(numbers))


def python_indent(text: str, rnd: random.Random) -> str:
    """Move one line into or out of the block above it (keeps the module importable often)."""
    lines = _lines(text)
    i = rnd.randrange(len(lines))
    lines[i] = ("    " + lines[i]) if rnd.random() < 0.5 else lines[i].removeprefix("    ")
    return "".join(lines)


def python_statement(text: str, rnd: random.Random) -> str:
    stmts = ["out[0] = out", "a = out", "return 1", "return", "x = (1, 2)", "del i",
             "out[i, 0] = 1.0", "nova.syncthreads()", "while False:\n        pass",
             "for q in range(n):\n        out[q] = q", "assert i", "x: int = 3", "global g",
             "out[0] += 1", "x = out[0] if i else 2", "x = [1, 2]", "x = lambda: 1",
             "out.shape = 3", "x = len(out) + len(n)", "yield 1", "x = out[1:2]"]
    lines = _lines(text)
    i = rnd.randrange(1, len(lines)) if len(lines) > 1 else 0
    indent = len(lines[i]) - len(lines[i].lstrip(" ")) or 4
    return "".join([*lines[:i], " " * indent + rnd.choice(stmts) + "\n", *lines[i:]])


PY_MUTATIONS: dict[str, Mutation] = {
    f.__name__: f for f in (delete_line, duplicate_line, swap_lines, delete_token,
                            duplicate_token, swap_tokens, python_name, python_operator,
                            python_number, python_indent, python_statement, truncate)}


# --- bytes ----------------------------------------------------------------------------------

ByteMutation = Callable[[bytes, random.Random], bytes]


def flip_bits(data: bytes, rnd: random.Random) -> bytes:
    out = bytearray(data)
    for _ in range(rnd.choice((1, 1, 2, 4, 16))):
        at = rnd.randrange(len(out))
        out[at] ^= 1 << rnd.randrange(8)
    return bytes(out)


def set_bytes(data: bytes, rnd: random.Random) -> bytes:
    """Overwrite 1-8 bytes with an interesting value (0, 0xff.., small and huge numbers)."""
    out = bytearray(data)
    width = rnd.choice((1, 2, 4, 8))
    top = 2**(8 * width)
    value = rnd.choice((0, 1, 2, 3, 7, 8, 0x40, 0x7f, 0x80, 0xff, top - 1, top // 2, len(data),
                        len(data) + 1, rnd.randrange(top)))
    at = rnd.randrange(max(len(out) - width, 1))
    out[at:at + width] = (value % 2**(8 * width)).to_bytes(width, "little")
    return bytes(out[:len(data)])


def truncate_bytes(data: bytes, rnd: random.Random) -> bytes:
    return data[:rnd.randrange(len(data))]


def insert_delete_bytes(data: bytes, rnd: random.Random) -> bytes:
    at = rnd.randrange(len(data))
    if rnd.random() < 0.5:
        return data[:at] + data[at + rnd.randrange(1, 64):]
    return data[:at] + rnd.randbytes(rnd.randrange(1, 64)) + data[at:]


# ELF64: e_shoff at 0x28, e_shnum at 0x3c, e_shstrndx at 0x3e; a section header is 64 bytes:
# name type flags addr offset size link info addralign entsize.
_SHDR_FIELDS = ((0, 4), (4, 4), (8, 8), (24, 8), (32, 8), (40, 4), (44, 4), (48, 8), (56, 8))


def edit_section_header(data: bytes, rnd: random.Random) -> bytes:
    """Change one field of one section header (offset, size, alignment, link, ...)."""
    if len(data) < 64:
        return flip_bits(data, rnd) if data else data
    shoff = int.from_bytes(data[0x28:0x30], "little")
    shnum = int.from_bytes(data[0x3c:0x3e], "little")
    if shnum == 0 or shoff + shnum * 64 > len(data):
        return set_bytes(data, rnd)
    field, width = rnd.choice(_SHDR_FIELDS)
    at = shoff + 64 * rnd.randrange(shnum) + field
    old = int.from_bytes(data[at:at + width], "little")
    value = rnd.choice((0, 1, 3, 6, 2**(8 * width) - 1, old + 1, old - 1, old * 2, old + 4096,
                        len(data), len(data) - 1, old ^ (1 << rnd.randrange(8 * width))))
    out = bytearray(data)
    out[at:at + width] = (value % 2**(8 * width)).to_bytes(width, "little")
    return bytes(out)


def edit_elf_header(data: bytes, rnd: random.Random) -> bytes:
    """Change e_shoff, e_shnum, e_shstrndx or another ELF header field."""
    if len(data) < 64:
        return data
    at, width = rnd.choice(((0x28, 8), (0x3c, 2), (0x3e, 2), (0x3a, 2), (0x10, 2), (0x12, 2),
                            (0x34, 2), (0x04, 1), (0x05, 1), (0x07, 1)))
    value = rnd.choice((0, 1, 0xffff, 2**(8 * width) - 1, len(data), rnd.randrange(2**(8 * width))))
    out = bytearray(data)
    out[at:at + width] = (value % 2**(8 * width)).to_bytes(width, "little")
    return bytes(out)


BYTE_MUTATIONS: dict[str, ByteMutation] = {
    f.__name__: f for f in (flip_bits, set_bytes, truncate_bytes, insert_delete_bytes,
                            edit_section_header, edit_section_header, edit_elf_header)}
