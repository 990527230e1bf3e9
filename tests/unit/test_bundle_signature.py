"""Signed bundles (nova.bundle.signature): nova-translate --sign / --gen-key, nova.load's
trusted_keys and NOVA_TRUSTED_KEYS, nova-objdump's signer line."""

from __future__ import annotations

import functools
import re
import struct
from pathlib import Path

import numpy as np
import pytest

import nova
from nova import config
from nova.bundle.elf import parse_elf
from nova.bundle.reader import read_bundle
from nova.bundle.signature import (
    SIGNATURE_SECTION,
    SignatureError,
    fingerprint,
    generate_key,
    load_public_key,
    sign_bundle,
)
from nova.bundle.verify import verify_object
from nova.bundle.writer import seal_bundle
from nova.cli import objdump, translate
from nova.compiler import driver

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "vecadd.mlir"


@functools.cache
def bundle() -> bytes:
    with config.scoped(cache_enabled=False):
        return driver.compile_to_bundle(EXAMPLE.read_text(), EXAMPLE.name,
                                        driver.CompileOptions(ptx=False, cubin=False))


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("keys")
    first, first_pub = generate_key(root / "first.pem")
    second, second_pub = generate_key(root / "second.pem")
    return {"first": first, "first.pub": first_pub, "second": second, "second.pub": second_pub}


def runs(module: nova.NovaModule) -> None:
    a = np.arange(20, dtype=np.float32)
    c = np.zeros(20, dtype=np.float32)
    module.vecadd(a, a, c)
    assert np.array_equal(c, a + a)


def test_keys_are_pem_and_private(keys: dict[str, Path]) -> None:
    assert keys["first"].read_bytes().startswith(b"-----BEGIN PRIVATE KEY-----")
    assert keys["first.pub"].read_bytes().startswith(b"-----BEGIN PUBLIC KEY-----")
    assert keys["first"].stat().st_mode & 0o077 == 0
    assert len(load_public_key(keys["first.pub"])) == 32
    assert load_public_key(keys["first"]) == load_public_key(keys["first.pub"])


def test_round_trip(keys: dict[str, Path]) -> None:
    signed = sign_bundle(bundle(), keys["first"])
    elf = verify_object(signed)  # still the shape the structural check accepts
    assert len(elf.sections_named(SIGNATURE_SECTION)) == 1
    read_bundle(signed, trusted_keys=[load_public_key(keys["first.pub"])])
    with nova.load(signed, "cpu", trusted_keys=[keys["first.pub"]]) as module:
        runs(module)
    with nova.load(signed, "cpu", trusted_keys=[keys["second.pub"], keys["first.pub"]]) as m:
        runs(m)
    # signing again (another key) replaces the signature rather than adding a section
    again = sign_bundle(signed, keys["second"])
    assert len(again) == len(signed)
    nova.load(again, "cpu", trusted_keys=[keys["second.pub"]]).close()
    with pytest.raises(SignatureError, match="not trusted"):
        nova.load(again, "cpu", trusted_keys=[keys["first.pub"]])


def test_tampered_payload_is_refused(keys: dict[str, Path]) -> None:
    signed = sign_bundle(bundle(), keys["first"])
    elf = parse_elf(signed)
    manifest = elf.sections_named(".nova.manifest")[0]
    tampered = bytearray(signed)
    position = signed.index(b'"vecadd.mlir"', manifest.offset)
    tampered[position + 1:position + 7] = b"VECADD"  # same length: a plausible edit
    resealed = seal_bundle(bytes(tampered))  # the attacker reseals: the seal is unkeyed
    read_bundle(resealed)  # without a policy it loads (the seal matches)
    with pytest.raises(SignatureError, match="modified after it was signed"):
        nova.load(resealed, "cpu", trusted_keys=[keys["first.pub"]])


def test_swapped_key_is_refused(keys: dict[str, Path]) -> None:
    """Putting a trusted key into the record does not help: the signature must verify."""
    signed = bytearray(sign_bundle(bundle(), keys["second"]))
    record = parse_elf(bytes(signed)).sections_named(SIGNATURE_SECTION)[0].offset
    signed[record + 8:record + 40] = load_public_key(keys["first.pub"])
    with pytest.raises(SignatureError, match="modified after it was signed"):
        nova.load(seal_bundle(bytes(signed)), "cpu", trusted_keys=[keys["first.pub"]])


def test_wrong_key_is_refused(keys: dict[str, Path]) -> None:
    signed = sign_bundle(bundle(), keys["second"])
    second = fingerprint(load_public_key(keys["second.pub"]))
    expected = re.escape(f"signed by key {second}, which is not trusted")
    with pytest.raises(SignatureError, match=expected):
        nova.load(signed, "cpu", trusted_keys=[keys["first.pub"]])


