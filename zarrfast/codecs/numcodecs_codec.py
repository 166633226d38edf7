"""numcodecs codecs (Zarr v2 ``compressor`` and ``filters``) as bytes -> bytes codecs.

Zarr v2 encodes a chunk by handing its array (C or F order) to each filter in
turn and then to the compressor; any numcodecs codec can appear
(``{"id": "zstd", "level": 1}``, ``{"id": "delta", "dtype": "<i4"}``, ...).
:class:`NumcodecsCodec` wraps one; the first filter of a chain is given the
chunk viewed as the array's dtype (some filters, e.g. ``bitround``, check it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numcodecs
import numpy as np

from zarrfast.codecs._base import BytesBytesCodec
from zarrfast.codecs.compressors import (
    _fill_out,
    _too_big,
    blosc_check_header,
    inflate_bounded,
    zstd_decode_bounded,
)
from zarrfast.errors import CodecError, UnknownCodecError


def decode_bounded(impl: Any, codec_id: Any, data: Any, out: Any, limit: int | None,
                   what: str) -> Any:
    """``impl.decode`` of numcodecs codec ``codec_id``, refusing (before allocating) output
    larger than ``out`` (which it must fill exactly) or than ``limit``, for the compressors
    that can inflate; other codecs produce about as many bytes as they read."""
    want = memoryview(out).nbytes if out is not None else limit
    if codec_id in ("zlib", "gzip"):
        decoded = inflate_bounded(data, want, gzip=codec_id == "gzip", what=what,
                                  exact=out is not None)
        return _fill_out(what, data, decoded, out)
    if codec_id == "zstd":
        return zstd_decode_bounded(impl, data, out, limit, what)
    if codec_id == "blosc":
        blosc_check_header(data, out, limit, what)
    elif codec_id == "lz4" and want is not None:
        b = memoryview(data).cast("B")
        declared = int.from_bytes(b[:4], "little", signed=True) if len(b) >= 4 else -1
        if declared < 0 or (declared != want if out is not None else declared > want):
            raise CodecError(f"{what}: {len(b)} stored bytes declare {declared} decoded bytes, "
                             f"expected {'' if out is not None else 'at most '}{want} bytes")
    elif codec_id in ("bz2", "lzma") and want is not None:
        import bz2
        import lzma

        d = bz2.BZ2Decompressor() if codec_id == "bz2" else lzma.LZMADecompressor()
        try:
            decoded = d.decompress(memoryview(data).cast("B"), want + 1)
        except (OSError, EOFError, lzma.LZMAError) as e:
            raise CodecError(f"{what}: cannot decompress {memoryview(data).nbytes} bytes: {e}"
                             ) from None
        if len(decoded) > want:
            raise _too_big(what, data, want, out is not None)
        if not d.eof:
            raise CodecError(f"{what}: {memoryview(data).nbytes} stored bytes end in the middle "
                             f"of the compressed stream (truncated chunk?)")
        if d.unused_data:
            raise CodecError(f"{what}: {len(d.unused_data)} bytes of trailing data after the "
                             f"compressed stream ({memoryview(data).nbytes} stored bytes)")
        return _fill_out(what, data, decoded, out)
    if out is not None:
        if codec_id in ("blosc", "lz4"):
            return impl.decode(data, out=out)  # sizes checked above
        # filters: numcodecs would reshape a wrong-sized result into ``out`` (or fail
        # with a reshape error); check the size and name both
        return _fill_out(what, data, impl.decode(data), out)
    return impl.decode(data)


def get_numcodecs_codec(config: Any, *, where: str) -> Any:
    """A numcodecs codec instance from its config dict; errors name ``where``."""
    if not isinstance(config, dict) or not isinstance(config.get("id"), str):
        raise UnknownCodecError(
            f"{where}: a numcodecs codec must be an object with a string 'id', got {config!r}"
        )
    try:
        codec = numcodecs.get_codec(dict(config))
    except ValueError as e:  # unknown id (or a bad value some codecs check)
        raise UnknownCodecError(f"{where}: unknown numcodecs codec {config['id']!r} or invalid "
                                f"configuration {config!r} ({e})") from None
    except Exception as e:  # noqa: BLE001 - TypeError, KeyError, OverflowError, ...
        raise UnknownCodecError(f"{where}: invalid configuration {config!r} ({e})") from None
    if config["id"] == "blosc":
        from numcodecs import blosc

        cname = codec.cname.decode() if isinstance(codec.cname, bytes) else codec.cname
        if cname not in blosc.list_compressors():
            raise UnknownCodecError(
                f"{where}: blosc cname {cname!r} is not one of {blosc.list_compressors()}"
            )
    return codec


@dataclass(frozen=True)
class NumcodecsCodec(BytesBytesCodec):
    """One numcodecs codec in a Zarr v2 chain."""

    config: dict = field(default_factory=dict, compare=True, hash=False)
    #: dtype to view the incoming bytes as when encoding (the first filter gets the chunk's)
    view_dtype: Any = field(default=None, compare=False, hash=False)
    codec: Any = field(default=None, compare=False, hash=False, repr=False)
    #: bound on what :meth:`decode` may produce without ``out`` (see ``limit``)
    max_decoded: int | None = field(default=None, compare=False, hash=False, repr=False)
    name = "numcodecs"

    @classmethod
    def from_config(cls, config: dict, *, where: str, view_dtype: Any = None,
                    max_decoded: int | None = None) -> NumcodecsCodec:
        return cls(config=dict(config), view_dtype=view_dtype,
                   codec=get_numcodecs_codec(config, where=where), max_decoded=max_decoded)

    @property
    def batch_codec(self) -> str | None:  # type: ignore[override]
        codec_id = self.config.get("id")
        return codec_id if codec_id in ("zstd", "blosc", "gzip", "zlib") else None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.config)

    # zarr-python gives a v2 array's compressor and filters as numcodecs objects, whose
    # settings libraries read as attributes (ome-zarr: ``a.compressors[0].cname``); this
    # codec answers the same names from its configuration

    @property
    def codec_id(self) -> Any:
        """The numcodecs codec id (``"blosc"``, ``"zstd"``...), as numcodecs names it."""
        return self.config.get("id")

    def get_config(self) -> dict[str, Any]:
        """The numcodecs configuration (with its ``"id"``), as numcodecs gives it."""
        return dict(self.config)

    def __getattr__(self, name: str) -> Any:
        config = self.__dict__.get("config")
        if not name.startswith("_") and name != "id" and config and name in config:
            return config[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r} "
                             f"(nor has numcodecs codec {self.codec_id!r} a setting "
                             f"of that name)" if config else name)

    def encode(self, data: Any) -> Any:
        if (self.view_dtype is not None and isinstance(data, np.ndarray)
                and data.dtype == np.uint8 and data.nbytes % self.view_dtype.itemsize == 0):
            data = data.view(self.view_dtype)
        try:
            return self.codec.encode(data)
        except MemoryError:
            raise  # out of memory is not bad data: the caller names what for
        except Exception as e:  # noqa: BLE001 - numcodecs raises anything
            raise CodecError(f"numcodecs {self.config.get('id')!r}: cannot encode: {e}") from e

    def decode(self, data: Any, out: Any = None, limit: int | None = None) -> Any:
        """Decode; into ``out`` when given (exactly its size), else at most ``limit`` bytes
        (default :attr:`max_decoded`) for the compressors that can inflate."""
        what = f"numcodecs {self.config.get('id')!r}"
        if limit is None:
            limit = self.max_decoded
        try:
            return decode_bounded(self.codec, self.config.get("id"), data, out, limit, what)
        except CodecError:
            raise
        except MemoryError:
            raise  # out of memory is not bad data: the caller names what for
        except Exception as e:  # noqa: BLE001
            raise CodecError(f"{what}: cannot decode: {e}") from e
