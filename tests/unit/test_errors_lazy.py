"""nova.errors' rarer classes (nova.errors.rare, made on first use) and the kernel language's
errors (nova.lang.kernel_errors) are what they were as plain module attributes: importable by
name, one class each however reached, named by their public module (tracebacks, docs, pickle),
pickled by reference, subclasses of the same bases."""

from __future__ import annotations

import pickle

import pytest

import nova.errors as errors
import nova.lang
import nova.lang.source as source


@pytest.mark.parametrize("name", sorted(errors.RARE))
def test_each_rare_error_is_a_nova_errors_class(name: str) -> None:
    cls = getattr(errors, name)
    exec(f"from nova.errors import {name} as again", globals())
    assert again is cls  # type: ignore[name-defined]  # noqa: F821
    assert cls.__module__ == "nova.errors" and cls.__qualname__ == name
    assert issubclass(cls, errors.NovaError) and name in dir(errors)
    assert pickle.loads(pickle.dumps(cls)) is cls


def test_rare_errors_keep_their_bases_and_pickle_with_their_arguments() -> None:
    assert issubclass(errors.CudaOutOfMemoryError, errors.OutOfMemoryError)
    assert issubclass(errors.CudaOutOfMemoryError, errors.CudaError)
    assert issubclass(errors.ScalarConversionError, (TypeError, ValueError, OverflowError))
    assert issubclass(errors.ParseError, errors.DiagnosticError)
    exc = errors.cuda_error("cuMemAlloc", "CUDA_ERROR_OUT_OF_MEMORY", 2, kernel="k")
    assert type(exc) is errors.CudaOutOfMemoryError
    again = pickle.loads(pickle.dumps(errors.ParseError("bad token")))
    assert type(again) is errors.ParseError and "bad token" in str(again)


def test_unknown_names_are_attribute_errors() -> None:
    with pytest.raises(AttributeError, match="no attribute 'NoSuchError'"):
        errors.NoSuchError  # noqa: B018
    with pytest.raises(ImportError):
        exec("from nova.errors import NoSuchError", {})
    with pytest.raises(AttributeError, match="no attribute 'NoSuchError'"):
        source.NoSuchError  # noqa: B018


@pytest.mark.parametrize("name", ["KernelTypeError", "KernelSyntaxError"])
def test_kernel_errors_are_served_by_nova_lang_and_its_source_module(name: str) -> None:
    cls = getattr(source, name)
    assert getattr(nova.lang, name) is cls and cls.__module__ == "nova.lang.source"
    assert pickle.loads(pickle.dumps(cls)) is cls
    assert issubclass(cls, errors.VerifyError if name == "KernelTypeError"
                      else errors.UnsupportedError)
