"""Array -> array codecs of the extension registry (zarr-developers/zarr-extensions
``codecs/``) that change values or shapes: ``scale_offset``, ``cast_value``,
``bitround`` and ``reshape``.

* ``scale_offset`` (``{"offset": o, "scale": s}``, each in the fill-value encoding of the
  array's data type): stores ``(x - o) * s``, reads ``y / s + o``, in the arithmetic of the
  data type; a value that does not fit (or an integer division with a remainder) is an
  error, never a silent wrap.
* ``cast_value`` (``{"data_type": ..., "rounding": ..., "out_of_range": ...,
  "scalar_map": {"encode": [[in, out], ...], "decode": [...]}}``): converts values to
  another data type.  The casting is the ``cast-value-rs`` package's (the library
  zarr-python uses; extra ``zarrfast[cast]``).
* ``bitround`` (``{"keepbits": k}``): keeps ``k`` mantissa bits of floats (numcodecs'
  ``BitRound``) or ``k`` bits from the most significant set bit of integers.  What is
  stored is already rounded: decoding is the identity.
* ``reshape`` (``{"shape": [...]}``, each entry a size, a list of input dimensions
  or ``-1``): the chunk in C order with another shape.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from zarrfast.codecs._base import ArrayArrayCodec, parse_named_config
from zarrfast.errors import CodecError, MetadataValidationError, UnknownCodecError
from zarrfast.metadata.dtype import data_type_from_numpy, parse_data_type

__all__ = ["BitroundCodec", "CastValueCodec", "ReshapeCodec", "ScaleOffsetCodec"]


def _numeric(data_type: Any, codec: str, kinds: str = "iuf") -> None:
    if data_type.dtype.kind not in kinds:  # (zarr-python 3.4's words, then the type)
        raise MetadataValidationError(f"{codec} codec only supports integer and floating-point "
                                      f"data types, not {data_type.name}")


def _number_string(value: Any, kind: str) -> Any:
    """A number written as a string (``"0"``, ``"0.5"``), as zarr-python 3.4 reads a
    scalar of an integer or float type; ``None`` when ``value`` is no such string."""
    if not isinstance(value, str):
        return None
    try:
        return int(value.strip()) if kind in "iu" else float(value)
    except ValueError:
        return None


def _scalar(data_type: Any, value: Any, label: str) -> Any:
    """``value`` as a scalar of ``data_type`` (its fill-value encoding, or a number written
    as a string); zarr-python 3.4's message, with zarrfast's reason, when it is none."""
    try:
        try:
            return data_type.parse_fill_value(value, where=label)
        except ValueError:
            number = _number_string(value, data_type.dtype.kind)
            if number is None:
                raise
            return data_type.parse_fill_value(number, where=label)
    except (ValueError, TypeError, OverflowError) as e:
        raise MetadataValidationError(f"{label} {value!r} is not representable in dtype "
                                      f"{data_type.dtype} ({e})") from None


# -- scale_offset ---------------------------------------------------------------------

@dataclass(frozen=True)
class ScaleOffsetCodec(ArrayArrayCodec):
    """``scale_offset``: values stored as ``(x - offset) * scale``, read as ``y / scale + offset``.

    An array -> array codec of the extension registry (zarr-extensions
    ``codecs/scale_offset``), recorded as
    ``{"name": "scale_offset", "configuration": {"offset": o, "scale": s}}``.  The
    arithmetic is the array's data type's: for floats the stored values are rounded as
    that type rounds; for integers a value that does not fit, or a stored value that is
    not a multiple of ``scale``, is an error, never a silent wrap.

    Parameters
    ----------
    offset : number, optional
        Subtracted before scaling, in the fill-value encoding of the data type (JSON
        numbers, or strings such as ``"NaN"``); ``None`` (the default) means 0.
    scale : number, optional
        The factor applied after the offset; ``None`` (the default) means 1.  It must
        not be 0.

    Examples
    --------
    >>> from zarrfast.codecs import ScaleOffsetCodec
    >>> arr = zarrfast.create_array(store={}, shape=(3,), dtype="float64", compressors=None,
    ...                             filters=[ScaleOffsetCodec(offset=10, scale=100)])
    >>> arr[:] = [10.0, 10.5, 11.25]
    >>> np.frombuffer(arr.store.get("c/0"), dtype="<f8")  # (x - 10) * 100
    array([  0.,  50., 125.])
    >>> arr[:]
    array([10.  , 10.5 , 11.25])
    """

    offset: Any = None
    scale: Any = None
    name = "scale_offset"

    @classmethod
    def from_dict(cls, data: Any) -> ScaleOffsetCodec:
        """Make the codec from its metadata object.

        Parameters
        ----------
        data : dict
            ``{"name": "scale_offset", "configuration": {"offset": ..., "scale": ...}}``.

        Returns
        -------
        ScaleOffsetCodec
            The codec.

        Raises
        ------
        MetadataValidationError
            Another name, an unknown member.
        """
        config = parse_named_config(data, cls.name, allowed=("offset", "scale"))
        return cls(offset=config.get("offset"), scale=config.get("scale"))

    def to_dict(self) -> dict[str, Any]:
        """Give the codec's metadata object.

        Returns
        -------
        dict
            ``{"name": "scale_offset", "configuration": {"offset": ..., "scale": ...}}``;
            members that are ``None`` are left out (and the configuration when both
            are).
        """
        config = {k: v for k, v in (("offset", self.offset), ("scale", self.scale))
                  if v is not None}
        return {"name": self.name, "configuration": config} if config else {"name": self.name}

    def _params(self, dtype: np.dtype) -> tuple[Any, Any]:
        data_type = data_type_from_numpy(dtype)
        offset = (dtype.type(0) if self.offset is None
                  else _scalar(data_type, self.offset, "scale_offset offset value"))
        scale = (dtype.type(1) if self.scale is None
                 else _scalar(data_type, self.scale, "scale_offset scale value"))
        return offset, scale

    def validate(self, *, shape: tuple[int, ...], data_type: Any) -> None:
        """Check the codec can take chunks of ``data_type``.

        Parameters
        ----------
        shape : tuple of int
            The chunk shape (any).
        data_type : DataType
            The data type of the chunks.

        Raises
        ------
        MetadataValidationError
            Not an integer or floating-point type, an ``offset`` or ``scale`` that is not
            a value of the type, or ``scale`` 0.
        """
        _numeric(data_type, self.name)
        try:
            _, scale = self._params(data_type.dtype)
        except ValueError as e:
            raise MetadataValidationError(str(e)) from None
        if scale == 0:
            raise MetadataValidationError(f"scale_offset scale must be non-zero, got "
                                          f"{self.scale!r}")

    def encode(self, chunk: np.ndarray) -> np.ndarray:
        """Give ``(chunk - offset) * scale`` in the chunk's data type.

        Parameters
        ----------
        chunk : numpy.ndarray
            The chunk.

        Returns
        -------
        numpy.ndarray
            The stored values.

        Raises
        ------
        CodecError
            A finite value gives a float that is not finite, or an integer outside the
            data type's range.
        """
        offset, scale = self._params(chunk.dtype)
        if chunk.dtype.kind == "f":
            with np.errstate(over="ignore", invalid="ignore"):
                out = (chunk - offset) * scale
            bad = ~np.isfinite(out) & np.isfinite(chunk)
            if bad.any():
                raise CodecError(f"scale_offset: ({chunk[bad][0]!r} - {offset}) * {scale} is "
                                 f"not representable in {chunk.dtype}")
            return out.astype(chunk.dtype, copy=False)
        wide = chunk.astype(object) if chunk.dtype == np.uint64 else chunk.astype(np.int64)
        with np.errstate(over="raise"):
            try:
                out = (wide - int(offset)) * int(scale)
            except FloatingPointError:
                out = (chunk.astype(object) - int(offset)) * int(scale)
        return _checked_int(out, chunk.dtype, "encoded")

    def decode(self, chunk: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
        """Give ``chunk / scale + offset`` in the chunk's data type.

        Parameters
        ----------
        chunk : numpy.ndarray
            The stored values.
        shape : tuple of int
            The chunk shape.

        Returns
        -------
        numpy.ndarray
            The values.

        Raises
        ------
        CodecError
            Stored integers that are not multiples of ``scale``, or results outside the
            data type's range.
        """
        offset, scale = self._params(chunk.dtype)
        if chunk.dtype.kind == "f":
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                out = chunk / scale + offset
            return out.astype(chunk.dtype, copy=False).reshape(shape)
        wide = chunk.astype(object) if chunk.dtype == np.uint64 else chunk.astype(np.int64)
        if (wide % int(scale)).any():  # (zarr-python 3.4's words, then ours)
            raise CodecError(f"scale_offset decode produced a non-zero remainder when dividing "
                             f"by scale={int(scale)}: stored integers are not multiples of it")
        out = wide // int(scale) + int(offset)
        return _checked_int(out, chunk.dtype, "decoded").reshape(shape)


def _checked_int(values: np.ndarray, dtype: np.dtype, what: str) -> np.ndarray:
    info = np.iinfo(dtype)
    if values.size and (values.min() < info.min or values.max() > info.max):
        raise CodecError(f"scale_offset produced a value outside the range of dtype {dtype}: "
                         f"{what} values reach [{values.min()}, {values.max()}], outside "
                         f"{dtype} [{info.min}, {info.max}]")
    return values.astype(dtype)


# -- cast_value -----------------------------------------------------------------------

_ROUNDING = ("nearest-even", "towards-zero", "towards-positive", "towards-negative",
             "nearest-away")
_OUT_OF_RANGE = ("clamp", "wrap")


def _cast_array() -> Any:
    try:
        from cast_value_rs import cast_array
    except ImportError:
        raise UnknownCodecError(
            "codec 'cast_value' needs the 'cast-value-rs' package, which is not installed: "
            'pip install "zarrfast[cast]" (from a source checkout: pip install ".[cast]")'
        ) from None
    return cast_array


@dataclass(frozen=True)
class CastValueCodec(ArrayArrayCodec):
    """``cast_value``: values stored converted to another data type.

    An array -> array codec of the extension registry (zarr-extensions
    ``codecs/cast_value``), recorded as ``{"name": "cast_value", "configuration":
    {...}}``.  The conversion is the ``cast-value-rs`` package's, the library zarr-python
    uses (``pip install "zarrfast[cast]"``; from a source checkout:
    ``pip install ".[cast]"``); arrays with this codec need it to be read or written.

    Parameters
    ----------
    configuration : dict
        The codec's configuration: ``data_type`` (required: the stored data type, as in
        array metadata, e.g. ``"uint8"``), ``rounding`` (``"nearest-even"`` by default,
        ``"towards-zero"``, ``"towards-positive"``, ``"towards-negative"`` or
        ``"nearest-away"``), ``out_of_range`` (``"clamp"`` or ``"wrap"``; when not
        given a value out of range is an error) and ``scalar_map`` (``{"encode":
        [[in, out], ...], "decode": [...]}``: values mapped explicitly, such as NaN to
        a sentinel).

    Raises
    ------
    MetadataValidationError
        No ``data_type``, or a bad ``rounding``, ``out_of_range`` or ``scalar_map``.
    UnsupportedDataTypeError
        A ``data_type`` zarrfast does not know (or an ML type such as ``bfloat16``
        without the ``ml_dtypes`` package).

    Examples
    --------
    >>> from zarrfast.codecs import CastValueCodec
    >>> codec = CastValueCodec({"data_type": "uint8", "out_of_range": "clamp"})
    >>> arr = zarrfast.create_array(store={}, shape=(3,), dtype="float32",
    ...                             filters=[codec])
    >>> arr[:] = [1.4, 300, -3]
    >>> arr[:]
    array([  1., 255.,   0.], dtype=float32)
    """

    configuration: dict = field(default_factory=dict, hash=False)
    name = "cast_value"

    def __post_init__(self) -> None:
        config = self.configuration
        if "data_type" not in config:
            raise MetadataValidationError("cast_value codec: 'data_type' is required")
        parse_data_type(config["data_type"], where="cast_value codec: data_type")
        if config.get("rounding", "nearest-even") not in _ROUNDING:
            raise MetadataValidationError(f"cast_value codec: rounding must be one of "
                                          f"{list(_ROUNDING)}, got {config['rounding']!r}")
        if config.get("out_of_range") not in (None, *_OUT_OF_RANGE):
            raise MetadataValidationError(
                f"cast_value codec: out_of_range must be one of {list(_OUT_OF_RANGE)}, got "
                f"{config['out_of_range']!r}")
        smap = config.get("scalar_map", {})
        if not isinstance(smap, dict) or set(smap) - {"encode", "decode"} or not all(
                isinstance(v, list) and all(isinstance(p, list) and len(p) == 2 for p in v)
                for v in smap.values()):
            raise MetadataValidationError(
                f"cast_value codec: scalar_map must be {{'encode': [[in, out], ...], "
                f"'decode': [...]}}, got {smap!r}")

    @classmethod
    def from_dict(cls, data: Any) -> CastValueCodec:
        """Make the codec from its metadata object.

        Parameters
        ----------
        data : dict
            ``{"name": "cast_value", "configuration": {"data_type": ..., ...}}``.

        Returns
        -------
        CastValueCodec
            The codec.

        Raises
        ------
        MetadataValidationError
            Another name, an unknown member, or a bad configuration (see the class).
        """
        config = parse_named_config(data, cls.name, allowed=("data_type", "rounding",
                                                             "out_of_range", "scalar_map"))
        return cls(configuration=dict(config))

    def to_dict(self) -> dict[str, Any]:
        """Give the codec's metadata object.

        Returns
        -------
        dict
            ``{"name": "cast_value", "configuration": {...}}``, the configuration as given.
        """
        return {"name": self.name, "configuration": dict(self.configuration)}

    @property
    def target(self) -> Any:
        """The data type values are stored as (the configuration's ``data_type``)."""
        return parse_data_type(self.configuration["data_type"])

    def encoded_data_type(self, data_type: Any) -> Any:
        """Give the stored data type.

        Parameters
        ----------
        data_type : DataType
            The data type of the chunks the codec receives (not used).

        Returns
        -------
        DataType
            [target][zarrfast.codecs.CastValueCodec.target].
        """
        return self.target

    def _entries(self, direction: str, src: Any, dst: Any) -> list[tuple[Any, Any]]:
        pairs = self.configuration.get("scalar_map", {}).get(direction, [])
        out, seen = [], set()
        for i, (a, b) in enumerate(pairs):
            where = f"cast_value codec: scalar_map {direction}[{i}]"
            x = _scalar(src, a, f"{where} key").item()
            y = _scalar(dst, b, f"{where} value").item()
            key = "nan" if isinstance(x, float) and math.isnan(x) else x
            if key not in seen:  # the first occurrence wins
                seen.add(key)
                out.append((x, y))
        return out

    def validate(self, *, shape: tuple[int, ...], data_type: Any) -> None:
        """Check the codec can convert chunks of ``data_type``.

        Parameters
        ----------
        shape : tuple of int
            The chunk shape (any).
        data_type : DataType
            The data type of the chunks.

        Raises
        ------
        MetadataValidationError
            Either data type is not an integer or floating-point type, ``"wrap"`` with
            a floating-point target, or a ``scalar_map`` value that is not of its type.
        UnknownCodecError
            The ``cast-value-rs`` package is not installed.
        """
        _numeric(data_type, self.name)
        _numeric(self.target, self.name)
        if self.configuration.get("out_of_range") == "wrap" and self.target.kind not in "iu":
            raise MetadataValidationError(f"cast_value codec: out_of_range='wrap' is only "
                                          f"valid for integer target types, not "
                                          f"{self.target.name}")
        self._entries("encode", data_type, self.target)
        self._entries("decode", self.target, data_type)
        _cast_array()

    def _cast(self, arr: np.ndarray, to: Any, direction: str) -> np.ndarray:
        src = data_type_from_numpy(arr.dtype)
        try:
            return _cast_array()(
                np.ascontiguousarray(arr), target_dtype=to.dtype,
                rounding_mode=self.configuration.get("rounding", "nearest-even"),
                out_of_range_mode=self.configuration.get("out_of_range"),
                scalar_map_entries=self._entries(direction, src, to) or None)
        except (ValueError, TypeError, OverflowError) as e:
            raise CodecError(f"cast_value: cannot cast {src.name} to {to.name}: {e}") from None

    def encode(self, chunk: np.ndarray) -> np.ndarray:
        """Convert a chunk to the stored data type.

        Parameters
        ----------
        chunk : numpy.ndarray
            The chunk.

        Returns
        -------
        numpy.ndarray
            The values as [target][zarrfast.codecs.CastValueCodec.target].

        Raises
        ------
        CodecError
            A value cannot be converted (out of range without ``out_of_range``, NaN to
            an integer without a ``scalar_map`` entry).
        UnknownCodecError
            The ``cast-value-rs`` package is not installed.
        """
        return self._cast(chunk, self.target, "encode")

    def decode_as(self, chunk: np.ndarray, shape: tuple[int, ...],
                  data_type: Any) -> np.ndarray:
        """Convert stored values back to the array's data type.

        Parameters
        ----------
        chunk : numpy.ndarray
            The stored values.
        shape : tuple of int
            The chunk shape.
        data_type : DataType
            The data type to give (the one the codec received when encoding).

        Returns
        -------
        numpy.ndarray
            The values, of ``shape``.

        Raises
        ------
        CodecError
            A value cannot be converted.
        UnknownCodecError
            The ``cast-value-rs`` package is not installed.
        """
        return self._cast(chunk, data_type, "decode").reshape(shape)


# -- bitround -------------------------------------------------------------------------

@dataclass(frozen=True)
class BitroundCodec(ArrayArrayCodec):
    """``bitround``: values rounded to ``keepbits`` significant bits when written.

    An array -> array codec of the extension registry (zarr-extensions
    ``codecs/bitround``), recorded as
    ``{"name": "bitround", "configuration": {"keepbits": k}}``.  Floats keep ``k`` bits
    of their mantissa (numcodecs' ``BitRound``: round to nearest, ties to even); integers
    keep ``k`` bits from their most significant set bit.  The zeroed low bits make the
    data compress better.  What is stored is already rounded, so decoding changes
    nothing: the rounding is lossy.

    Parameters
    ----------
    keepbits : int, default 0
        The bits to keep; metadata requires at least 1 (a float keeps all its bits when
        ``keepbits`` reaches its mantissa's width).

    Examples
    --------
    >>> from zarrfast.codecs import BitroundCodec
    >>> arr = zarrfast.create_array(store={}, shape=(2,), dtype="float32",
    ...                             filters=[BitroundCodec(keepbits=3)])
    >>> arr[:] = [1.2345, 100.0]
    >>> arr[:]
    array([ 1.25, 96.  ], dtype=float32)
    """

    keepbits: int = 0
    name = "bitround"

    @classmethod
    def from_dict(cls, data: Any) -> BitroundCodec:
        """Make the codec from its metadata object.

        Parameters
        ----------
        data : dict
            ``{"name": "bitround", "configuration": {"keepbits": k}}``.

        Returns
        -------
        BitroundCodec
            The codec.

        Raises
        ------
        MetadataValidationError
            Another name, an unknown member, or ``keepbits`` that is not an integer >= 1.
        """
        config = parse_named_config(data, cls.name, allowed=("keepbits",))
        k = config.get("keepbits")
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise MetadataValidationError(f"bitround codec: keepbits must be an integer >= 1, "
                                          f"got {k!r}")
        return cls(keepbits=k)

    def to_dict(self) -> dict[str, Any]:
        """Give the codec's metadata object.

        Returns
        -------
        dict
            ``{"name": "bitround", "configuration": {"keepbits": k}}``.
        """
        return {"name": self.name, "configuration": {"keepbits": self.keepbits}}

    def validate(self, *, shape: tuple[int, ...], data_type: Any) -> None:
        """Check the codec can take chunks of ``data_type``.

        Parameters
        ----------
        shape : tuple of int
            The chunk shape (any).
        data_type : DataType
            The data type of the chunks.

        Raises
        ------
        MetadataValidationError
            Not an integer or floating-point type.
        """
        _numeric(data_type, self.name)

    def encode(self, chunk: np.ndarray) -> np.ndarray:
        """Round a chunk's values to ``keepbits`` significant bits.

        Parameters
        ----------
        chunk : numpy.ndarray
            The chunk (floats of 2, 4 or 8 bytes, or integers).

        Returns
        -------
        numpy.ndarray
            The rounded values, of the chunk's data type.  An integer magnitude that
            rounding would carry past the type's largest value is truncated instead.
        """
        if chunk.dtype.kind == "f":
            import numcodecs

            mantissa = {2: 10, 4: 23, 8: 52}[chunk.dtype.itemsize]
            if self.keepbits >= mantissa:
                return chunk
            out = numcodecs.BitRound(keepbits=self.keepbits).encode(chunk)
            return np.asarray(out).view(chunk.dtype).reshape(chunk.shape)
        return _round_int(chunk, self.keepbits)

    def decode(self, chunk: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
        """Give the stored values as they are (they were rounded when written).

        Parameters
        ----------
        chunk : numpy.ndarray
            The stored values.
        shape : tuple of int
            The chunk shape.

        Returns
        -------
        numpy.ndarray
            ``chunk`` with ``shape``.
        """
        return chunk.reshape(shape)


def _round_int(chunk: np.ndarray, keepbits: int) -> np.ndarray:
    """Integers with their magnitude rounded (half to even) to ``keepbits`` bits from its
    most significant set bit; a magnitude the rounding would carry past the data type's
    largest value is truncated instead (the registry's sample data: uint8 255 -> 224)."""
    signed = chunk.dtype.kind == "i"
    x = chunk.astype(np.int64) if signed else chunk.astype(np.uint64)
    neg = x < 0 if signed else np.zeros(x.shape, dtype=bool)
    mag = np.where(neg, -(x + 1), x).astype(np.uint64) + neg.astype(np.uint64)  # |x|
    bitlen = np.zeros(mag.shape, dtype=np.uint64)
    for k in range(64):
        bitlen += (mag >> np.uint64(k)) != 0
    drop = np.maximum(bitlen.astype(np.int64) - keepbits, 0).astype(np.uint64)
    one = np.uint64(1)
    base = mag >> drop
    low = mag - (base << drop)
    half = np.where(drop > 0, one << (drop - np.minimum(drop, one)), 0).astype(np.uint64)
    up = (drop > 0) & ((low > half) | ((low == half) & ((base & one) == one)))
    info = np.iinfo(chunk.dtype)
    limit = np.where(neg, np.uint64(-int(info.min)), np.uint64(info.max))
    carried = base + up.astype(np.uint64)
    # (compared before shifting: a carry out of uint64 would wrap to 0)
    rounded = np.where(carried > (limit >> drop), base, carried) << drop
    if not signed:
        return rounded.astype(chunk.dtype)
    out = rounded.astype(object if chunk.dtype.itemsize == 8 else np.int64)
    return np.where(neg, -out, out).astype(chunk.dtype)


# -- reshape --------------------------------------------------------------------------

@dataclass(frozen=True)
class ReshapeCodec(ArrayArrayCodec):
    """``reshape``: the chunk, in C order, with the shape the configuration gives.

    An array -> array codec of the extension registry (zarr-extensions
    ``codecs/reshape``), recorded as
    ``{"name": "reshape", "configuration": {"shape": [...]}}``.  The elements keep their
    C order; only the shape the next codecs see changes (e.g. to hand a 3-d chunk to a
    codec that takes 2-d data).

    Parameters
    ----------
    shape : tuple, default ()
        One entry per output dimension: a size, ``-1`` (at most once: whatever size
        makes the element count match), or a tuple of input dimensions (strictly
        increasing) whose sizes multiply to this one.  The constructor does not check
        it: [from_dict][zarrfast.codecs.ReshapeCodec.from_dict] and ``validate`` do.

    Examples
    --------
    >>> from zarrfast.codecs import ReshapeCodec
    >>> codec = ReshapeCodec(shape=((0, 1), -1))
    >>> codec.encoded_shape((2, 3, 4))
    (6, 4)
    >>> arr = zarrfast.create_array(store={}, shape=(2, 3, 4), dtype="int16",
    ...                             filters=[codec])
    >>> arr[:] = np.arange(24).reshape(2, 3, 4)
    >>> int(arr[1, 2, 3])
    23
    """

    shape: tuple = ()
    name = "reshape"

    @classmethod
    def from_dict(cls, data: Any) -> ReshapeCodec:
        """Make the codec from its metadata object.

        Parameters
        ----------
        data : dict
            ``{"name": "reshape", "configuration": {"shape": [...]}}``.

        Returns
        -------
        ReshapeCodec
            The codec.

        Raises
        ------
        MetadataValidationError
            Another name, an unknown member, or a ``shape`` that is not a non-empty list
            of sizes, ``-1`` (once) and increasing lists of input dimensions.
        """
        config = parse_named_config(data, cls.name, allowed=("shape",))
        spec = config.get("shape")
        if not isinstance(spec, list) or not spec:
            raise MetadataValidationError(f"reshape codec: shape must be a non-empty list, "
                                          f"got {spec!r}")
        out: list[Any] = []
        for s in spec:
            if isinstance(s, list) and s and all(isinstance(d, int) and not isinstance(d, bool)
                                                 and d >= 0 for d in s):
                out.append(tuple(s))
            elif isinstance(s, int) and not isinstance(s, bool) and (s >= 1 or s == -1):
                out.append(s)
            else:
                raise MetadataValidationError(
                    f"reshape codec: each shape entry must be a positive size, -1 or a list of "
                    f"input dimensions, got {s!r}")
        if sum(1 for s in out if s == -1) > 1:
            raise MetadataValidationError("reshape codec: -1 may occur at most once in shape")
        dims = [d for s in out if isinstance(s, tuple) for d in s]
        if any(b <= a for a, b in zip(dims, dims[1:], strict=False)):
            raise MetadataValidationError(f"reshape codec: the input dimensions {dims} must be "
                                          f"strictly increasing")
        return cls(shape=tuple(out))

    def to_dict(self) -> dict[str, Any]:
        """Give the codec's metadata object.

        Returns
        -------
        dict
            ``{"name": "reshape", "configuration": {"shape": [...]}}``.
        """
        return {"name": self.name, "configuration": {
            "shape": [list(s) if isinstance(s, tuple) else s for s in self.shape]}}

    def encoded_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """Give the shape a chunk of ``shape`` is reshaped to.

        Parameters
        ----------
        shape : tuple of int
            The chunk shape.

        Returns
        -------
        tuple of int
            The output shape, ``-1`` and input dimension groups resolved.

        Raises
        ------
        MetadataValidationError
            The element counts differ, or a group of input dimensions does not line up
            with the output dimensions around it.
        """
        out = [math.prod(shape[d] for d in s) if isinstance(s, tuple) else s
               for s in self.shape]
        total = math.prod(shape)
        if -1 in out:
            known = math.prod(s for s in out if s != -1)
            if known == 0 or total % known:
                raise MetadataValidationError(f"reshape codec: {total} elements cannot be "
                                              f"shaped as {self.to_dict()['configuration']}")
            out[out.index(-1)] = total // known
        if math.prod(out) != total:
            raise MetadataValidationError(f"reshape codec: shape {out} holds {math.prod(out)} "
                                          f"elements, the chunk {list(shape)} holds {total}")
        for i, s in enumerate(self.shape):
            if isinstance(s, tuple):
                before = math.prod(shape[: s[0]])
                after = math.prod(shape[s[-1] + 1:])
                if (math.prod(out[:i]) != before or math.prod(out[i + 1:]) != after
                        or s[-1] >= len(shape)):
                    raise MetadataValidationError(
                        f"reshape codec: output dimension {i} from input dimensions "
                        f"{list(s)} does not line up with chunk shape {list(shape)}")
        return tuple(out)

    def validate(self, *, shape: tuple[int, ...], data_type: Any) -> None:
        """Check the codec can take chunks of ``data_type``.

        Parameters
        ----------
        shape : tuple of int
            The chunk shape.
        data_type : DataType
            The data type of the chunks.

        Raises
        ------
        MetadataValidationError
            The chunk cannot be reshaped (see ``encoded_shape``).
        """
        self.encoded_shape(shape)

    def encode(self, chunk: np.ndarray) -> np.ndarray:
        """Reshape a chunk, keeping its elements' C order.

        Parameters
        ----------
        chunk : numpy.ndarray
            The chunk.

        Returns
        -------
        numpy.ndarray
            The chunk with ``encoded_shape(chunk.shape)``.
        """
        return np.ascontiguousarray(chunk).reshape(self.encoded_shape(chunk.shape))

    def decode(self, chunk: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
        """Give a reshaped chunk its own shape back.

        Parameters
        ----------
        chunk : numpy.ndarray
            The reshaped chunk.
        shape : tuple of int
            The chunk shape.

        Returns
        -------
        numpy.ndarray
            The chunk with ``shape``.
        """
        return np.ascontiguousarray(chunk).reshape(shape)
