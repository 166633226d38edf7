"""Kernel selector: the compiled ``zarrfast._ext`` kernels, or their NumPy twins.

The twins in ``zarrfast.kernels.reference`` are used when ``ZARRFAST_PURE_PYTHON=1``
or when the extensions cannot be imported; ``USING_EXTENSIONS`` says which.
Both sets share names, signatures and errors.
"""

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from zarrfast._ext import _decode

__all__ = [
    "USING_EXTENSIONS",
    "byteswap_copy",
    "byteswap_inplace",
    "check_index",
    "copy_region",
    "copy_regions",
    "stream_min",
    "fill_region",
    "format_chunk_keys",
    "normalize_plain",
    "group_by_chunk",
    "is_uniform",
    "project",
    "box_table",
    "read_files_into",
    "open_nolinks",
    "transpose",
    "write_files",
    "write_region_files",
    "BATCH_CODECS",
    "ChunkDecoder",
    "Placement",
    "ShardFiles",
]


def _load():
    if os.environ.get("ZARRFAST_PURE_PYTHON") != "1":
        try:
            from zarrfast._ext import _assemble, _indexing, _shard_index
        except ImportError:
            pass
        else:
            return True, _assemble, _indexing, _shard_index
    from zarrfast.kernels import reference as _reference

    return False, _reference, _reference, _reference


USING_EXTENSIONS, _assemble, _indexing, _shard_index = _load()

copy_region = _assemble.copy_region
copy_regions = _assemble.copy_regions
fill_region = _assemble.fill_region
is_uniform = _assemble.is_uniform
transpose = _assemble.transpose
byteswap_inplace = _assemble.byteswap_inplace
byteswap_copy = _assemble.byteswap_copy
project = _indexing.project
box_table = _indexing.box_table
format_chunk_keys = _indexing.format_chunk_keys
normalize_plain = _indexing.normalize_plain
group_by_chunk = _indexing.group_by_chunk
check_index = _shard_index.check_index


def _stream_setting():
    """``_ext._decode.stream_threshold`` (the decoders' setting), if compiled."""
    if USING_EXTENSIONS:
        try:
            from zarrfast._ext import _decode
        except ImportError:  # pragma: no cover - built without it
            pass
        else:
            return _decode.stream_threshold
    return None


_stream_threshold = _stream_setting()


def stream_min() -> int:
    """The output size (bytes) from which the copy kernels write whole cache lines
    with streaming stores: the decoders' setting (``_decode.stream_threshold``), which
    ``copy_regions(stream=...)`` callers follow too; 32 MiB without the extensions."""
    return _stream_threshold() if _stream_threshold is not None else 32 * 2**20


def cold_announcements() -> int:  # (not in __all__: no twin, a counter of the compiled)
    """How many calls of the compiled file-reading kernels found a chunk out of the
    page cache (and so announced their other files to the kernel) in this
    process: a counter that callers compare before and after a read; always 0
    without the extensions."""
    if USING_EXTENSIONS:
        try:
            from zarrfast._ext import _decode
        except ImportError:  # pragma: no cover - built without it
            return 0
        return _decode.cold_announcements()
    return 0


def _load_page_buffer():
    """``_ext._fileio.PageBuffer`` (POSIX, compiled), or ``None``."""
    if not USING_EXTENSIONS:
        return None
    try:
        from zarrfast._ext._fileio import PageBuffer as cls
    except ImportError:  # pragma: no cover - Windows builds skip the module
        return None
    return cls


#: ``PageBuffer(size, keep=0, huge=True)``: anonymous pages on a 2 MiB boundary (huge
#: pages advised with ``huge``), a writable buffer whose pages go back to the system
#: without the GIL, or with ``keep`` are kept for the next of the same size (large
#: results and scratch buffers, see :func:`zarrfast.kernels.buffers.empty`);
#: ``None`` where it is not compiled
PageBuffer = _load_page_buffer()


def kept_pages() -> tuple[int, int]:
    """``(mappings, bytes)`` of results' pages kept for reuse (config
    ``result_page_cache``); ``(0, 0)`` where ``PageBuffer`` is not compiled."""
    if PageBuffer is None:
        return 0, 0
    from zarrfast._ext._fileio import kept_pages as kept

    return kept()


def release_kept_pages() -> None:
    """Give back to the system every result's pages kept for reuse."""
    if PageBuffer is not None:
        from zarrfast._ext._fileio import release_kept_pages as release

        release(0)