def test_unsigned_with_policy_is_refused(keys: dict[str, Path]) -> None:
    with pytest.raises(SignatureError, match="is not signed, and a trust policy is set"):
        nova.load(bundle(), "cpu", trusted_keys=[keys["first.pub"]])


def test_signed_without_policy_loads(keys: dict[str, Path]) -> None:
    with config.scoped(trusted_keys=()), nova.load(sign_bundle(bundle(), keys["first"]),
                                                    "cpu") as module:
        runs(module)


def test_config_env_var(keys: dict[str, Path], tmp_path: Path) -> None:
    import os

    env = {"NOVA_TRUSTED_KEYS": os.pathsep.join([str(keys["second.pub"]),
                                                 str(keys["first.pub"])])}
    assert config.Config.from_environ(env).trusted_keys == (keys["second.pub"],
                                                             keys["first.pub"])
    assert config.Config.from_environ({}).trusted_keys == ()
    signed = sign_bundle(bundle(), keys["first"])
    path = tmp_path / "s.nova"
    path.write_bytes(signed)
    with config.scoped(trusted_keys=(keys["first.pub"],)):
        with nova.load(path, "cpu") as module:
            runs(module)
        with pytest.raises(SignatureError, match="is not signed"):
            nova.load(bundle(), "cpu")
        nova.load(bundle(), "cpu", trusted_keys=()).close()  # explicitly no policy
        # nova.compile loads what it just compiled from source: no signature asked
        nova.compile(EXAMPLE, "cpu", ptx=False, cubin=False).close()
    with config.scoped(trusted_keys=(keys["second.pub"],)), \
            pytest.raises(SignatureError, match="not trusted"):
        nova.load(path, "cpu")
    with config.scoped(trusted_keys=(tmp_path / "missing.pem",)), \
            pytest.raises(SignatureError, match="cannot read trusted key"):
        nova.load(path, "cpu")


def test_bad_keys(keys: dict[str, Path], tmp_path: Path) -> None:
    junk = tmp_path / "junk.pem"
    junk.write_text("not a key\n")
    with pytest.raises(SignatureError, match="not an unencrypted PEM private key"):
        sign_bundle(bundle(), junk)
    with pytest.raises(SignatureError, match="is not a PEM public key"):
        nova.load(bundle(), "cpu", trusted_keys=[junk])


def test_malformed_signature_section(keys: dict[str, Path]) -> None:
    signed = bytearray(sign_bundle(bundle(), keys["first"]))
    record = parse_elf(bytes(signed)).sections_named(SIGNATURE_SECTION)[0].offset
    signed[record:record + 8] = b"NOVASIG9"
    with pytest.raises(SignatureError, match="is not a 104-byte NOVASIG1 record"):
        nova.load(seal_bundle(bytes(signed)), "cpu", trusted_keys=[keys["first.pub"]])


def test_cli_sign_gen_key_and_objdump(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    key = tmp_path / "k.pem"
    assert translate.main(["--gen-key", str(key)]) == 0
    assert key.exists() and (tmp_path / "k.pem.pub").exists()
    assert translate.main(["--gen-key", str(key)]) == 1  # never overwrites a key
    out = tmp_path / "v.nova"
    with config.scoped(cache_enabled=False):
        assert translate.main([str(EXAMPLE), "--no-ptx", "--sign", str(key), "-o", str(out)]) == 0
        assert translate.main([str(EXAMPLE), "--emit=host-llvm", "--sign", str(key)]) == 1
    capsys.readouterr()
    nova.load(out, "cpu", trusted_keys=[tmp_path / "k.pem.pub"]).close()
    assert objdump.main([str(out)]) == 0
    expected = fingerprint(load_public_key(tmp_path / "k.pem.pub"))
    assert f"signature:  Ed25519, key {expected} (valid for this key" in capsys.readouterr().out
    unsigned = tmp_path / "u.nova"
    unsigned.write_bytes(bundle())
    assert objdump.main([str(unsigned)]) == 0
    assert "signature:  unsigned" in capsys.readouterr().out
    # a resealed edit after signing: objdump says so
    data = bytearray(out.read_bytes())
    record = parse_elf(bytes(data)).sections_named(SIGNATURE_SECTION)[0].offset
    struct.pack_into("<B", data, record + 40, data[record + 40] ^ 1)
    out.write_bytes(seal_bundle(bytes(data)))
    assert objdump.main([str(out)]) == 0
    assert "INVALID" in capsys.readouterr().out
