"""zarr-python's older array-creation arguments (``zarr.create``, ``AsyncArray.create``):
``chunk_shape``, ``codecs`` (one full v3 codec list), ``compressor``, ``filters`` with an
``object_codec``, ``dimension_separator`` and ``write_empty_chunks``, translated into
what :func:`~zarrfast.hierarchy.create.create_array_at` takes.  One translation for
:func:`zarrfast.create` and :meth:`zarrfast.AsyncArray.create`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from zarrfast import config as zconfig
from zarrfast.errors import ZarrfastError
from zarrfast.hierarchy.array import Array
from zarrfast.hierarchy.create import DEFAULT_FILL_VALUE, check_zarr_format, create_array_at
from zarrfast.storage import Store

__all__ = ["create_legacy", "split_codecs"]


def split_codecs(codecs: Any) -> dict[str, Any]:
    """A full v3 codec list as filters / serializer / compressors arguments."""
    from zarrfast.codecs import ArrayArrayCodec, ArrayBytesCodec, parse_codec

    parsed = [parse_codec(c, where="codecs") for c in codecs]
    parsed = [c for c in parsed if c is not None]
    ab = [i for i, c in enumerate(parsed) if isinstance(c, ArrayBytesCodec)]
    if len(ab) != 1:
        raise ZarrfastError(f"codecs must hold exactly one array -> bytes codec, got {codecs!r}")
    i = ab[0]
    if not all(isinstance(c, ArrayArrayCodec) for c in parsed[:i]):
        raise ZarrfastError(f"codecs {codecs!r}: only array -> array codecs may come first")
    return {"filters": parsed[:i], "serializer": parsed[i], "compressors": parsed[i + 1:]}


def create_legacy(store: Store, path: str, *, shape: Any, dtype: Any = None,
                  chunks: Any = None, compressor: Any = "auto",
                  fill_value: Any = DEFAULT_FILL_VALUE, order: str | None = None,
                  overwrite: bool = False, filters: Any = None, object_codec: Any = None,
                  dimension_separator: str | None = None,
                  write_empty_chunks: bool | None = None, zarr_format: int | None = None,
                  attributes: Mapping[str, Any] | None = None, chunk_shape: Any = None,
                  chunk_key_encoding: Any = None, codecs: Any = None,
                  dimension_names: Iterable[str | None] | None = None,
                  config: Mapping[str, Any] | None = None, data: Any = None) -> Array:
    """The array at ``path`` made from zarr-python's older creation arguments (v3 unless
    ``zarr_format=2``); ``data``, if given, is written."""
    check_zarr_format(zarr_format)
    fmt = zarr_format if zarr_format is not None else zconfig.get("default_zarr_format")
    where = f"array {('/' + path)!r}"
    # what zarr-python's create refuses, in its words (and its ValueError)
    if chunk_shape is not None and chunks is not None:
        raise ZarrfastError(f"{where}: Only one of chunk_shape or chunks can be provided.")
    if fmt == 2:
        for name, value, instead in (
                ("dimension_names", dimension_names, None),
                ("chunk_key_encoding", chunk_key_encoding, "dimension_separator"),
                ("codecs", codecs, "filters and compressor")):
            if value is not None:
                raise ZarrfastError(f"{where}: {name} cannot be used for arrays with zarr_format "
                                    f"2." + (f" Use {instead} instead." if instead else ""))
    elif zarr_format == 3:  # (asked for: without it, older code's compressor still works)
        for name, given, instead in (
                ("dimension_separator", dimension_separator is not None, "chunk_key_encoding"),
                ("filters", filters is not None, "array-to-array codecs"),
                ("compressor", not (isinstance(compressor, str) and compressor == "auto"),
                 "bytes-to-bytes codecs")):
            if given:
                raise ZarrfastError(f"{where}: {name} cannot be used for arrays with zarr_format "
                                    f"3. Use {instead} instead.")
    cfg = dict(config or {})
    if write_empty_chunks is not None:
        cfg["write_empty_chunks"] = write_empty_chunks
    chunks = chunk_shape if chunk_shape is not None else chunks
    if chunks is None or chunks is True:
        chunks = "auto"
    elif chunks is False:
        chunks = shape
    if dimension_separator is not None:
        chunk_key_encoding = {"name": "v2" if fmt == 2 else "default",
                              "separator": dimension_separator}
    extra: dict[str, Any] = {}
    if fmt == 3 and codecs is not None:
        extra.update(split_codecs(codecs))
    else:
        extra["compressors"] = compressor
        if filters is not None or object_codec is not None:
            extra["filters"] = [*(filters or ()), *([object_codec] if object_codec else [])]
    return create_array_at(
        store, path, shape=shape, dtype=dtype, chunks=chunks, fill_value=fill_value,
        order=order, zarr_format=fmt, attributes=attributes,
        chunk_key_encoding=chunk_key_encoding, dimension_names=dimension_names,
        overwrite=overwrite, config=cfg, data=data, **extra,
    )