def _load_fileio(name: str):
    """A batched file kernel (``read_files_into``, ``write_files``): compiled on POSIX,
    else (or pure mode) the twin."""
    if USING_EXTENSIONS:
        try:
            from zarrfast._ext import _fileio
        except ImportError:  # pragma: no cover - Windows builds skip the module
            pass
        else:
            return getattr(_fileio, name)
    from zarrfast.kernels import reference as _reference

    return getattr(_reference, name)


read_files_into = _load_fileio("read_files_into")
write_files = _load_fileio("write_files")
write_region_files = _load_fileio("write_region_files")
open_nolinks = _load_fileio("open_nolinks")


#: the C functions ``_ext._decode`` binds, in ``bind_zstd``'s order
_ZSTD_FUNCTIONS = ("ZSTD_createDCtx", "ZSTD_freeDCtx", "ZSTD_decompressDCtx", "ZSTD_isError",
                   "ZSTD_getFrameContentSize", "ZSTD_versionNumber")
_BLOSC_FUNCTIONS = ("blosc_cbuffer_validate", "blosc_decompress_ctx", "blosc_compress_ctx")
#: ``bind_libdeflate``'s and ``bind_zlib_inflate``'s
_LIBDEFLATE_FUNCTIONS = ("libdeflate_alloc_decompressor", "libdeflate_free_decompressor",
                         "libdeflate_gzip_decompress_ex", "libdeflate_zlib_decompress_ex")
_INFLATE_FUNCTIONS = ("inflateInit2_", "inflate", "inflateEnd", "inflateReset2", "zlibVersion")
#: ``ZARRFAST_INFLATE``'s choices: libdeflate, else zlib's inflate (``auto``); zlib's
#: inflate only; neither (gzip and zlib chunks decoded one by one by the codecs)
_INFLATE_CHOICES = ("auto", "zlib", "off")


def _libraries(module: str, system: str):
    """Shared objects that may export a codec library's C API: numcodecs' extension
    ``module`` (which carries the library), then the system's ``system`` library
    (looked for only when needed: ``find_library`` runs programs)."""
    import ctypes.util
    import importlib

    try:
        yield importlib.import_module(module).__file__
    except ImportError:  # pragma: no cover - numcodecs is a dependency
        pass
    path = ctypes.util.find_library(system)
    if path:
        yield path


def _libdeflate_libraries():
    """Where libdeflate may be: Debian's ``libdeflate0`` by its soname (no program run),
    then the system's library by name."""
    import ctypes.util

    yield "libdeflate.so.0"
    path = ctypes.util.find_library("deflate")
    if path:
        yield path


def _zlib_libraries():
    """Where the zlib that Python's ``zlib`` module uses is found: that module's shared
    object (symbols are looked up through the libraries it loaded, libz among them),
    the process itself (``None``: a zlib built into Python), then libz by name."""
    import ctypes.util
    import zlib

    path = getattr(zlib, "__file__", None)
    if path:
        yield path
    yield None
    path = ctypes.util.find_library("z")
    if path:
        yield path


def _address(lib, name: str) -> int:
    import ctypes

    return ctypes.cast(getattr(lib, name), ctypes.c_void_p).value or 0


def _bind(decode, codec: str, libraries, bind) -> str | None:
    """Bind ``codec`` with the first library that exports its functions; its path."""
    import ctypes

    for path in libraries:
        try:
            bind(ctypes.CDLL(path))
        except (OSError, AttributeError, ValueError):
            continue
        return path
    return None


