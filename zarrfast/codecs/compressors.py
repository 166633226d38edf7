"""Compression codecs (bytes -> bytes), delegated to numcodecs.

* ``gzip`` — https://zarr-specs.readthedocs.io/en/latest/v3/codecs/gzip/ —
  ``{"name": "gzip", "configuration": {"level": 5}}`` (level 0–9).
* ``zstd`` — zarr-extensions ``codecs/zstd`` —
  ``{"name": "zstd", "configuration": {"level": 0, "checksum": false}}``.
* ``blosc`` — https://zarr-specs.readthedocs.io/en/latest/v3/codecs/blosc/ —
  ``{"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5,
  "shuffle": "shuffle", "typesize": 4, "blocksize": 0}}``.

numcodecs releases the GIL while (de)compressing, so chunks decode in
parallel on the thread pool.  Where the decoded size is known the pipeline
passes a buffer to decode into (zstd and blosc fill it directly).
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass, field
from typing import Any, ClassVar

import crc32c  # imported up front: its import reads ~190 KB of files, not on a first read
import numcodecs
import numpy as np

from zarrfast.codecs._base import BytesBytesCodec, parse_named_config
from zarrfast.codecs._deprecated_enum import DeprecatedStrEnumMeta, coerce_enum_input
from zarrfast.errors import ChecksumError, CodecError, MetadataValidationError

# -- bounded decompression ---------------------------------------------------------------
#
# A stored chunk is untrusted input: a few KiB of zstd/gzip/blosc can claim or inflate to
# gigabytes.  Every decoder below is given the size the chunk must decode to (the length
# of ``out``, or ``limit``) and refuses, before allocating, anything larger; streams that
# decode to fewer bytes, truncated or trailing data are refused too.  Messages give the
# stored size and both decoded sizes (the pipeline adds the store key).


def _nbytes(data: Any) -> int:
    return memoryview(data).nbytes


def _too_big(what: str, data: Any, limit: int, exact: bool = True) -> CodecError:
    expected = f"{limit} bytes" if exact else f"at most {limit} bytes"
    return CodecError(
        f"{what}: {_nbytes(data)} stored bytes decode to more than {limit} bytes, expected "
        f"{expected}; refusing to decompress"
    )


def _fill_out(what: str, data: Any, decoded: Any, out: Any) -> Any:
    """``decoded`` checked against ``out``'s size and copied into it (returns ``out``)."""
    if out is None:
        return decoded
    n, want = _nbytes(decoded), _nbytes(out)
    if n != want:
        raise CodecError(f"{what}: {_nbytes(data)} stored bytes decode to {n} bytes, expected "
                         f"{want} bytes")
    memoryview(out).cast("B")[:] = memoryview(decoded).cast("B")
    return out


def inflate_bounded(data: Any, limit: int | None, *, gzip: bool, what: str,
                    exact: bool = True) -> bytes:
    """zlib (``gzip=False``) or gzip (every member) decompression of at most ``limit`` bytes."""
    import zlib

    view = memoryview(data).cast("B")
    parts: list[bytes] = []
    total = 0
    while True:
        d = zlib.decompressobj(31 if gzip else 15)
        try:
            part = d.decompress(view, 0 if limit is None else limit - total + 1)
        except zlib.error as e:
            raise CodecError(f"{what}: cannot decompress {len(view)} bytes: {e}") from None
        total += len(part)
        if limit is not None and total > limit:
            raise _too_big(what, data, limit, exact)
        if not d.eof:
            raise CodecError(f"{what}: {len(view)} stored bytes end in the middle of the "
                             f"compressed stream (truncated chunk?)")
        parts.append(part)
        rest = d.unused_data
        if not rest.strip(b"\0"):
            break  # gzip readers ignore zero padding after the last member
        if not gzip:
            raise CodecError(f"{what}: {len(rest)} bytes of trailing data after the "
                             f"compressed stream ({_nbytes(data)} stored bytes)")
        view = memoryview(rest)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _zstd_content_size(data: Any) -> int | None:
    """The decompressed size a zstd frame header declares, ``None`` if it declares none."""
    b = memoryview(data).cast("B")
    if len(b) < 5 or bytes(b[:4]) != b"\x28\xb5\x2f\xfd":
        return None  # not a zstd frame (or a skippable one): zstd itself will say
    fhd = b[4]
    fcs_flag, single, dict_flag = fhd >> 6, (fhd >> 5) & 1, fhd & 3
    pos = 5 + (0 if single else 1) + (0, 1, 2, 4)[dict_flag]
    size = (1 if single else 0, 2, 4, 8)[fcs_flag]
    if size == 0 or len(b) < pos + size:
        return None
    value = int.from_bytes(b[pos:pos + size], "little")
    return value + 256 if size == 2 else value


