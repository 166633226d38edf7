"""The ``numcodecs.*`` codecs: numcodecs' codecs under the names zarr-python 3 writes.

zarr-python 3 (``zarr.codecs.numcodecs``) records a numcodecs codec in Zarr v3
metadata as ``{"name": "numcodecs.<id>", "configuration": {...}}``, the
configuration being numcodecs' own without ``id``::

    {"name": "numcodecs.delta", "configuration": {"dtype": "i4"}}
    {"name": "numcodecs.zstd", "configuration": {"level": 3}}

Each sits where zarr-python puts it: filters (``delta``, ``astype``, ...) are
array -> array codecs, ``pcodec`` and ``zfpy`` are array -> bytes codecs, the
compressors and checksums are bytes -> bytes codecs (they receive the bytes as
``uint8``).  numcodecs' classes do the encoding and decoding; nothing here
re-implements a codec.

Where the bytes are those of a core codec, the ``numcodecs.`` spelling is that
codec with its fast path (the batched decoder for ``zstd`` and ``blosc``,
bounded inflation for ``gzip``, the ``crc32c`` check) and only its name and
JSON differ: ``numcodecs.zstd``, ``numcodecs.blosc``, ``numcodecs.gzip`` and
``numcodecs.crc32c`` (checksum at the end, numcodecs' default).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numcodecs
import numpy as np

from zarrfast.codecs._base import (
    ArrayArrayCodec,
    ArrayBytesCodec,
    BytesBytesCodec,
    Codec,
    parse_named_config,
)
from zarrfast.codecs.compressors import BloscCodec, Crc32cCodec, GzipCodec, ZstdCodec
from zarrfast.codecs.numcodecs_codec import decode_bounded
from zarrfast.errors import CodecError, MetadataValidationError, UnknownCodecError
from zarrfast.metadata.dtype import data_type_from_numpy

__all__ = [
    "NUMCODECS_KINDS",
    "NumcodecsArrayArrayCodec",
    "NumcodecsArrayBytesCodec",
    "NumcodecsBytesBytesCodec",
    "codec_json_of",
    "numcodecs_v3_classes",
]

PREFIX = "numcodecs."

#: every numcodecs codec zarr-python 3 wraps, by the position it takes in a chain
NUMCODECS_KINDS: dict[str, str] = {
    **dict.fromkeys(("blosc", "lz4", "zstd", "zlib", "gzip", "bz2", "lzma", "shuffle",
                     "crc32", "crc32c", "adler32", "fletcher32", "jenkins_lookup3"),
                    "bytes_bytes"),
    **dict.fromkeys(("delta", "bitround", "fixedscaleoffset", "quantize", "packbits",
                     "astype"), "array_array"),
    **dict.fromkeys(("pcodec", "zfpy"), "array_bytes"),
}

#: codecs whose implementation comes from an optional package: (import name, extra)
_EXTRAS = {"pcodec": ("pcodec", "pcodec"), "zfpy": ("zfpy", "zfp")}


def _make_impl(name: str, codec_id: str, config: dict) -> Any:
    """numcodecs' codec for ``config``; errors name the codec and the field."""
    if codec_id in _EXTRAS:
        module, extra = _EXTRAS[codec_id]
        try:
            __import__(module)
        except ImportError:
            raise UnknownCodecError(
                f"codec {name!r} needs the {module!r} package, which is not installed: "
                f"pip install \"zarrfast[{extra}]\" (from a source checkout: "
                f"pip install \".[{extra}]\")") from None
    try:
        return numcodecs.get_codec({"id": codec_id, **config})
    except TypeError as e:  # an unknown or missing keyword: names the field
        raise MetadataValidationError(f"codec {name!r}: invalid configuration {config!r}: {e}"
                                      ) from None
    except Exception as e:  # noqa: BLE001 - numcodecs raises anything on a bad value
        raise MetadataValidationError(f"codec {name!r}: invalid configuration {config!r} "
                                      f"({type(e).__name__}: {e})") from None