def _load_chunk_decoder():
    """``_ext._decode.ChunkDecoder`` and the codecs it could bind (none: callers decode
    chunk by chunk).  ``ZARRFAST_BATCH_DECODE=0`` turns it off.  Each codec library
    linked at build time is bound first; a build without it finds numcodecs' copy
    with ctypes (as does ``ZARRFAST_LINKED_CODECS=0``, which leaves the linked ones
    unused).  gzip and zlib are decoded with libdeflate, else zlib's inflate, both found
    with ctypes (``_bind_inflate``, ``ZARRFAST_INFLATE``).  ``CODEC_BINDINGS`` says which
    path each codec took."""
    if not USING_EXTENSIONS or os.environ.get("ZARRFAST_BATCH_DECODE", "1") == "0":
        return None, frozenset()
    try:
        from zarrfast._ext import _decode
    except ImportError:  # pragma: no cover - built without it
        return None, frozenset()

    def zstd(lib) -> None:
        _decode.bind_zstd(*(_address(lib, name) for name in _ZSTD_FUNCTIONS))

    def blosc(lib) -> None:
        import ctypes

        get_version = lib.blosc_get_version_string
        get_version.restype = ctypes.c_char_p
        version = get_version().decode("ascii", "replace")
        getitem = _address(lib, "blosc_getitem") if hasattr(lib, "blosc_getitem") else 0
        validate, decompress, compress = (_address(lib, name) for name in _BLOSC_FUNCTIONS)
        _decode.bind_blosc(validate, decompress, compress, version, getitem)
        blosc.version = version  # type: ignore[attr-defined]
        # the LZ4 this c-blosc compresses with (numcodecs' copy exports it): frames of LZ4
        # streams are then made by zarrfast, with the same bytes
        if hasattr(lib, "LZ4_compress_fast_extState") and hasattr(lib, "LZ4_sizeofState"):
            _decode.bind_lz4_compress(_address(lib, "LZ4_compress_fast_extState"),
                                      _address(lib, "LZ4_sizeofState"))
        # and its LZ4 decoder: frames of LZ4 blocks are undone by zarrfast where no LZ4
        # was linked at build time too (a new user's build decodes what a wheel does)
        if hasattr(lib, "LZ4_decompress_safe") and hasattr(_decode, "bind_lz4_decompress"):
            _decode.bind_lz4_decompress(_address(lib, "LZ4_decompress_safe"))

    use_linked = os.environ.get("ZARRFAST_LINKED_CODECS", "1") != "0"
    linked = _decode.linked_zstd() if use_linked else None
    if linked is not None:
        try:
            v = _decode.bind_zstd(*linked)
            CODEC_BINDINGS["zstd"] = f"linked at build time (zstd {v // 10000}.{v // 100 % 100}.{v % 100})"
        except ValueError as e:  # pragma: no cover - linked against too old a zstd
            CODEC_BINDINGS["zstd"] = f"not bound: {e}"
    if "zstd" not in _decode.bound():
        path = _bind(_decode, "zstd", _libraries("numcodecs.zstd", "zstd"), zstd)
        CODEC_BINDINGS["zstd"] = f"found with ctypes in {path}" if path else "not bound"
    # compression is bound to numcodecs' own c-blosc only: its bytes are numcodecs' bytes
    path = _bind(_decode, "blosc", _libraries("numcodecs.blosc", "blosc"), blosc)
    if path is not None:
        CODEC_BINDINGS["blosc"] = f"found with ctypes in {path} (c-blosc {blosc.version})"
    linked = _decode.linked_blosc() if use_linked else None
    if linked is not None:
        try:
            _decode.bind_blosc(linked[0], linked[1], 0, linked[2], linked[3])
            CODEC_BINDINGS["blosc"] = (f"linked at build time (c-blosc {linked[2]}); "
                                       f"compression: " + ("numcodecs' c-blosc" if path
                                                           else "numcodecs"))
        except ValueError as e:  # pragma: no cover - linked against an unusable c-blosc
            CODEC_BINDINGS.setdefault("blosc", f"not bound: {e}")
    CODEC_BINDINGS.setdefault("blosc", "not bound")
    if _decode.blosc_partial_bound():
        CODEC_BINDINGS["blosc"] += "; a region decodes only its blocks (blosc_getitem)"
    if "blosc" in _decode.bound():
        # frames of LZ4 or zstd blocks are undone by zarrfast itself (AVX2 where the CPU
        # has it), and frames of LZ4 streams made by it (with numcodecs' LZ4);
        # ZARRFAST_BLOSC_FRAMES=c-blosc (or scalar) chooses otherwise for both, and
        # ZARRFAST_LINKED_CODECS=0 leaves the linked LZ4 unused too (numcodecs' decodes)
        _decode.use_linked_lz4(use_linked)
        choice = os.environ.get("ZARRFAST_BLOSC_FRAMES", "auto")
        try:
            _decode.set_blosc_frames(choice)
        except ValueError as e:
            CODEC_BINDINGS["blosc"] += f"; ZARRFAST_BLOSC_FRAMES ignored: {e}"
        frames = _decode.blosc_frames()
        if "lz4" in frames.partition(": ")[2].split(", "):
            frames += (" (LZ4 linked at build time)" if use_linked and _decode.linked_lz4()
                       else " (numcodecs' LZ4)")
        CODEC_BINDINGS["blosc"] += ("; every frame decoded by c-blosc" if frames == "c-blosc"
                                    else f"; frames decoded by {frames}, the rest by c-blosc")
        encoder = _decode.blosc_encoder()
        if encoder != "c-blosc":
            CODEC_BINDINGS["blosc"] += f"; frames made by {encoder} (numcodecs' LZ4)"
    _bind_inflate(_decode)
    global blosc_compress, blosc_compress_regions
    if _decode.blosc_compress_bound():
        blosc_compress = _decode.blosc_compress
        blosc_compress_regions = _decode.blosc_compress_regions
    return _decode.ChunkDecoder, _decode.bound()


