"""Where zarrfast adds context to an error raised below it (the chunk, the shard and inner
chunk, the array, the codec's place in the metadata), the error raised is the one that
was raised: its type, its attributes, its ``__cause__`` and its traceback survive, and an
exception class whose constructor takes other arguments works
(:func:`zarrfast.errors.add_context`).  The context is in the message when the message is
the error's one argument, in a note otherwise.

The errors come from a codec registered as a plugin would be, which fails on demand
while decoding (or while parsing its configuration), and from broken metadata.
"""

from __future__ import annotations

import json
import threading
import traceback
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

import zarrfast
from zarrfast.codecs import registry
from zarrfast.codecs._base import BytesBytesCodec
from zarrfast.errors import (
    ChunkAllocationError,
    ChunkDecodeError,
    MetadataValidationError,
    add_context,
)
from zarrfast.hierarchy.draft import open_draft
from zarrfast.metadata.v2 import ArrayMetadataV2

from _helpers.drafts import WARNINGS, fixture_dict, get_doc, put_doc


# -- exception classes a plugin might define -------------------------------------------
class OffsetError(ChunkDecodeError):
    """Its constructor takes two arguments; its message is its one argument."""

    def __init__(self, reason: str, offset: int) -> None:
        super().__init__(f"{reason} at byte {offset}")
        self.offset = offset


class PairError(ChunkDecodeError):
    """Its arguments are the pair (the message is the tuple's)."""

    def __init__(self, reason: str, offset: int) -> None:
        super().__init__(reason, offset)
        self.offset = offset


class OffsetAllocationError(ChunkAllocationError):
    def __init__(self, reason: str, offset: int) -> None:
        super().__init__(f"{reason} at byte {offset}")
        self.offset = offset


class ConfigError(MetadataValidationError):
    def __init__(self, member: str, value: Any) -> None:
        super().__init__(member, value)
        self.member = member


class _Failing:
    """What the codec raises while decoding (None: it decodes), and what it raised."""

    def __init__(self) -> None:
        self.cls: type[Exception] | None = None
        self.raised: list[tuple[Exception, Exception]] = []
        self.lock = threading.Lock()

    def raise_now(self) -> None:
        cause = OSError("device gone")
        try:
            raise cause
        except OSError:
            error = self.cls("bad block", 3)
            with self.lock:
                self.raised.append((error, cause))
            raise error from cause


FAILING = _Failing()


@dataclass(frozen=True)
class FlakyCodec(BytesBytesCodec):
    """Stores bytes as they are; decoding fails as FAILING says; a configuration with
    members fails to parse with a ConfigError."""

    name = "test.flaky"

    @classmethod
    def from_dict(cls, data: Any) -> FlakyCodec:
        config = data.get("configuration") if isinstance(data, dict) else None
        if config:
            member = sorted(config)[0]
            raise ConfigError(member, config[member])
        return cls()

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name}

    def encode(self, data: Any) -> bytes:
        return bytes(memoryview(data).cast("B"))

    def decode(self, data: Any, out: Any = None) -> bytes:
        if FAILING.cls is not None:
            FAILING.raise_now()
        return bytes(memoryview(data).cast("B"))


@pytest.fixture
def flaky(monkeypatch):
    monkeypatch.setattr(registry, "_registry", dict(registry._registry))
    registry.register_codec(FlakyCodec)
    FAILING.cls, FAILING.raised = None, []
    yield FAILING
    FAILING.cls = None


def _array(shards=None, dtype="int32"):
    a = zarrfast.create_array(zarrfast.MemoryStore(), shape=(8, 8), chunks=(4, 4),
                              shards=shards, dtype=dtype, compressors=[{"name": "test.flaky"}])
    a[...] = np.arange(1, 65).reshape(8, 8).astype(dtype)
    return a


def _write(a):
    a[1:3, 1:3] = 5


def _shown(error: BaseException) -> str:
    """The message and the notes: what a traceback prints under the error's type."""
    return "\n".join([str(error), *getattr(error, "__notes__", ())])


