"""The batched chunk encoder: ``_ext._encode.ChunkEncoder`` bound to its libraries.

``ChunkEncoder(codec, level, checksum=False)`` compresses many whole chunks gathered
out of a written value in one ``nogil`` call (``compress_regions``) into zstd frames,
gzip members or zlib streams: the bytes numcodecs' ``Zstd``, ``GZip`` and ``Zlib``
encode.  ``ENCODE_CODECS`` names the formats it can make here; where it cannot
(``ChunkEncoder`` is ``None``, or a format is missing) the engine encodes chunk by
chunk with the codecs.  Twin: ``zarrfast.kernels.reference.ChunkEncoder``.

zstd's compression is bound to numcodecs' own zstd, found with ctypes, so that the
frames are numcodecs' (zstd versions give other bytes from level 5 on); where its
extension does not export the compression functions, to a zstd linked at build time
(unless ``ZARRFAST_LINKED_CODECS=0``).  gzip and zlib are bound to the zlib that
Python's ``zlib`` module uses (``zlib.compress``'s bytes, which numcodecs calls).
``ZARRFAST_BATCH_ENCODE=0`` turns the batched encoder off.  ``ENCODER_BINDINGS`` says
where each library was found.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from zarrfast.kernels import USING_EXTENSIONS, _address, _bind, _zlib_libraries

__all__ = ["ENCODER_BINDINGS", "ENCODE_CODECS", "ChunkEncoder"]

#: the C functions ``_ext._encode`` binds, in ``bind_zstd``'s and ``bind_zlib``'s order
_ZSTD_COMPRESS = ("ZSTD_createCCtx", "ZSTD_freeCCtx", "ZSTD_CCtx_setParameter",
                  "ZSTD_compress2", "ZSTD_compressBound", "ZSTD_isError", "ZSTD_versionNumber")
_ZLIB_FUNCTIONS = ("deflateInit2_", "deflate", "deflateEnd", "deflateReset", "deflateBound",
                   "crc32", "zlibVersion")


def _numcodecs_zstd() -> Iterator[str]:
    try:
        import numcodecs.zstd as module
    except ImportError:  # pragma: no cover - numcodecs is a dependency
        return
    yield module.__file__


def _load() -> tuple[Any, frozenset[str]]:
    """``_ext._encode.ChunkEncoder`` with its libraries bound, and the formats it can
    make; ``(None, frozenset())`` when it is off or not compiled."""
    if not USING_EXTENSIONS or os.environ.get("ZARRFAST_BATCH_ENCODE", "1") == "0":
        return None, frozenset()
    try:
        from zarrfast._ext import _encode
    except ImportError:  # pragma: no cover - built without it
        return None, frozenset()

    def zstd(lib: Any) -> None:
        _encode.bind_zstd(*(_address(lib, name) for name in _ZSTD_COMPRESS))

    def zlib(lib: Any) -> None:
        _encode.bind_zlib(*(_address(lib, name) for name in _ZLIB_FUNCTIONS))

    path = _bind(_encode, "zstd", _numcodecs_zstd(), zstd)
    ENCODER_BINDINGS["zstd"] = f"found with ctypes in {path}" if path else "not bound"
    if path is None and os.environ.get("ZARRFAST_LINKED_CODECS", "1") != "0":
        linked = _encode.linked_zstd()
        if linked is not None:
            try:
                v = _encode.bind_zstd(*linked)
                ENCODER_BINDINGS["zstd"] = (f"linked at build time (zstd {v // 10000}."
                                            f"{v // 100 % 100}.{v % 100})")
            except ValueError as e:  # pragma: no cover - linked against too old a zstd
                ENCODER_BINDINGS["zstd"] = f"not bound: {e}"
    _bind(_encode, "zlib", _zlib_libraries(), zlib)
    ENCODER_BINDINGS["zlib"] = ("found with ctypes" if "zlib" in _encode.bound()
                                else "not bound")
    return _encode.ChunkEncoder, _encode.bound()


#: where the batched encoder found each library (``"zstd"``, ``"zlib"``)
ENCODER_BINDINGS: dict[str, str] = {}
#: ``ChunkEncoder(codec, level, checksum=False)`` (``_ext._encode``) for the formats in
#: ``ENCODE_CODECS`` (``"zstd"``, ``"gzip"``, ``"zlib"``), or ``None``
ChunkEncoder, ENCODE_CODECS = _load()
