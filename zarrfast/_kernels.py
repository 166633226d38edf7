"""Kernel selector: the compiled ``zarrfast._ext`` kernels, or their NumPy twins.

The twins in ``zarrfast._reference`` are used when ``ZARRFAST_PURE_PYTHON=1``
or when the extensions cannot be imported; ``USING_EXTENSIONS`` says which.
Both sets share names, signatures and errors.
"""

import os

__all__ = [
    "USING_EXTENSIONS",
    "byteswap_copy",
    "byteswap_inplace",
    "check_index",
    "copy_region",
    "copy_regions",
    "fill_region",
    "format_chunk_keys",
    "group_by_chunk",
    "is_uniform",
    "project",
    "read_files_into",
    "transpose",
    "ZstdDecoder",
]


def _load():
    if os.environ.get("ZARRFAST_PURE_PYTHON") != "1":
        try:
            from zarrfast._ext import (
                _assemble,
                _byteswap,
                _indexing,
                _shard_index,
                _transpose,
            )
        except ImportError:
            pass
        else:
            return True, _assemble, _byteswap, _indexing, _shard_index, _transpose
    from zarrfast import _reference

    return False, _reference, _reference, _reference, _reference, _reference


USING_EXTENSIONS, _assemble, _byteswap, _indexing, _shard_index, _transpose = _load()

copy_region = _assemble.copy_region
copy_regions = _assemble.copy_regions
fill_region = _assemble.fill_region
is_uniform = _assemble.is_uniform
transpose = _transpose.transpose
byteswap_inplace = _byteswap.byteswap_inplace
byteswap_copy = _byteswap.byteswap_copy
project = _indexing.project
format_chunk_keys = _indexing.format_chunk_keys
group_by_chunk = _indexing.group_by_chunk
check_index = _shard_index.check_index


def _load_fileio():
    """The batched file reader: compiled on POSIX, else (or pure mode) the twin."""
    if USING_EXTENSIONS:
        try:
            from zarrfast._ext import _fileio
        except ImportError:  # pragma: no cover - Windows builds skip the module
            pass
        else:
            return _fileio.read_files_into
    from zarrfast._reference import read_files_into as twin

    return twin


read_files_into = _load_fileio()


#: the C functions ``_ext._decode`` binds, in ``bind_zstd``'s order
_ZSTD_FUNCTIONS = ("ZSTD_createDCtx", "ZSTD_freeDCtx", "ZSTD_decompressDCtx", "ZSTD_isError",
                   "ZSTD_getFrameContentSize", "ZSTD_versionNumber")


def _zstd_libraries() -> list[str]:
    """Shared objects that may export zstd's C API: numcodecs' zstd extension (which
    carries the library), then the system's libzstd."""
    import ctypes.util

    found = []
    try:
        import numcodecs.zstd

        found.append(numcodecs.zstd.__file__)
    except ImportError:  # pragma: no cover - numcodecs is a dependency
        pass
    system = ctypes.util.find_library("zstd")
    if system:
        found.append(system)
    return found


def _load_zstd_decoder():
    """The batched zstd decoder of ``_ext._decode`` once it is bound to a zstd library,
    else ``None`` (callers then decode chunk by chunk)."""
    if not USING_EXTENSIONS or os.environ.get("ZARRFAST_BATCH_DECODE", "1") == "0":
        return None
    try:
        from zarrfast._ext import _decode
    except ImportError:  # pragma: no cover - built without it
        return None
    import ctypes

    for path in _zstd_libraries():
        if _decode.zstd_bound():
            break
        try:
            lib = ctypes.CDLL(path)
            _decode.bind_zstd(*(ctypes.cast(getattr(lib, name), ctypes.c_void_p).value or 0
                                for name in _ZSTD_FUNCTIONS))
        except (OSError, AttributeError, ValueError):
            continue
    return _decode.ZstdDecoder if _decode.zstd_bound() else None


#: ``ZstdDecoder(nbytes).decode_regions(...)`` (``_ext._decode``), or ``None``
ZstdDecoder = _load_zstd_decoder()