# (what is done, the array, what the error must say)
CHUNK = "chunk 'c/0/0'"
INNER = "shard 'c/0/0', inner chunk"
CASES = {
    "read": (lambda a: a[1:3, 1:3], {}, [CHUNK]),
    "read of all chunks": (lambda a: a[...], {}, ["chunk 'c/"]),
    "read-modify-write": (_write, {}, [CHUNK]),
    "string read": (lambda a: a[1:3, 1:3], {"dtype": str}, [CHUNK]),
    "shard read": (lambda a: a[1:3, 1:3], {"shards": (8, 8)}, [INNER]),
    "strided shard read": (lambda a: a[::3, ::2], {"shards": (8, 8)}, [INNER]),
    "shard read-modify-write": (_write, {"shards": (8, 8)}, [INNER]),
    "string shard read": (lambda a: a[1:3, 1:3], {"shards": (8, 8), "dtype": str},
                          [INNER, CHUNK]),
}


@pytest.mark.parametrize("cls", [OffsetError, PairError])
@pytest.mark.parametrize("case", list(CASES))
def test_a_codecs_decode_error_keeps_its_type_cause_and_object(flaky, cls, case):
    op, kwargs, says = CASES[case]
    a = _array(**kwargs)
    flaky.cls = cls
    with pytest.raises(cls) as info:
        op(a)
    err = info.value
    assert type(err) is cls and err.offset == 3
    assert any(err is raised for raised, _ in flaky.raised)  # the very object
    cause = next(c for raised, c in flaky.raised if raised is err)
    assert err.__cause__ is cause
    # the traceback still reaches the codec that raised it
    assert [f.name for f in traceback.extract_tb(err.__traceback__)][-2:] == [
        "decode", "raise_now"]
    for text in says:
        if cls is OffsetError:  # the message is its argument: the context is in it
            assert text in str(err), str(err)
            assert "bad block at byte 3" in str(err)
        else:  # its message is the pair: the context is a note
            assert str(err) == "('bad block', 3)"
            assert any(text in note for note in err.__notes__), err.__notes__


def test_the_context_reads_as_before(flaky):
    """zarrfast's messages are unchanged: context, then the error (a shard's inner chunk
    after it)."""
    a = _array()
    flaky.cls = OffsetError
    with pytest.raises(OffsetError, match=r"^chunk 'c/0/0': bad block at byte 3$"):
        a[1:3, 1:3]
    b = _array(shards=(8, 8))
    with pytest.raises(OffsetError) as info:
        b[1:3, 1:3]
    # (the inner chunk's chain names the shard's key, then the shard reader the inner chunk)
    assert str(info.value) == ("chunk 'c/0/0': bad block at byte 3 "
                               "[shard 'c/0/0', inner chunk (0, 0)]")


def test_an_allocation_error_names_the_array_and_stays_itself(flaky):
    a = _array()
    flaky.cls = OffsetAllocationError
    with pytest.raises(OffsetAllocationError) as info:
        a[1:3, 1:3]
    err = info.value
    assert err is flaky.raised[-1][0] and err.__cause__ is flaky.raised[-1][1]
    assert isinstance(err, MemoryError) and err.offset == 3
    assert str(err) == "array '/': bad block at byte 3"


def test_a_codecs_configuration_error_keeps_its_type_and_says_where(flaky):
    with pytest.raises(ConfigError) as info:
        zarrfast.create_array({}, shape=(4,), chunks=(2,), dtype="int32",
                              compressors=[{"name": "test.flaky",
                                            "configuration": {"level": "x"}}])
    err = info.value
    assert type(err) is ConfigError and err.member == "level"
    assert err.args == ("level", "x")  # its own arguments, as it was raised
    assert "from_dict" in [f.name for f in traceback.extract_tb(err.__traceback__)]
    assert err.__notes__ == ["array '/': compressors[0]"]