class _Numcodecs:
    """What every ``numcodecs.*`` codec shares: its configuration and numcodecs' codec."""

    name: ClassVar[str]
    codec_id: ClassVar[str]
    configuration: dict
    _impl: Any

    def _init_impl(self) -> None:
        if not isinstance(self.configuration, dict) or "id" in self.configuration:
            raise MetadataValidationError(
                f"codec {self.name!r}: configuration must be an object without 'id', got "
                f"{self.configuration!r}")
        object.__setattr__(self, "_impl", _make_impl(self.name, self.codec_id,
                                                     self.configuration))

    @classmethod
    def from_dict(cls, data: Any) -> Any:
        """Make the codec from its metadata object.

        Parameters
        ----------
        data : dict
            ``{"name": "numcodecs.<id>", "configuration": {...}}``, the configuration
            being numcodecs' keyword arguments.

        Returns
        -------
        Codec
            The codec.

        Raises
        ------
        MetadataValidationError
            Another name, or a configuration numcodecs refuses.
        UnknownCodecError
            The codec needs a package that is not installed (``pcodec``, ``zfpy``).
        """
        allowed = tuple(data.get("configuration") or ()) if isinstance(data, dict) else ()
        config = parse_named_config(data, cls.name, allowed=allowed)
        return cls(configuration=dict(config))

    def to_dict(self) -> dict[str, Any]:
        """Give the codec's metadata object, as zarr-python writes it.

        Returns
        -------
        dict
            ``{"name": "numcodecs.<id>", "configuration": {...}}``, numcodecs'
            configuration without ``id``.
        """
        return {"name": self.name, "configuration": dict(self.configuration)}

    @property
    def codec_name(self) -> str:
        """zarr-python's name for :attr:`name`."""
        return self.name

    @property
    def codec_config(self) -> dict[str, Any]:
        """numcodecs' configuration with its ``id`` (as zarr-python gives it)."""
        return {"id": self.name[len(PREFIX):], **self.configuration}

    def _config_dtype(self, key: str) -> np.dtype | None:
        value = getattr(self._impl, key, None)
        return None if value is None else np.dtype(value)


