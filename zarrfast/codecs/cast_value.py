"""``zarr.codecs.cast_value``: zarr-python 3.4's ``CastValue`` codec class.

The ``cast_value`` codec of the zarr-extensions registry, under zarr-python 3.4's name and
constructor: ``CastValue(data_type=..., rounding="nearest-even", out_of_range=None,
scalar_map=None)``, keyword-only, with its attributes (``dtype`` a ``ZDType``, ``rounding``,
``out_of_range``, ``scalar_map`` as ``{"encode": {in: out}, ...}``) and its ``to_dict``.
It encodes and decodes as :class:`~zarrfast.codecs.CastValueCodec` (zarrfast's class of
the codec, which arrays read from metadata hold; it needs the ``cast-value-rs`` package).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from zarrfast.codecs._base import parse_named_config
from zarrfast.codecs.arithmetic import CastValueCodec

__all__ = ["CAST_VALUE_FLOAT_DTYPES", "CAST_VALUE_INT_DTYPES", "PERMITTED_DATA_TYPE_NAMES",
           "CastValue", "parse_scalar_map"]

#: the integer types ``cast_value`` converts from and to (zarr-python 3.4's set)
CAST_VALUE_INT_DTYPES = frozenset({
    "int2", "int4", "int8", "int16", "int32", "int64",
    "uint2", "uint4", "uint8", "uint16", "uint32", "uint64"})
#: the floating-point types ``cast_value`` converts from and to (zarr-python 3.4's set)
CAST_VALUE_FLOAT_DTYPES = frozenset({
    "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn", "float8_e3m4", "float8_e4m3",
    "float8_e4m3b11fnuz", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz",
    "float8_e8m0fnu", "bfloat16", "float16", "float32", "float64"})
#: every type ``cast_value`` is defined for
PERMITTED_DATA_TYPE_NAMES = CAST_VALUE_INT_DTYPES | CAST_VALUE_FLOAT_DTYPES


def parse_scalar_map(obj: Mapping[str, Any]) -> dict[str, dict[Any, Any]]:
    """A scalar map as ``{"encode": {in: out}, "decode": {...}}`` (zarr-python 3.4's form).

    Parameters
    ----------
    obj : dict
        Its JSON form (``{"encode": [[in, out], ...]}``) or this form.

    Returns
    -------
    dict
        Each direction given, as a dict.
    """
    out: dict[str, dict[Any, Any]] = {}
    for direction in ("encode", "decode"):
        entries = obj.get(direction) if isinstance(obj, Mapping) else None
        if entries is not None:
            out[direction] = dict(entries) if not isinstance(entries, Mapping) \
                else dict(entries)
    return out


@dataclass(frozen=True, init=False, repr=False)
class CastValue(CastValueCodec):
    """``cast_value`` as zarr-python 3.4's ``CastValue``: values stored as another type.

    Parameters
    ----------
    data_type : str or ZDType
        The stored type: an integer or floating-point type (its name, such as
        ``"uint8"``, or a ``ZDType``, zarrfast's or zarr-python's).
    rounding : str, default "nearest-even"
        How values between two of the stored type are rounded.
    out_of_range : {"clamp", "wrap"} or None, default None
        What becomes of a value the stored type cannot hold (``None``: an error).
    scalar_map : dict, optional
        Values mapped before the cast: ``{"encode": [[in, out], ...], "decode": ...}``
        (or with dicts).

    Raises
    ------
    ValueError
        ``data_type`` is not an integer or floating-point type.

    Examples
    --------
    >>> from zarrfast.codecs import CastValue
    >>> CastValue(data_type="uint8", out_of_range="clamp").to_dict()
    {'name': 'cast_value', 'configuration': {'data_type': 'uint8', 'out_of_range': 'clamp'}}
    """

    def __init__(self, *, data_type: Any, rounding: str = "nearest-even",
                 out_of_range: str | None = None, scalar_map: Any = None) -> None:
        from zarrfast.metadata.zdtype import foreign_zdtype, parse_dtype

        # (another library's data type object, zarr-python's UInt8(), as zarrfast's)
        zdtype = parse_dtype(foreign_zdtype(data_type) or data_type, zarr_format=3)
        name = zdtype.to_json(zarr_format=3)
        if not isinstance(name, str) or name not in PERMITTED_DATA_TYPE_NAMES:
            raise ValueError(
                f"Invalid target data type {data_type!r}. cast_value codec only supports "
                f"integer and floating-point data types. Got {zdtype}.")
        parsed = parse_scalar_map(scalar_map) if scalar_map is not None else None
        config: dict[str, Any] = {"data_type": name}
        if rounding != "nearest-even":
            config["rounding"] = rounding
        if out_of_range is not None:
            config["out_of_range"] = out_of_range
        if parsed is not None:
            config["scalar_map"] = {d: [[k, v] for k, v in m.items()]
                                    for d, m in parsed.items()}
        object.__setattr__(self, "configuration", config)
        self.__post_init__()  # (zarrfast's checks of the configuration)
        object.__setattr__(self, "_scalar_map", parsed)

    def __repr__(self) -> str:  # zarr-python 3.4's
        return (f"CastValue(dtype={self.dtype!r}, rounding={self.rounding!r}, "
                f"out_of_range={self.out_of_range!r}, scalar_map={self.scalar_map!r})")

    @property
    def dtype(self) -> Any:
        """The stored data type, a ``ZDType`` (``UInt8()``)."""
        from zarrfast.metadata.zdtype import parse_dtype

        return parse_dtype(self.configuration["data_type"], zarr_format=3)

    @property
    def rounding(self) -> str:
        """How values between two of the stored type are rounded."""
        return str(self.configuration.get("rounding", "nearest-even"))

    @property
    def out_of_range(self) -> str | None:
        """What becomes of a value the stored type cannot hold (``None``: an error)."""
        return self.configuration.get("out_of_range")

    @property
    def scalar_map(self) -> dict[str, dict[Any, Any]] | None:
        """The values mapped before the cast, ``{"encode": {in: out}, ...}``, or None."""
        return self.__dict__.get("_scalar_map")

    def compute_encoded_size(self, input_byte_length: int, chunk_spec: Any) -> int:
        """The bytes of an encoded chunk, as zarr-python's ``compute_encoded_size``.

        Parameters
        ----------
        input_byte_length : int
            The bytes of the chunk given to the codec.
        chunk_spec : Any
            zarr-python's ``ArraySpec`` of the chunk (its ``dtype``, a ``ZDType``, is the
            type of the values given).

        Returns
        -------
        int
            The bytes of as many values of the stored type.

        Raises
        ------
        ValueError
            The values given are not of a fixed-size integer or floating-point type.
        """
        source = chunk_spec.dtype
        name = source.to_json(zarr_format=3)
        itemsize = source.to_native_dtype().itemsize
        if not isinstance(name, str) or name not in PERMITTED_DATA_TYPE_NAMES or not itemsize:
            raise ValueError(f"cast_value codec only supports fixed-size integer and "
                             f"floating-point data types; got source data type {source!r}")
        return input_byte_length // itemsize * self.dtype.to_native_dtype().itemsize

    @classmethod
    def from_dict(cls, data: Any) -> CastValue:
        """Make the codec from its metadata object.

        Parameters
        ----------
        data : dict
            ``{"name": "cast_value", "configuration": {"data_type": ..., ...}}``.

        Returns
        -------
        CastValue
            The codec.

        Raises
        ------
        MetadataValidationError
            Another name, or an unknown member.
        """
        config = parse_named_config(data, cls.name, allowed=("data_type", "rounding",
                                                             "out_of_range", "scalar_map"))
        return cls(**config)

    def to_dict(self) -> dict[str, Any]:
        """Give the codec's metadata object, as zarr-python 3.4 writes it.

        Returns
        -------
        dict
            ``{"name": "cast_value", "configuration": {"data_type": ..., ...}}``, with
            ``rounding`` unless ``"nearest-even"`` and the others when given.
        """
        return {"name": self.name, "configuration": dict(self.configuration)}