def _bind_inflate(_decode) -> None:
    """Bind gzip and zlib decoding (``_decode.bind_libdeflate``, else
    ``bind_zlib_inflate``) as ``ZARRFAST_INFLATE`` says (``auto``: libdeflate, else the
    zlib of Python's ``zlib`` module; ``zlib``: that zlib; ``off``: neither)."""
    import ctypes

    choice = os.environ.get("ZARRFAST_INFLATE", "auto")
    note = ""
    if choice not in _INFLATE_CHOICES:
        note = f"; ZARRFAST_INFLATE={choice!r} ignored (not one of {', '.join(_INFLATE_CHOICES)})"
        choice = "auto"
    how = "not bound (ZARRFAST_INFLATE=off)" if choice == "off" else "not bound"
    if choice == "auto":
        for path in _libdeflate_libraries():
            try:
                lib = ctypes.CDLL(path)
                _decode.bind_libdeflate(*(_address(lib, n) for n in _LIBDEFLATE_FUNCTIONS))
            except (OSError, AttributeError, ValueError):
                continue
            how = f"found with ctypes in {path} (libdeflate)"
            break
    if choice != "off":
        for path in _zlib_libraries():
            try:
                lib = ctypes.CDLL(path)
                version = _decode.bind_zlib_inflate(*(_address(lib, n)
                                                      for n in _INFLATE_FUNCTIONS))
            except (OSError, AttributeError, ValueError, TypeError):  # (TypeError: no process handle)
                continue
            if _decode.inflate_with() == "zlib":
                where = path if path is not None else "the Python process"
                how = f"found with ctypes in {where} (zlib {version}'s inflate)"
            break
    CODEC_BINDINGS["gzip"] = CODEC_BINDINGS["zlib"] = how + note


#: how the batched decoder got each codec library: ``"linked at build time (...)"``,
#: ``"found with ctypes in <path>"`` (numcodecs' copy; for gzip and zlib libdeflate, or
#: the zlib of Python's ``zlib`` module) or ``"not bound"``
CODEC_BINDINGS: dict[str, str] = {}

#: ``blosc_compress(src, clevel, shuffle, typesize, cname, blocksize) -> bytes`` (c-blosc
#: bound by ``_ext._decode``, GIL released), or ``None``: numcodecs encodes
blosc_compress = None
#: ``blosc_compress_regions(src, src_offsets, src_strides, dst_strides, shape, itemsize,
#: swap_unit, fill, scratch, out, clevel, shuffle, typesize, cname, blocksize) -> sizes``:
#: many whole chunks copied out of an array and compressed in one ``nogil`` loop (bound
#: with ``blosc_compress``), or ``None``; twin ``reference.blosc_compress_regions``
blosc_compress_regions = None


#: ``ChunkDecoder(codec, nbytes).decode_regions(...)`` (``_ext._decode``) for the codecs
#: in ``BATCH_CODECS``, or ``None``
ChunkDecoder, BATCH_CODECS = _load_chunk_decoder()
#: ``ShardFiles(...).read(decoder, g)`` (``_ext._decode``): whole shards read, their
#: index checked and their inner chunks placed with a ``ChunkDecoder``, one call per
#: shard; ``None`` with ``ChunkDecoder``
ShardFiles: "type[_decode.ShardFiles] | None" = None
if ChunkDecoder is not None:
    from zarrfast._ext._decode import ShardFiles
#: ``Placement(nbytes, chunk_offsets, chunk_strides, dst, dst_offsets, dst_strides,
#: shapes, itemsize, swap_unit, direct)`` (or ``Placement.box(...)``): where each chunk
#: a ``ChunkDecoder`` call or ``ShardFiles`` decodes goes, validated once; the
#: compiled one with ``ChunkDecoder``, else the twin (which places nothing faster)
if ChunkDecoder is not None:
    from zarrfast._ext._decode import Placement
else:
    from zarrfast.kernels.reference import Placement  # type: ignore[assignment]  # (its twin)
#: its statuses (the compiled module and the twin share them)
DECODED, NO_DATA, FAILED = 0, 1, 2