@dataclass(frozen=True)
class NumcodecsBytesBytesCodec(_Numcodecs, BytesBytesCodec):
    """A numcodecs compressor or checksum, given the bytes as ``uint8``."""

    configuration: dict = field(default_factory=dict, hash=False)
    _impl: Any = field(default=None, init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        self._init_impl()

    def evolve(self, *, shape: tuple[int, ...], data_type: Any) -> Codec:
        """Fill in ``numcodecs.shuffle``'s ``elementsize`` when it is not given.

        Parameters
        ----------
        shape : tuple of int
            The shape of the chunk as it reaches the codec (not used).
        data_type : DataType
            The array's data type: its item size is the element size, as zarr-python
            chooses.

        Returns
        -------
        Codec
            A ``shuffle`` codec with ``elementsize``; ``self`` for the other codecs.
        """
        if self.codec_id == "shuffle" and self.configuration.get("elementsize") is None:
            # as zarr-python: the element size of the array's data type
            return type(self)(configuration={**self.configuration,
                                             "elementsize": data_type.itemsize})
        return self

    def encode(self, data: Any) -> Any:
        """Encode bytes with numcodecs' codec, given them as a ``uint8`` array.

        Parameters
        ----------
        data : bytes-like
            The bytes to encode.

        Returns
        -------
        bytes-like
            What numcodecs' ``encode`` gives (an array as its bytes).

        Raises
        ------
        CodecError
            numcodecs cannot encode the data (naming the codec and the size).
        """
        try:
            out = self._impl.encode(np.frombuffer(data, dtype=np.uint8))
        except MemoryError:
            raise  # out of memory is not bad data: the caller names what for
        except Exception as e:  # noqa: BLE001
            raise CodecError(f"{self.name}: cannot encode {memoryview(data).nbytes} bytes: "
                             f"{e}") from e
        return out.tobytes() if isinstance(out, np.ndarray) else out

    def decode(self, data: Any, out: Any = None, limit: int | None = None) -> Any:
        """Decode bytes with numcodecs' codec, refusing oversized output first.

        zlib, gzip, zstd, blosc, lz4, bz2 and lzma data are checked against the size
        to decode to before the output is allocated (a stored chunk is untrusted).

        Parameters
        ----------
        data : bytes-like
            The encoded bytes.
        out : writable buffer, optional
            A buffer of exactly the decoded size, filled when given.
        limit : int, optional
            Without ``out``: the most bytes to accept.

        Returns
        -------
        bytes-like
            The decoded bytes (``out`` when filled).

        Raises
        ------
        CodecError
            The data do not decode, or decode to more than ``limit`` (or to another
            size than ``out``'s).
        """
        try:
            return decode_bounded(self._impl, self.codec_id, data, out, limit, self.name)
        except CodecError:
            raise
        except MemoryError:
            raise  # out of memory is not bad data: the caller names what for
        except Exception as e:  # noqa: BLE001
            raise CodecError(f"{self.name}: cannot decode {memoryview(data).nbytes} bytes: "
                             f"{e}") from e


#: the member holding the data type a filter takes, where zarr-python fills it in
_FILLED_IN = {"quantize": "dtype", "fixedscaleoffset": "dtype", "astype": "decode_dtype"}


@dataclass(frozen=True)
class NumcodecsArrayArrayCodec(_Numcodecs, ArrayArrayCodec):
    """A numcodecs filter: an array in, an array (perhaps of another type) out."""

    configuration: dict = field(default_factory=dict, hash=False)
    _impl: Any = field(default=None, init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        if self._missing() is None:
            self._init_impl()

    def _missing(self) -> str | None:
        """The data-type member zarr-python fills in from the array when it is left out
        (``evolve`` does the same here)."""
        key = _FILLED_IN.get(self.codec_id)
        return key if key is not None and self.configuration.get(key) is None else None

    def evolve(self, *, shape: tuple[int, ...], data_type: Any) -> Codec:
        key = self._missing()
        if key is None:
            return self
        return type(self)(configuration={**self.configuration, key: str(data_type.dtype)})

    # the data type each filter takes (``None``: any) and gives
    def _decoded_dtype(self) -> np.dtype | None:
        if self.codec_id == "astype":
            return self._config_dtype("decode_dtype")
        if self.codec_id in ("delta", "fixedscaleoffset", "quantize"):
            return self._config_dtype("dtype")
        return None

    def encoded_data_type(self, data_type: Any) -> Any:
        if self._impl is None:  # (refused by ``validate``)
            return data_type
        if self.codec_id == "packbits":
            return data_type_from_numpy("uint8")
        if self.codec_id == "astype":
            return data_type_from_numpy(self._config_dtype("encode_dtype"))
        if self.codec_id in ("delta", "fixedscaleoffset", "quantize"):
            return data_type_from_numpy(self._config_dtype("astype"))
        return data_type

    def encoded_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        if self.codec_id == "packbits":  # one byte of padding count, then the bits
            return (1 + math.ceil(math.prod(shape) / 8),)
        return shape

    def validate(self, *, shape: tuple[int, ...], data_type: Any) -> None:
        dt = data_type.dtype
        if self._impl is None:
            raise MetadataValidationError(f"configuration member {self._missing()!r} is "
                                          f"missing")
        want = self._decoded_dtype()
        if want is not None and want.newbyteorder("=") != dt.newbyteorder("="):
            field_ = "decode_dtype" if self.codec_id == "astype" else "dtype"
            raise MetadataValidationError(
                f"{field_} {self.configuration.get(field_)!r} is not the data type it "
                f"receives ({data_type.name})")
        if self.codec_id == "packbits" and dt.kind != "b":
            raise MetadataValidationError(f"Packbits filter requires bool dtype (packbits "
                                          f"takes bool), not {data_type.name}")
        if self.codec_id in ("bitround", "quantize") and dt.kind != "f":
            raise MetadataValidationError(f"takes a floating-point data type, not "
                                          f"{data_type.name}")
        if dt.hasobject:
            raise MetadataValidationError(f"cannot take the variable-length data type "
                                          f"{data_type.name}")

    def encode(self, chunk: np.ndarray) -> np.ndarray:
        try:
            return np.asarray(self._impl.encode(np.ascontiguousarray(chunk)))
        except MemoryError:
            raise  # out of memory is not bad data: the caller names what for
        except Exception as e:  # noqa: BLE001
            raise CodecError(f"{self.name}: cannot encode a chunk of shape {chunk.shape}: "
                             f"{e}") from e

    def decode(self, chunk: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
        try:
            out = np.asarray(self._impl.decode(np.ascontiguousarray(chunk)))
        except MemoryError:
            raise  # out of memory is not bad data: the caller names what for
        except Exception as e:  # noqa: BLE001
            raise CodecError(f"{self.name}: cannot decode a chunk of {chunk.size} elements: "
                             f"{e}") from e
        if out.size != math.prod(shape):
            raise CodecError(f"{self.name}: decoded {out.size} elements, expected "
                             f"{math.prod(shape)} (shape {list(shape)})")
        return out.reshape(shape)


@dataclass(frozen=True)
class NumcodecsArrayBytesCodec(_Numcodecs, ArrayBytesCodec):
    """``numcodecs.pcodec`` or ``numcodecs.zfpy``: a chunk array to bytes and back."""

    configuration: dict = field(default_factory=dict, hash=False)
    _impl: Any = field(default=None, init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        self._init_impl()

    def validate(self, *, shape: tuple[int, ...], data_type: Any) -> None:
        kinds = "iuf" if self.codec_id == "pcodec" else "if"
        if data_type.dtype.kind not in kinds or data_type.itemsize < (
                2 if self.codec_id == "pcodec" else 4):
            raise MetadataValidationError(f"cannot encode the data type {data_type.name}")

    def encode(self, chunk: np.ndarray, data_type: Any) -> Any:
        arr = np.ascontiguousarray(chunk, dtype=data_type.dtype)
        try:
            return bytes(self._impl.encode(arr))
        except MemoryError:
            raise  # out of memory is not bad data: the caller names what for
        except Exception as e:  # noqa: BLE001
            raise CodecError(f"{self.name}: cannot encode a chunk of shape {arr.shape}: "
                             f"{e}") from e

    def decode(self, data: Any, shape: tuple[int, ...], data_type: Any) -> np.ndarray:
        try:
            out = np.asarray(self._impl.decode(bytes(data)))
        except MemoryError:
            raise  # out of memory is not bad data: the caller names what for
        except Exception as e:  # noqa: BLE001
            raise CodecError(f"{self.name}: cannot decode {memoryview(data).nbytes} bytes: "
                             f"{e}") from e
        if out.size != math.prod(shape):
            raise CodecError(f"{self.name}: decoded {out.size} elements, expected "
                             f"{math.prod(shape)} (shape {list(shape)})")
        return out.astype(data_type.dtype, copy=False).reshape(shape)


# -- the core codecs' fast paths under their numcodecs names -------------------------

def _numcodecs_config(name: str, codec_id: str, data: Any) -> tuple[dict, Any]:
    allowed = tuple(data.get("configuration") or ()) if isinstance(data, dict) else ()
    config = dict(parse_named_config(data, name, allowed=allowed))
    return config, _make_impl(name, codec_id, config)


@dataclass(frozen=True)
class _Spelled:
    """A core codec under its ``numcodecs.<id>`` name: its JSON is numcodecs' configuration
    as written; :meth:`_core` gives the core codec's parameters from numcodecs' codec."""

    configuration: dict = field(default_factory=dict, compare=False, hash=False)
    name: ClassVar[str]
    aliases: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def _core(cls, impl: Any, config: dict) -> dict[str, Any]:
        return {}

    @classmethod
    def from_dict(cls, data: Any) -> Any:
        config, impl = _numcodecs_config(cls.name, cls.name[len(PREFIX):], data)
        return cls(**cls._core(impl, config), configuration=config)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "configuration": dict(self.configuration)}

    codec_name = _Numcodecs.codec_name
    codec_config = _Numcodecs.codec_config


def zarr_repr(codec: Any) -> str:
    """zarr-python's repr of a ``numcodecs.*`` codec."""
    return (f"{type(codec).__name__}(codec_name={codec.name!r}, "
            f"codec_config={dict(codec.configuration)!r})")


@dataclass(frozen=True)
class NumcodecsZstdCodec(_Spelled, ZstdCodec):
    """``numcodecs.zstd``: the bytes of the ``zstd`` codec (a zstd frame)."""

    name = "numcodecs.zstd"

    @classmethod
    def _core(cls, impl: Any, config: dict) -> dict[str, Any]:
        return {"level": impl.level, "checksum": bool(impl.checksum)}


_BLOSC_SHUFFLE = {0: "noshuffle", 1: "shuffle", 2: "bitshuffle",
                  -1: "bitshuffle"}  # auto: bit shuffle for the 1-byte items it is given


@dataclass(frozen=True)
class NumcodecsBloscCodec(_Spelled, BloscCodec):
    """``numcodecs.blosc``: a blosc frame of the chunk's bytes (item size 1, as zarr-python
    hands numcodecs a ``uint8`` buffer)."""

    name = "numcodecs.blosc"

    @classmethod
    def _core(cls, impl: Any, config: dict) -> dict[str, Any]:
        cname = impl.cname.decode() if isinstance(impl.cname, bytes) else impl.cname
        return {"cname": cname, "clevel": impl.clevel, "shuffle": _BLOSC_SHUFFLE[impl.shuffle],
                "typesize": config.get("typesize") or 1, "blocksize": impl.blocksize}

    def evolve(self, *, shape: tuple[int, ...], data_type: Any) -> NumcodecsBloscCodec:
        return self


@dataclass(frozen=True)
class NumcodecsGzipCodec(_Spelled, GzipCodec):
    """``numcodecs.gzip``: the bytes of the ``gzip`` codec."""

    name = "numcodecs.gzip"

    @classmethod
    def _core(cls, impl: Any, config: dict) -> dict[str, Any]:
        return {"level": impl.level}


@dataclass(frozen=True, repr=False)
class NumcodecsCrc32cCodec(_Spelled, Crc32cCodec):
    """``numcodecs.crc32c`` with the checksum at the end: the bytes of ``crc32c``."""

    name = "numcodecs.crc32c"
    __repr__ = zarr_repr

    @classmethod
    def from_dict(cls, data: Any) -> Codec:
        config, impl = _numcodecs_config(cls.name, "crc32c", data)
        if impl.location != "end":  # the checksum first: numcodecs' own code
            return _GENERIC["crc32c"](configuration=config)
        return cls(configuration=config)


_KIND_BASES = {"bytes_bytes": NumcodecsBytesBytesCodec,
               "array_array": NumcodecsArrayArrayCodec,
               "array_bytes": NumcodecsArrayBytesCodec}


def _generic_class(codec_id: str) -> type[Codec]:
    base = _KIND_BASES[NUMCODECS_KINDS[codec_id]]
    title = "".join(p.title() for p in codec_id.split("_"))
    cls = dataclass(frozen=True)(type(f"Numcodecs{title}Codec", (base,), {
        "__module__": __name__, "__qualname__": f"Numcodecs{title}Codec",
        "__doc__": f"``numcodecs.{codec_id}``: numcodecs' ``{codec_id}`` codec.",
        "name": PREFIX + codec_id, "codec_id": codec_id}))
    return cls


_GENERIC: dict[str, type[Codec]] = {cid: _generic_class(cid) for cid in NUMCODECS_KINDS}
_FAST: dict[str, type[Codec]] = {"zstd": NumcodecsZstdCodec, "blosc": NumcodecsBloscCodec,
                                 "gzip": NumcodecsGzipCodec, "crc32c": NumcodecsCrc32cCodec}


def numcodecs_v3_classes() -> list[type[Codec]]:
    """The class registered for each ``numcodecs.<id>`` name (the fast one where there
    is one)."""
    return [_FAST.get(cid, cls) for cid, cls in _GENERIC.items()]


def codec_json_of(obj: Any, *, where: str) -> Any:
    """What users pass for a codec, as a codec or its metadata object: a numcodecs codec
    (``numcodecs.Zstd(level=3)`` -> ``numcodecs.zstd``) or a zarr-python codec (anything
    with ``to_dict()``, e.g. ``zarr.codecs.numcodecs.Delta(dtype="i4")``); other values
    are returned as they are."""
    if isinstance(obj, Codec) or isinstance(obj, (dict, str)):
        return obj
    if isinstance(obj, numcodecs.abc.Codec):
        config = dict(obj.get_config())
        codec_id = config.pop("id", None)
        if codec_id not in NUMCODECS_KINDS:
            raise UnknownCodecError(
                f"{where}: numcodecs codec {codec_id!r} has no Zarr v3 name; the ones "
                f"zarr-python 3 writes are numcodecs.{{{', '.join(sorted(NUMCODECS_KINDS))}}}")
        return {"name": PREFIX + codec_id, "configuration": config}
    to_dict = getattr(obj, "to_dict", None)
    if callable(to_dict):
        data = to_dict()
        if isinstance(data, dict) and isinstance(data.get("name"), str):
            return data
    return obj