try:  # releases the GIL while decompressing (numcodecs 0.16's Zstd holds it)
    import zstandard as _zstandard
except ImportError:  # pragma: no cover - an optional accelerator
    _zstandard = None


class _ZstdContexts(threading.local):
    dctx: Any = None


_zstd_tls = _ZstdContexts()


def _zstd_fast(data: Any, want: int | None, declared: int | None) -> bytes | None:
    """One frame decoded by python-zstandard with the GIL released (so chunks decode in
    parallel on the pool), or ``None`` when it cannot say: no zstandard, no size to
    bound the output by, several frames, or an error; the numcodecs path then decides
    (and words the error)."""
    if _zstandard is None or (want is None and declared is None):
        return None
    dctx = _zstd_tls.dctx
    if dctx is None:
        dctx = _zstd_tls.dctx = _zstandard.ZstdDecompressor()
    try:
        return dctx.decompress(data, max_output_size=0 if declared is not None else want,
                               allow_extra_data=False)
    except _zstandard.ZstdError:
        return None


def zstd_decode_bounded(impl: Any, data: Any, out: Any, limit: int | None,
                        what: str = "zstd") -> Any:
    """zstd decoding into ``out`` (exactly its size) or of at most ``limit`` bytes."""
    want = _nbytes(out) if out is not None else limit
    declared = _zstd_content_size(data)
    if want is not None and declared is not None:
        if out is not None and declared != want or declared > want:
            raise CodecError(f"{what}: {_nbytes(data)} stored bytes declare {declared} decoded "
                             f"bytes, expected {'' if out is not None else 'at most '}{want} "
                             f"bytes")
    fast = _zstd_fast(data, want, declared)
    if fast is not None and (out is None or len(fast) == want):
        if out is None:
            return fast
        memoryview(out).cast("B")[:] = fast
        return out
    if out is not None:
        try:
            return impl.decode(data, out=out)  # numcodecs stops at the end of ``out``
        except Exception as e:  # noqa: BLE001
            if "too small" in str(e):
                raise _too_big(what, data, want) from None
            raise
    if want is None or declared is not None:
        return impl.decode(data)
    # no declared size: decode into a buffer of the limit; zstd reports the true size
    import re

    buf = np.empty(want, dtype=np.uint8)
    try:
        return impl.decode(data, out=buf)
    except Exception as e:  # noqa: BLE001 - numcodecs raises RuntimeError
        if "too small" in str(e):
            raise _too_big(what, data, want, exact=False) from None
        m = re.search(r"expected to decompress \d+, got (\d+)", str(e))
        if m is None:
            raise
    small = np.empty(int(m.group(1)), dtype=np.uint8)
    return impl.decode(data, out=small)


def blosc_check_header(data: Any, out: Any, limit: int | None, what: str = "blosc") -> None:
    """Check a blosc buffer's 16-byte header against the stored and expected sizes before
    C-blosc reads it (a truncated buffer would be read past its end)."""
    b = memoryview(data).cast("B")
    if len(b) < 16:
        raise CodecError(f"{what}: {len(b)} stored bytes are too short for a blosc header")
    nbytes = int.from_bytes(b[4:8], "little")
    cbytes = int.from_bytes(b[12:16], "little")
    if cbytes != len(b):
        raise CodecError(f"{what}: the blosc header says {cbytes} stored bytes, the chunk has "
                         f"{len(b)} (truncated or trailing data)")
    want = _nbytes(out) if out is not None else limit
    if want is not None and (nbytes != want if out is not None else nbytes > want):
        raise CodecError(f"{what}: {len(b)} stored bytes declare {nbytes} decoded bytes, "
                         f"expected {'' if out is not None else 'at most '}{want} bytes")


def _int_in(config: dict, key: str, lo: int, hi: int, codec: str, default: Any = None) -> int:
    if key not in config:
        if default is None:
            raise MetadataValidationError(f"{codec} codec: missing configuration member {key!r}")
        return default
    v = config[key]
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise MetadataValidationError(
            f"{codec} codec: {key} must be an integer in [{lo}, {hi}], got {v!r}"
        )
    return v