# -- broken draft metadata: zarrfast's own errors, raised where the fault is found ------
D_ARRAY = "meta/f8_gzip.array.json"
Z_ARRAY = "meta/root/f8_gzip.array.json"
BLOSC = "https://purl.org/zarr/spec/codec/blosc/1.0"


def _draft_error(layout: str, key: str, mutate) -> MetadataValidationError:
    d = fixture_dict(layout)
    doc = get_doc(d, key)
    mutate(doc)
    put_doc(d, key, doc)
    with pytest.raises(MetadataValidationError) as info:
        open_draft(zarrfast.MemoryStore(d), "f8_gzip")
    return info.value


@WARNINGS
@pytest.mark.parametrize("layout,key,member", [
    ("draft2022", D_ARRAY, "codecs"),      # a codec of the 2022 draft's list
    ("zarrita", Z_ARRAY, "compressor"),    # zarrita's compressor
])
def test_a_draft_codec_error_is_the_one_raised_and_names_the_place_once(layout, key, member):
    def mutate(doc):
        codec = {"configuration": {"shuffle": 7}}
        codec["type" if member == "codecs" else "codec"] = BLOSC
        doc[member] = [codec] if member == "codecs" else codec

    err = _draft_error(layout, key, mutate)
    msg = str(err)
    assert msg.endswith("blosc: invalid shuffle 7"), msg
    assert msg.count(key) == 1, msg  # (was said twice: "key: codecs[0]: key: codecs[0]: ...")
    assert "_blosc" in [f.name for f in traceback.extract_tb(err.__traceback__)]


@WARNINGS
def test_a_draft_transpose_error_is_the_one_raised():
    def mutate(doc):
        doc["codecs"] = [{"type": "https://purl.org/zarr/spec/codec/transpose/1.0",
                          "configuration": {"order": "X"}}]

    err = _draft_error("draft2022", D_ARRAY, mutate)
    assert str(err).startswith(f"{D_ARRAY}: codecs[0]: transpose codec: order must be")
    assert "_draft_permutation" in [f.name for f in traceback.extract_tb(err.__traceback__)]


# -- Zarr v2 metadata: the checks of the metadata object itself --------------------------
class _CheckedV2(ArrayMetadataV2):
    """Metadata whose own checks refuse what the document's parser accepted."""

    def __post_init__(self) -> None:
        super().__post_init__()
        try:
            raise KeyError("order")
        except KeyError as cause:
            raise MetadataValidationError("order 'C' is not supported here") from cause


def test_v2_metadata_errors_of_the_object_name_the_array_and_keep_the_cause():
    doc = {"zarr_format": 2, "shape": [10], "chunks": [5], "dtype": "<i4",
           "compressor": None, "filters": None, "fill_value": 0, "order": "C"}
    with pytest.raises(MetadataValidationError) as info:
        _CheckedV2.from_dict(json.loads(json.dumps(doc)), path="x/y")
    err = info.value
    assert str(err) == "array 'x/y' (v2): order 'C' is not supported here"
    assert isinstance(err.__cause__, KeyError)
    assert "__post_init__" in [f.name for f in traceback.extract_tb(err.__traceback__)]


# -- the helper itself ----------------------------------------------------------------
def test_add_context_in_the_message_or_a_note():
    e = ChunkDecodeError("truncated")
    add_context(e, "chunk 'c/1'")
    assert str(e) == "chunk 'c/1': truncated" and not hasattr(e, "__notes__")
    add_context(e, "chunk 'c/1'")  # says it already
    assert str(e) == "chunk 'c/1': truncated"
    add_context(e, "shard 's'", message=f"{e} [shard 's']")
    assert str(e) == "chunk 'c/1': truncated [shard 's']"

    class Shown(ChunkDecodeError):  # a __str__ that does not show its argument
        def __str__(self) -> str:
            return "shown"

    for error in (PairError("bad", 1), Shown("x"), KeyError("k")):
        args = error.args
        add_context(error, "chunk 'c/2'")
        add_context(error, "chunk 'c/2'")
        assert error.args == args and error.__notes__ == ["chunk 'c/2'"]