class _Local(threading.local):
    codec: Any = None


@dataclass(frozen=True)
class GzipCodec(BytesBytesCodec):
    """``gzip``: chunks compressed as gzip (RFC 1952), as numcodecs' ``GZip`` writes them.

    A bytes -> bytes codec recorded as
    ``{"name": "gzip", "configuration": {"level": 5}}``.  Compression is numcodecs'
    (zlib); decompression is bounded by the chunk's size, so a small stored chunk
    cannot inflate to gigabytes.

    Parameters
    ----------
    level : int, default 5
        The compression level, 0 (none) to 9 (smallest, slowest).

    Raises
    ------
    MetadataValidationError
        ``level`` is not an integer in [0, 9].

    Examples
    --------
    >>> from zarrfast.codecs import GzipCodec
    >>> arr = zarrfast.create_array(store={}, shape=(1000,), chunks=(100,), dtype="int32",
    ...                             compressors=[GzipCodec(level=6)])
    >>> arr[:] = np.arange(1000)
    >>> arr.compressors
    (GzipCodec(level=6),)
    >>> int(arr[999])
    999
    """

    level: int = 5
    name = "gzip"
    aliases = ("https://purl.org/zarr/spec/codec/gzip/1.0",)
    # (one member of the chunk's size is decoded by the batched decoder, the same bytes;
    # anything else -- several members, padding, a wrong size -- it leaves to decode)
    batch_codec = "gzip"
    _impl: Any = field(default=None, init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        _int_in({"level": self.level}, "level", 0, 9, "gzip")
        object.__setattr__(self, "_impl", numcodecs.GZip(level=self.level))

    @classmethod
    def from_dict(cls, data: Any) -> GzipCodec:
        """Make the codec from its metadata object.

        Parameters
        ----------
        data : dict
            ``{"name": "gzip", "configuration": {"level": ...}}`` (``level`` is
            required; the draft URI is accepted as the name).

        Returns
        -------
        GzipCodec
            The codec.

        Raises
        ------
        MetadataValidationError
            Another name, no ``level``, a bad ``level`` or an unknown member.
        """
        config = parse_named_config(data, (cls.name, *cls.aliases), allowed=("level",))
        return cls(level=_int_in(config, "level", 0, 9, "gzip"))

    def to_dict(self) -> dict[str, Any]:
        """Give the codec's metadata object.

        Returns
        -------
        dict
            ``{"name": "gzip", "configuration": {"level": ...}}``.
        """
        return {"name": "gzip", "configuration": {"level": self.level}}

    def encode(self, data: Any) -> bytes:
        """Compress bytes into one gzip member (numcodecs' ``GZip``).

        Parameters
        ----------
        data : bytes-like
            The bytes to compress.

        Returns
        -------
        bytes
            The gzip data.
        """
        return self._impl.encode(data)

    def decode(self, data: Any, out: Any = None, limit: int | None = None) -> Any:
        """Decode ``data``, refusing output larger than expected before allocating it.

        Parameters
        ----------
        data : bytes-like
            The stored bytes.
        out : writable buffer, optional
            A buffer of exactly the decoded size, filled when given.
        limit : int, optional
            Without ``out``: the most bytes to accept (the chain passes a bound from
            the chunk's size).

        Returns
        -------
        bytes-like
            The decoded bytes (``out`` when it is given).

        Raises
        ------
        CodecError
            The data do not decompress, are truncated or followed by other data, or
            decode to more than ``limit`` (to another size than ``out``'s); the message
            gives the stored and decoded sizes.
        """
        bound = _nbytes(out) if out is not None else limit
        decoded = inflate_bounded(data, bound, gzip=True, what="gzip", exact=out is not None)
        return _fill_out("gzip", data, decoded, out)


@dataclass(frozen=True)
class ZstdCodec(BytesBytesCodec):
    """``zstd``: chunks compressed as one Zstandard frame, zarrfast's default compressor.

    A bytes -> bytes codec recorded as
    ``{"name": "zstd", "configuration": {"level": 0, "checksum": false}}``
    (zarr-extensions ``codecs/zstd``).  Compression is numcodecs' ``Zstd`` (libzstd),
    giving the bytes zarr-python writes; the frame declares its decompressed size.
    Chunks of plain chains decode in the batched decoder without the GIL, and every
    decode is bounded by the chunk's size.

    Parameters
    ----------
    level : int, default 0
        The compression level, -131072 to 22: 0 is libzstd's default (3), negative
        levels are faster, higher ones compress more and more slowly.
    checksum : bool, default False
        Store a checksum of the content in the frame (4 bytes), checked on decoding.

    Raises
    ------
    MetadataValidationError
        ``level`` is not an integer in range, or ``checksum`` is not a bool.

    Examples
    --------
    >>> from zarrfast.codecs import ZstdCodec
    >>> arr = zarrfast.create_array(store={}, shape=(1000,), chunks=(100,), dtype="float32",
    ...                             compressors=[ZstdCodec(level=3, checksum=True)])
    >>> arr[:] = np.arange(1000)
    >>> arr.compressors
    (ZstdCodec(level=3, checksum=True),)
    >>> arr.metadata.to_dict()["codecs"][-1]
    {'name': 'zstd', 'configuration': {'level': 3, 'checksum': True}}
    >>> float(arr[500])
    500.0
    """

    level: int = 0
    checksum: bool = False
    name = "zstd"
    aliases = ("https://purl.org/zarr/spec/codec/zstd/1.0",)
    batch_codec = "zstd"
    _impl: Any = field(default=None, init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        _int_in({"level": self.level}, "level", -131072, 22, "zstd")
        if not isinstance(self.checksum, bool):
            raise MetadataValidationError(
                f"zstd codec: checksum must be true or false, got {self.checksum!r}"
            )
        object.__setattr__(self, "_impl", numcodecs.Zstd(level=self.level, checksum=self.checksum))

    @classmethod
    def from_dict(cls, data: Any) -> ZstdCodec:
        """Make the codec from its metadata object.

        Parameters
        ----------
        data : dict or str
            ``{"name": "zstd", "configuration": {"level": ..., "checksum": ...}}``; a
            member left out takes its default (the bare name ``"zstd"`` and the draft
            URI are accepted).

        Returns
        -------
        ZstdCodec
            The codec.

        Raises
        ------
        MetadataValidationError
            Another name, a bad value or an unknown member.
        """
        config = parse_named_config(
            data, (cls.name, *cls.aliases), allowed=("level", "checksum")
        )
        level = _int_in(config, "level", -131072, 22, "zstd", default=0)
        return cls(level=level, checksum=config.get("checksum", False))

    def to_dict(self) -> dict[str, Any]:
        """Give the codec's metadata object.

        Returns
        -------
        dict
            ``{"name": "zstd", "configuration": {"level": ..., "checksum": ...}}``.
        """
        return {"name": "zstd", "configuration": {"level": self.level, "checksum": self.checksum}}

    def encode(self, data: Any) -> bytes:
        """Compress bytes into one zstd frame (numcodecs' ``Zstd``, the GIL released).

        Parameters
        ----------
        data : bytes-like
            The bytes to compress.

        Returns
        -------
        bytes
            The zstd frame.
        """
        # numcodecs (it releases the GIL): its libzstd gives the bytes zarr-python writes
        return self._impl.encode(data)

    @property
    def decodes_own_buffer(self) -> bool:
        """Whether decoding is faster without an output buffer (python-zstandard
        allocates its own, with the GIL released)."""
        return _zstandard is not None

    def decode(self, data: Any, out: Any = None, limit: int | None = None) -> Any:
        """Decode ``data``, refusing output larger than expected before allocating it.

        Parameters
        ----------
        data : bytes-like
            The stored bytes.
        out : writable buffer, optional
            A buffer of exactly the decoded size, filled when given.
        limit : int, optional
            Without ``out``: the most bytes to accept (the chain passes a bound from
            the chunk's size).

        Returns
        -------
        bytes-like
            The decoded bytes (``out`` when it is given).

        Raises
        ------
        CodecError
            The data do not decompress, are truncated or followed by other data, or
            decode to more than ``limit`` (to another size than ``out``'s); the message
            gives the stored and decoded sizes.
        """
        try:
            return zstd_decode_bounded(self._impl, data, out, limit)
        except CodecError:
            raise
        except MemoryError:
            raise  # out of memory is not bad data: the caller names what for
        except Exception as e:  # noqa: BLE001
            raise CodecError(f"zstd: cannot decompress {_nbytes(data)} bytes: {e}") from e


_SHUFFLE = {"noshuffle": 0, "shuffle": 1, "bitshuffle": 2}


class BloscShuffle(metaclass=DeprecatedStrEnumMeta):
    """Deprecated (zarr-python 3.4): pass ``"noshuffle"``, ``"shuffle"`` or
    ``"bitshuffle"`` to [zarrfast.codecs.BloscCodec][] instead.

    ``noshuffle`` compresses the bytes as they are; ``shuffle`` groups the bytes of
    the elements by position (first bytes, then second bytes, ...); ``bitshuffle``
    does so bit by bit.  ``BloscShuffle.shuffle`` is the string ``"shuffle"``, with a
    ``DeprecationWarning``, as in zarr-python 3.4.

    Examples
    --------
    >>> from zarrfast.codecs import BloscShuffle
    >>> BloscShuffle.from_int(2)
    'bitshuffle'
    """

    _members: ClassVar[dict[str, str]] = {
        "noshuffle": "noshuffle", "shuffle": "shuffle", "bitshuffle": "bitshuffle"}

    @staticmethod
    def from_int(num: int) -> str:
        """Give the shuffle for numcodecs' shuffle number.

        Parameters
        ----------
        num : int
            0 (``noshuffle``), 1 (``shuffle``) or 2 (``bitshuffle``), as in
            ``numcodecs.Blosc``.

        Returns
        -------
        str
            The shuffle's name.

        Raises
        ------
        ValueError
            Another value (``bool`` included).

        Examples
        --------
        >>> from zarrfast.codecs import BloscShuffle
        >>> BloscShuffle.from_int(1)
        'shuffle'
        """
        names = {0: "noshuffle", 1: "shuffle", 2: "bitshuffle"}
        if isinstance(num, bool) or num not in names:
            raise ValueError(f"Value must be between 0 and 2. Got {num}.")
        return names[num]


class BloscCname(metaclass=DeprecatedStrEnumMeta):
    """Deprecated (zarr-python 3.4): pass the compressor's name to BloscCodec instead.

    The names: ``"lz4"``, ``"lz4hc"``, ``"blosclz"``, ``"snappy"``, ``"zlib"`` and
    ``"zstd"`` (see [zarrfast.codecs.BloscCodec][]).

    ``BloscCname.zstd`` is the string ``"zstd"``, with a ``DeprecationWarning``, as in
    zarr-python 3.4.  Whether a compressor can compress depends on the c-blosc build
    (``snappy`` is often left out).

    Examples
    --------
    >>> import warnings
    >>> from zarrfast.codecs import BloscCname
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", DeprecationWarning)
    ...     BloscCname.lz4
    'lz4'
    """

    _members: ClassVar[dict[str, str]] = {
        "lz4": "lz4", "lz4hc": "lz4hc", "blosclz": "blosclz", "snappy": "snappy",
        "zstd": "zstd", "zlib": "zlib"}


@functools.cache
def _blosc_compressors() -> list[str]:
    from numcodecs import blosc

    return list(blosc.list_compressors())
_CNAMES = ("lz4", "lz4hc", "blosclz", "zstd", "snappy", "zlib")


@dataclass(frozen=True, repr=False)
class BloscCodec(BytesBytesCodec):
    """``blosc``: chunks compressed by c-blosc (a blosc1 frame), with an optional shuffle.

    A bytes -> bytes codec recorded as ``{"name": "blosc", "configuration": {"typesize":
    4, "cname": "lz4", "clevel": 5, "shuffle": "shuffle", "blocksize": 0}}``.  c-blosc
    compresses with one internal thread and the GIL released, giving the bytes of
    numcodecs' ``Blosc``; a frame starts with a 16-byte header declaring its sizes,
    which decoding checks first.  ``shuffle`` and ``typesize`` left as ``None`` are
    chosen from the array's data type when it is created, as zarr-python does:
    ``typesize`` its item size, ``shuffle`` ``"bitshuffle"`` for 1-byte items, else
    ``"shuffle"``.

    Parameters
    ----------
    cname : str, default "zstd"
        The compressor: ``"lz4"``, ``"lz4hc"``, ``"blosclz"``, ``"zstd"``, ``"snappy"`` or
        ``"zlib"``.
    clevel : int, default 5
        The compression level, 0 (none) to 9.
    shuffle : str, optional
        ``"noshuffle"``, ``"shuffle"`` (byte shuffle) or ``"bitshuffle"``; ``None``
        (the default) chooses when the array is created.
    typesize : int, optional
        The element size the shuffle works with, 1 to 255; ``None`` (the default)
        takes the array's item size when it is created.
    blocksize : int, default 0
        The size of the blocks blosc compresses separately; 0 lets blosc choose.

    Raises
    ------
    MetadataValidationError
        A value out of range or not one of those listed.

    Examples
    --------
    >>> from zarrfast.codecs import BloscCodec
    >>> arr = zarrfast.create_array(store={}, shape=(1000,), chunks=(100,), dtype="int16",
    ...                             compressors=[BloscCodec(cname="lz4", clevel=5)])
    >>> arr.compressors[0].to_dict()
    {'name': 'blosc', 'configuration': {'typesize': 2, 'cname': 'lz4', 'clevel': 5,
     'shuffle': 'shuffle', 'blocksize': 0}}
    >>> arr[:] = np.arange(1000)
    >>> int(arr[-1])
    999
    """

    cname: str = "zstd"
    clevel: int = 5
    shuffle: str | None = None  # None: choose on evolve (bitshuffle for 1-byte, else shuffle)
    typesize: int | None = None
    blocksize: int = 0
    name = "blosc"
    aliases = ("https://purl.org/zarr/spec/codec/blosc/1.0",)
    batch_codec = "blosc"
    _impl: Any = field(default=None, init=False, repr=False, compare=False, hash=False)

    def __repr__(self) -> str:
        """zarr-python's: its field order, the enums, and which fields are still to be chosen
        from the array's data type (``_tunable_attrs``)."""
        tunable = {k for k in ("typesize", "shuffle") if getattr(self, k) is None}
        return (f"{type(self).__name__}(_tunable_attrs={tunable or set()!r}, "
                f"typesize={self.typesize!r}, cname={self.cname!r}, "
                f"clevel={self.clevel!r}, shuffle={self.shuffle!r}, "
                f"blocksize={self.blocksize!r})")

    def __post_init__(self) -> None:
        # an enum member is taken as its string, with zarr-python 3.4's DeprecationWarning
        object.__setattr__(self, "cname", coerce_enum_input(self.cname, "cname",
                                                            "BloscCodec"))
        object.__setattr__(self, "shuffle", coerce_enum_input(self.shuffle, "shuffle",
                                                              "BloscCodec"))
        if self.cname not in _CNAMES:
            raise MetadataValidationError(
                f"blosc codec: cname must be one of {list(_CNAMES)}, got {self.cname!r}"
            )
        _int_in({"clevel": self.clevel}, "clevel", 0, 9, "blosc")
        if self.shuffle is not None and self.shuffle not in _SHUFFLE:
            raise MetadataValidationError(
                f"blosc codec: shuffle must be one of {list(_SHUFFLE)}, got {self.shuffle!r}"
            )
        if self.typesize is not None:
            _int_in({"typesize": self.typesize}, "typesize", 1, 255, "blosc")
        _int_in({"blocksize": self.blocksize}, "blocksize", 0, 2**31 - 1, "blosc")
        object.__setattr__(
            self,
            "_impl",
            numcodecs.Blosc(
                cname=self.cname,
                clevel=self.clevel,
                shuffle=_SHUFFLE[self.shuffle or "noshuffle"],
                blocksize=self.blocksize,
                typesize=self.typesize,
            ),
        )

    @classmethod
    def from_dict(cls, data: Any) -> BloscCodec:
        """Make the codec from its metadata object.

        Parameters
        ----------
        data : dict
            ``{"name": "blosc", "configuration": {...}}`` with ``cname``, ``clevel``
            and ``shuffle`` (required), ``typesize`` (required unless ``shuffle`` is
            ``"noshuffle"``) and ``blocksize`` (default 0).

        Returns
        -------
        BloscCodec
            The codec.

        Raises
        ------
        MetadataValidationError
            Another name, a missing or bad member, or an unknown one.
        """
        config = parse_named_config(
            data,
            (cls.name, *cls.aliases),
            allowed=("cname", "clevel", "shuffle", "typesize", "blocksize"),
        )
        for key in ("cname", "clevel", "shuffle"):
            if key not in config:
                raise MetadataValidationError(f"blosc codec: missing configuration member {key!r}")
        shuffle = config["shuffle"]
        typesize = config.get("typesize")
        if shuffle != "noshuffle" and typesize is None:
            raise MetadataValidationError(
                f"blosc codec: typesize is required when shuffle is {shuffle!r}"
            )
        return cls(
            cname=config["cname"],
            clevel=config["clevel"],
            shuffle=shuffle,
            typesize=typesize,
            blocksize=config.get("blocksize", 0),
        )

    def to_dict(self) -> dict[str, Any]:
        """Give the codec's metadata object.

        Returns
        -------
        dict
            ``{"name": "blosc", "configuration": {...}}``; a ``typesize`` not yet
            chosen is left out and a ``shuffle`` not yet chosen is written as
            ``"noshuffle"`` (the array's metadata holds the codec after
            [evolve][zarrfast.codecs.BloscCodec.evolve], with both chosen).
        """
        config: dict[str, Any] = {
            "typesize": self.typesize,
            "cname": self.cname,
            "clevel": self.clevel,
            "shuffle": self.shuffle or "noshuffle",
            "blocksize": self.blocksize,
        }
        if config["typesize"] is None:
            del config["typesize"]
        return {"name": "blosc", "configuration": config}

    def evolve(self, *, shape: tuple[int, ...], data_type: Any) -> BloscCodec:
        """Choose ``typesize`` and ``shuffle`` from the data type when they are not given.

        Parameters
        ----------
        shape : tuple of int
            The chunk shape (not used).
        data_type : DataType
            The array's data type: ``typesize`` becomes its item size (1 for
            variable-length types); ``shuffle`` ``"bitshuffle"`` for 1-byte items, else
            ``"shuffle"``.

        Returns
        -------
        BloscCodec
            The codec with both set (``self`` when they were).
        """
        # variable-length elements have no item size: 1, as zarr-python chooses
        item = 1 if getattr(data_type, "variable_length", False) else data_type.itemsize
        typesize = self.typesize if self.typesize is not None else item
        shuffle = self.shuffle
        if shuffle is None:
            shuffle = "bitshuffle" if item == 1 else "shuffle"
        if typesize == self.typesize and shuffle == self.shuffle:
            return self
        return BloscCodec(self.cname, self.clevel, shuffle, typesize, self.blocksize)

    def compress_settings(self) -> tuple[int, int, int, bytes, int] | None:
        """Give the arguments zarrfast's c-blosc kernels compress with.

        Returns
        -------
        tuple or None
            ``(clevel, shuffle, typesize, cname, blocksize)`` as the kernels
            ``blosc_compress`` and ``blosc_compress_regions`` take them (the bytes
            ``encode`` gives: ``shuffle`` as numcodecs' number, ``typesize`` 1 when not
            chosen, ``cname`` as bytes), or ``None`` when ``encode`` does not call them
            (c-blosc not bound, or the compressor not in this build).
        """
        from zarrfast import kernels as _kernels

        if _kernels.blosc_compress is None or self.cname not in _blosc_compressors():
            return None
        return (self.clevel, _SHUFFLE[self.shuffle or "noshuffle"], self.typesize or 1,
                self.cname.encode(), self.blocksize)

    def encode(self, data: Any) -> bytes:
        """Compress bytes into a blosc frame (c-blosc, one thread, the GIL released).

        Parameters
        ----------
        data : bytes-like
            The bytes to compress.

        Returns
        -------
        bytes
            The blosc frame.

        Raises
        ------
        CodecError
            ``cname`` is not in this build of c-blosc, or c-blosc fails.
        """
        arr = np.frombuffer(data, dtype=np.uint8)
        from zarrfast import kernels as _kernels

        if _kernels.blosc_compress is None:  # pragma: no cover - c-blosc not bound
            return self._impl.encode(arr)
        if self.cname not in _blosc_compressors():
            raise CodecError(f"blosc: compressor {self.cname!r} is not in this build of "
                             f"c-blosc (it has {_blosc_compressors()})")
        # c-blosc itself with one internal thread and the GIL released: the bytes of
        # numcodecs' context path (its main-thread path takes a global lock, uses
        # blosc's own threads and can give other, equally valid bytes)
        try:
            return _kernels.blosc_compress(arr, self.clevel, _SHUFFLE[self.shuffle or "noshuffle"],
                                           self.typesize or 1, self.cname.encode(),
                                           self.blocksize)
        except (RuntimeError, ValueError) as e:
            raise CodecError(f"blosc: cannot compress {arr.nbytes} bytes: {e}") from e

    def decode(self, data: Any, out: Any = None, limit: int | None = None) -> Any:
        """Decode ``data``, refusing output larger than expected before allocating it.

        Parameters
        ----------
        data : bytes-like
            The stored bytes.
        out : writable buffer, optional
            A buffer of exactly the decoded size, filled when given.
        limit : int, optional
            Without ``out``: the most bytes to accept (the chain passes a bound from
            the chunk's size).

        Returns
        -------
        bytes-like
            The decoded bytes (``out`` when it is given).

        Raises
        ------
        CodecError
            The data do not decompress, are truncated or followed by other data, or
            decode to more than ``limit`` (to another size than ``out``'s); the message
            gives the stored and decoded sizes.
        """
        blosc_check_header(data, out, limit)
        try:
            if out is not None:
                return self._impl.decode(data, out=out)
            return self._impl.decode(data)
        except MemoryError:
            raise  # out of memory is not bad data: the caller names what for
        except Exception as e:  # noqa: BLE001
            raise CodecError(f"blosc: cannot decompress {_nbytes(data)} bytes: {e}") from e


@dataclass(frozen=True)
class Crc32cCodec(BytesBytesCodec):
    """``crc32c``: append a CRC-32C checksum of the data (4 bytes, little endian).

    A bytes -> bytes codec recorded as ``{"name": "crc32c"}``
    (https://zarr-specs.readthedocs.io/en/latest/v3/codecs/crc32c/).  Decoding checks
    the checksum and raises [zarrfast.errors.ChecksumError][] if the data changed.  It
    takes no parameters; it is the default last index codec of a shard.

    Examples
    --------
    >>> from zarrfast.codecs import Crc32cCodec, ZstdCodec
    >>> Crc32cCodec().encode(b"abc")
    b'abc\\xb7?K6'
    >>> arr = zarrfast.create_array(store={}, shape=(10,), dtype="float32",
    ...                             compressors=[ZstdCodec(), Crc32cCodec()])
    >>> arr.compressors
    (ZstdCodec(level=0, checksum=False), Crc32cCodec())
    """

    name = "crc32c"
    aliases = ("https://purl.org/zarr/spec/codec/crc32c/1.0",)

    @classmethod
    def from_dict(cls, data: Any) -> Crc32cCodec:
        """Make the codec from its metadata object.

        Parameters
        ----------
        data : dict or str
            ``{"name": "crc32c"}`` (an empty ``configuration`` is allowed; the bare
            name and the draft URI are accepted).

        Returns
        -------
        Crc32cCodec
            The codec.

        Raises
        ------
        MetadataValidationError
            Another name, or configuration members (it has none).
        """
        parse_named_config(data, (cls.name, *cls.aliases), allowed=())
        return cls()

    def to_dict(self) -> dict[str, Any]:
        """Give the codec's metadata object.

        Returns
        -------
        dict
            ``{"name": "crc32c"}``.
        """
        return {"name": "crc32c"}

    def encode(self, data: Any) -> bytes:
        """Append the CRC-32C of the data.

        Parameters
        ----------
        data : bytes-like
            The bytes to protect.

        Returns
        -------
        bytes
            ``data`` followed by its CRC-32C as 4 little-endian bytes.
        """
        view = memoryview(data).cast("B")
        return bytes(view) + crc32c.crc32c(view).to_bytes(4, "little")

    def decode(self, data: Any, out: Any = None, limit: int | None = None) -> Any:
        """Check the checksum and give the data without it.

        Parameters
        ----------
        data : bytes-like
            The data followed by its 4-byte checksum.
        out : writable buffer, optional
            Not filled: the data are given back as a view.
        limit : int, optional
            Not used (the output is smaller than the input).

        Returns
        -------
        memoryview
            The data without the checksum (a view of ``data``).

        Raises
        ------
        ChecksumError
            The data are shorter than 4 bytes, or the checksum does not match.
        """
        view = memoryview(data).cast("B")  # (``limit``: the output is smaller than the input)
        if len(view) < 4:
            raise ChecksumError(f"crc32c: {len(view)} bytes is too short to hold a checksum")
        payload = view[:-4]
        stored = int.from_bytes(view[-4:], "little")
        actual = crc32c.crc32c(payload)
        if stored != actual:
            raise ChecksumError(
                f"crc32c: checksum mismatch (stored 0x{stored:08x}, computed 0x{actual:08x})"
            )
        return payload

    def compute_encoded_size(self, decoded_size: int) -> int:
        """Give the encoded size: the checksum adds 4 bytes.

        Parameters
        ----------
        decoded_size : int
            The size of the data.

        Returns
        -------
        int
            ``decoded_size + 4``.
        """
        return decoded_size + 4
