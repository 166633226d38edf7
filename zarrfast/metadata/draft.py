"""Pre-final Zarr v3 layouts: detect them, read them and convert them to final v3.

Two storage layouts predate the final Zarr v3.0 specification; no maintained
library reads them any more.  Both have one *entry point* document,
``zarr.json`` at the store root, and keep metadata and chunks in separate key
spaces:

``draft-2022`` (core spec editor's draft of May 2022, ``zarr_format``
``"https://purl.org/zarr/spec/core/3.0"``)
    entry point ``{"zarr_format": ..., "metadata_encoding": {"type": "json",
    "metadata_key_suffix": ".json"}, "extensions": [...]}``; array documents
    ``meta/<path>.array.json`` (root: ``meta/array.json``), group documents
    ``meta/<path>.group.json`` (root: ``meta/group.json``); chunks
    ``data/<path>/c<i><sep><j>`` (root array: ``data/c<i>...``, 0-d: ``c``);
    array members ``shape``, ``data_type`` (``"<f8"``, ``"|u1"`` or the names
    ``"float64"``...), ``chunk_grid`` ``{"type": "regular", "chunk_shape":
    [...], "separator": "/"|"."}``, ``chunk_memory_layout`` ``"C"``/``"F"``,
    ``fill_value``, ``codecs`` ``[{"type": URI, "configuration": {...}}]``,
    ``extensions``, ``storage_transformers``, ``attributes``.

``zarrita`` (zarrita and zarr-python 2.x with ``ZARR_V3_EXPERIMENTAL_API=1``,
``zarr_format`` ``"https://purl.org/zarr/spec/protocol/core/3.0"``)
    entry point ``{"zarr_format": ..., "metadata_encoding": <same URI>,
    "metadata_key_suffix": ".json", "extensions": []}``; documents
    ``meta/root/<path>.array.json`` / ``.group.json`` (root:
    ``meta/root.group.json``); chunks ``data/root/<path>/c0/0/0`` (0-d: ``c0``);
    one ``compressor`` ``{"codec": URI, "configuration": {...}}`` instead of
    ``codecs``; ``fill_value`` may be ``null``.

Groups need no document in either layout: a group is *implicit* when nodes
exist below it.  Children are found with ``list_dir`` of the metadata prefix
(keys ending ``.array.json`` are arrays, ``.group.json`` explicit groups, and
sub-prefixes implicit groups).

Every draft array converts to a final :class:`~zarrfast.metadata.v3.ArrayMetadata`
whose codecs produce byte-for-byte the same chunks: ``chunk_memory_layout
"F"`` becomes a leading ``transpose`` codec with the reversed order, the data
type's byte order becomes the ``bytes`` codec's ``endian``, draft codec URIs
become ``gzip``/``zstd``/``blosc``/``transpose`` (zarrita's ``zlib``, ``bz2``,
``lzma`` and ``lz4`` become ``numcodecs.zlib``... as zarr-python 3 names them).
Its chunk key encoding, :class:`DraftChunkKeyEncoding`, reproduces the draft
keys below :meth:`DraftHierarchy.chunk_path`; :func:`final_metadata` swaps it
for the ``default`` encoding, under which the same chunk bytes are stored at
``<path>/c/0/1`` (see :func:`final_chunk_key`).

Errors are :class:`~zarrfast.errors.MetadataError` subclasses and start with
the store key of the offending document.
"""

from __future__ import annotations

import math
import re
import warnings
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from zarrfast.errors import (
    ContainsArrayAndGroupError,
    FillValueError,
    InvalidNodeNameError,
    MetadataError,
    MetadataValidationError,
    NodeNotFoundError,
    UnknownCodecError,
    UnsupportedDataTypeError,
    add_context,
)
from zarrfast.metadata.chunk_grid import (
    ChunkKeyEncoding,
    DefaultChunkKeyEncoding,
    RegularChunkGrid,
)
from zarrfast.metadata.dtype import DataType, data_type_from_numpy, parse_data_type
from zarrfast.metadata.limits import check_array_size
from zarrfast.metadata.paths import normalize_path, validate_node_name
from zarrfast.metadata.v3 import ArrayMetadata, GroupMetadata, _load_json

__all__ = [
    "CORE_2022_URI",
    "DRAFT_2022",
    "PROTOCOL_URI",
    "ZARRITA",
    "DraftChunkKeyEncoding",
    "DraftHierarchy",
    "EntryPoint",
    "convert_array_document",
    "convert_group_document",
    "detect",
    "final_chunk_key",
    "final_metadata",
    "parse_entry_point",
]

DRAFT_2022 = "draft-2022"
ZARRITA = "zarrita"
CORE_2022_URI = "https://purl.org/zarr/spec/core/3.0"
PROTOCOL_URI = "https://purl.org/zarr/spec/protocol/core/3.0"
ENTRY_POINT_KEY = "zarr.json"

_INT64_MAX = 2**63 - 1
#: a root ``zarr.json`` larger than this (bytes) without ``purl.org`` is not parsed to
#: find whether it is a draft's entry point (see ``parse_entry_point``)
_PARSE_ONCE = 1 << 20
_LAYOUT_OF_FORMAT = {CORE_2022_URI: DRAFT_2022, PROTOCOL_URI: ZARRITA}

#: members only a final Zarr v3 (or v2) document has; finding one in a draft document
#: means the store mixes layouts
_FINAL_MEMBERS = {"zarr_format", "node_type", "chunk_key_encoding", "dimension_names",
                  "consolidated_metadata"}
_ENTRY_MEMBERS = {"zarr_format", "metadata_encoding", "metadata_key_suffix", "extensions"}
_ARRAY_MEMBERS = {
    DRAFT_2022: {"shape", "data_type", "chunk_grid", "chunk_memory_layout", "fill_value",
                 "codecs", "extensions", "storage_transformers", "attributes"},
    ZARRITA: {"shape", "data_type", "chunk_grid", "chunk_memory_layout", "fill_value",
              "compressor", "extensions", "storage_transformers", "attributes",
              "dimension_separator"},
}
#: the member each layout has and the other lacks (for "mixes layouts" messages)
_OTHER_LAYOUT_MEMBERS = {
    DRAFT_2022: {"compressor": "zarrita-era", "dimension_separator": "zarrita-era"},
    ZARRITA: {"codecs": "2022-draft"},
}


# ---------------------------------------------------------------------------
# chunk keys
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class DraftChunkKeyEncoding(ChunkKeyEncoding):
    """Draft chunk keys: ``"c" + sep.join(coords)`` (``c0/1``, ``c0.1``).

    A 0-d array's single chunk is ``c`` in the 2022 draft and ``c0`` as
    zarr-python 2.x wrote it (``scalar_key``).  Not a final v3 encoding: it is
    only used to read drafts in place (see :func:`final_metadata`).
    """

    separator: str = "/"
    write_configuration: bool = field(default=True, compare=False)
    scalar_key: str = "c"
    name = "zarrfast.draft"

    def key_prefix(self) -> str:
        return "c"

    def encode(self, coords: tuple[int, ...]) -> str:
        if not coords:
            return self.scalar_key
        return "c" + self.separator.join(map(str, coords))




# ---------------------------------------------------------------------------
# the entry point
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class EntryPoint:
    """The parsed root ``zarr.json`` of a draft hierarchy."""

    layout: str
    zarr_format: str
    metadata_key_suffix: str = ".json"
    extensions: tuple[dict, ...] = ()


def _check_extensions(value: Any, where: str) -> tuple[dict, ...]:
    """``extensions``: objects with ``extension`` (URI) and ``must_understand``.  No
    extension is known, so any that must be understood is an error."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise MetadataValidationError(f"{where}: 'extensions' must be a list, got {value!r}")
    for i, ext in enumerate(value):
        if not isinstance(ext, dict) or not isinstance(ext.get("extension"), str):
            raise MetadataValidationError(
                f"{where}: extensions[{i}] must be an object with an 'extension' URI, got {ext!r}"
            )
        must = ext.get("must_understand", True)
        if not isinstance(must, bool):
            raise MetadataValidationError(
                f"{where}: extensions[{i}] ({ext['extension']!r}): must_understand must be "
                f"true or false, got {must!r}"
            )
        if must:
            raise MetadataValidationError(
                f"{where}: extensions[{i}]: extension {ext['extension']!r} is not supported "
                f"and is marked must_understand: true"
            )
    return tuple(value)


def _check_suffix(suffix: Any, where: str) -> str:
    if (not isinstance(suffix, str) or not suffix or "/" in suffix
            or not re.fullmatch(r"[A-Za-z0-9._-]+", suffix)):
        raise MetadataValidationError(
            f"{where}: metadata_key_suffix must be a non-empty string of key characters "
            f"without '/', got {suffix!r}"
        )
    return suffix


def _parse_metadata_encoding(doc: dict, where: str) -> str:
    """Validate ``metadata_encoding`` and return the metadata key suffix."""
    if "metadata_encoding" not in doc:
        raise MetadataValidationError(f"{where}: required member 'metadata_encoding' is missing")
    enc = doc["metadata_encoding"]
    top = doc.get("metadata_key_suffix")
    if isinstance(enc, str):
        # zarrita (and the drafts before PR #171): a URI meaning JSON, suffix at the top
        if enc not in (PROTOCOL_URI, CORE_2022_URI):
            raise MetadataValidationError(
                f"{where}: metadata_encoding {enc!r} is not supported; only JSON "
                f"({PROTOCOL_URI!r} or {{'type': 'json', ...}}) is"
            )
        return _check_suffix(top if top is not None else ".json", where)
    if isinstance(enc, dict):
        if "extension" in enc:
            raise MetadataValidationError(
                f"{where}: metadata_encoding extension {enc['extension']!r} "
                f"(type {enc.get('type')!r}) is not supported; only JSON is"
            )
        if enc.get("type") != "json":
            raise MetadataValidationError(
                f"{where}: metadata_encoding type must be 'json', got {enc.get('type')!r}"
            )
        unknown = set(enc) - {"type", "metadata_key_suffix"}
        if unknown:
            raise MetadataValidationError(
                f"{where}: metadata_encoding has unknown members {sorted(unknown)}"
            )
        inner = enc.get("metadata_key_suffix")
        if inner is not None and top is not None and inner != top:
            raise MetadataValidationError(
                f"{where}: metadata_key_suffix {top!r} contradicts "
                f"metadata_encoding.metadata_key_suffix {inner!r}"
            )
        suffix = inner if inner is not None else top
        return _check_suffix(suffix if suffix is not None else ".json", where)
    raise MetadataValidationError(
        f"{where}: metadata_encoding must be an object {{'type': 'json', "
        f"'metadata_key_suffix': '.json'}} or a URI, got {enc!r}"
    )


def parse_entry_point(raw: bytes | bytearray | memoryview | None,
                      key: str = ENTRY_POINT_KEY) -> EntryPoint | None:
    """Parse a root ``zarr.json``: an :class:`EntryPoint` for a draft, ``None`` for
    anything else (a final v3 document, or no document)."""
    if raw is None:
        return None
    raw = bytes(raw)
    if len(raw) > _PARSE_ONCE and b"purl.org" not in raw and b"\\u" not in raw:
        # a draft's zarr_format is a URI at purl.org (else the answer is None, or an error
        # for an unknown one at purl.org/zarr/spec), which only a \u escape could hide:
        # the large root zarr.json of a consolidated hierarchy is not parsed here as well
        # as where it is read (where a malformed one is refused, naming it)
        return None
    doc = _load_json(raw, key)
    if not isinstance(doc, dict):
        return None
    zarr_format = doc.get("zarr_format")
    if not isinstance(zarr_format, str):
        return None  # final v3 (3), or not Zarr at all: not ours to judge
    layout = _LAYOUT_OF_FORMAT.get(zarr_format)
    if layout is None:
        if "purl.org/zarr/spec" in zarr_format:
            raise MetadataValidationError(
                f"{key}: unsupported draft zarr_format {zarr_format!r}; zarrfast reads "
                f"{CORE_2022_URI!r} (2022 draft) and {PROTOCOL_URI!r} (zarrita era)"
            )
        return None
    final = sorted((set(doc) - _ENTRY_MEMBERS) & (
        _FINAL_MEMBERS | {"shape", "data_type", "chunk_grid", "codecs", "fill_value",
                          "attributes"}))
    if final:
        raise MetadataValidationError(
            f"{key}: the entry point of a {layout} hierarchy mixes layouts: member(s) "
            f"{final} belong in node metadata (final Zarr v3 zarr.json), not in the entry point"
        )
    suffix = _parse_metadata_encoding(doc, key)
    extensions = _check_extensions(doc.get("extensions", []), key)
    return EntryPoint(layout=layout, zarr_format=zarr_format, metadata_key_suffix=suffix,
                      extensions=extensions)


def detect(store: Any) -> EntryPoint | None:
    """The draft entry point of ``store`` (its root ``zarr.json``), or ``None`` when the
    store is not a draft hierarchy (final v3, v2, or empty)."""
    return parse_entry_point(store.get(ENTRY_POINT_KEY), ENTRY_POINT_KEY)


# ---------------------------------------------------------------------------
# data types and fill values
# ---------------------------------------------------------------------------

_TYPESTR = re.compile(r"^([<>|=]?)([biufc])([0-9]+)$")
_RAW = re.compile(r"^r[1-9][0-9]*$")
_CORE_NAMES = {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
               "uint64", "float16", "float32", "float64", "complex64", "complex128"}


def _typestr(value: str, where: str) -> tuple[DataType, str | None] | None:
    """``"<f8"``, ``">i4"``, ``"|u1"``, ``"u1"``, ``"b1"`` -> (data type, endian or None)."""
    m = _TYPESTR.match(value)
    if m is None:
        return None
    order, kind, size = m.groups()
    try:
        dt = np.dtype(kind + size)
    except TypeError:
        return None
    if dt.kind != kind or dt.itemsize != int(size):  # e.g. "b2"
        return None
    data_type = data_type_from_numpy(dt, where=where)
    endian = {"<": "little", ">": "big"}.get(order)
    return data_type, endian


def _parse_data_type(value: Any, where: str) -> tuple[DataType, str | None]:
    """A draft ``data_type`` -> (final data type, endian the name implies or None)."""
    if isinstance(value, dict):
        ext = value.get("extension")
        typ = value.get("type")
        if isinstance(typ, str):
            found = _typestr(typ, where)
            if found is not None:  # zarrita's complex types: {"extension": ..., "type": "<c8"}
                return found
        fallback = value.get("fallback")
        if fallback is not None and not isinstance(fallback, (str, list)):
            raise UnsupportedDataTypeError(
                f"{where}: data type extension {ext!r}: 'fallback' must be a data type or a "
                f"list of them, got {fallback!r}"
            )
        for fb in ([fallback] if isinstance(fallback, str) else fallback or []):
            if isinstance(fb, str):
                try:
                    found = _parse_data_type(fb, where)
                except UnsupportedDataTypeError:
                    continue
                warnings.warn(
                    f"{where}: data type extension {ext!r} (type {typ!r}) is not supported; "
                    f"reading the data as its fallback {fb!r}",
                    UserWarning,
                    stacklevel=3,
                )
                return found
        raise UnsupportedDataTypeError(
            f"{where}: data type extension {ext!r} (type {typ!r}) is not supported and has "
            f"no usable fallback"
        )
    if not isinstance(value, str):
        raise UnsupportedDataTypeError(
            f"{where}: expected a data type such as '<f8' or 'float64', got {value!r}"
        )
    if value in _CORE_NAMES or _RAW.match(value):
        return parse_data_type(value, where=where), None
    found = _typestr(value, where)
    if found is None:
        raise UnsupportedDataTypeError(
            f"{where}: unknown data type {value!r}; expected a core name ('float64') or a "
            f"typestr such as '<f8', '>i4', '|u1', 'u1', 'bool'"
        )
    return found


_BITS = re.compile(r"^0b[01]+$")
_HEXS = re.compile(r"^0x[0-9a-fA-F]+$")


def _bit_pattern(data_type: DataType, value: str, where: str) -> np.generic:
    """A ``"0x…"``/``"0b…"`` fill value: the element's bits, most significant first."""
    n = data_type.itemsize
    digits = value[2:]
    width = 2 * n if value.startswith("0x") else 8 * n
    if len(digits) != width:
        raise FillValueError(
            f"{where}: {value!r} must have exactly {width} digits for the {n}-byte data type "
            f"{data_type.name}"
        )
    raw = int(digits, 16 if value.startswith("0x") else 2).to_bytes(n, "big")
    if data_type.kind != "V" and data_type.swap_unit > 1:
        arr = np.frombuffer(raw, dtype=data_type.dtype.newbyteorder(">"))
        return arr.astype(data_type.dtype)[0]
    return np.frombuffer(raw, dtype=data_type.dtype)[0]


def _parse_fill_value(data_type: DataType, value: Any, where: str) -> np.generic:
    if value is None:  # zarrita: "no fill value"; the final spec needs one
        return data_type.default_fill_value()
    if isinstance(value, str) and (_HEXS.match(value) or _BITS.match(value)) and (
        data_type.kind != "c"
    ):
        return _bit_pattern(data_type, value, where)

    def one(v: Any) -> Any:
        return "Infinity" if v == "+Infinity" else v

    if data_type.kind == "c" and isinstance(value, (list, tuple)):
        value = [one(v) for v in value]
    else:
        value = one(value)
    return data_type.parse_fill_value(value, where=where)


# ---------------------------------------------------------------------------
# codecs
# ---------------------------------------------------------------------------

_URI_PATTERNS = (
    # https://purl.org/zarr/spec/codec/gzip/1.0 (and the ".../codecs/..." spelling the
    # 2022 draft's example uses)
    re.compile(r"^https?://purl\.org/zarr/spec/codecs?/(?P<name>[A-Za-z0-9_.-]+)/"
               r"(?P<version>[0-9][0-9.]*)$"),
    # https://zarr-specs.readthedocs.io/en/latest/v3/codecs/transpose/v1.0.html
    re.compile(r"^https?://zarr-specs\.readthedocs\.io/en/[^/]+/(?:v3/)?codecs/"
               r"(?P<name>[A-Za-z0-9_.-]+)/v(?P<version>[0-9][0-9.]*)(?:\.html)?$"),
)
_CODECS_2022 = ("gzip", "zstd", "blosc", "transpose", "endian", "bytes")
_CODECS_ZARRITA = ("gzip", "zlib", "blosc", "zstd", "bz2", "lzma", "lz4")
#: compressors without a core v3 codec, named as zarr-python 3 names them
_NUMCODECS_NAMES = {"zlib": "numcodecs.zlib", "bz2": "numcodecs.bz2", "lzma": "numcodecs.lzma",
                    "lz4": "numcodecs.lz4"}
_SHUFFLE_NAMES = {0: "noshuffle", 1: "shuffle", 2: "bitshuffle"}


def _codec_name(uri: Any, known: tuple[str, ...], where: str) -> str:
    if not isinstance(uri, str):
        raise MetadataValidationError(f"{where}: codec URI must be a string, got {uri!r}")
    for pattern in _URI_PATTERNS:
        m = pattern.match(uri)
        if m is not None and m.group("name") in known and m.group("version") == "1.0":
            return m.group("name")
    raise UnknownCodecError(
        f"{where}: unknown codec {uri!r}; this layout's codecs are "
        f"{', '.join(f'https://purl.org/zarr/spec/codec/{n}/1.0' for n in known)}"
    )


def _blosc(config: dict, data_type: DataType, where: str) -> dict[str, Any]:
    unknown = set(config) - {"cname", "clevel", "shuffle", "blocksize", "typesize"}
    if unknown:
        raise MetadataValidationError(
            f"{where}: blosc: unknown configuration members {sorted(unknown)}"
        )
    shuffle = config.get("shuffle", 1)
    if isinstance(shuffle, bool) or not isinstance(shuffle, (int, str)):
        raise MetadataValidationError(f"{where}: blosc: invalid shuffle {shuffle!r}")
    if isinstance(shuffle, int):
        if shuffle == -1:  # numcodecs AUTOSHUFFLE
            shuffle = "bitshuffle" if data_type.itemsize == 1 else "shuffle"
        elif shuffle in _SHUFFLE_NAMES:
            shuffle = _SHUFFLE_NAMES[shuffle]
        else:
            raise MetadataValidationError(f"{where}: blosc: invalid shuffle {shuffle!r}")
    typesize = config.get("typesize", data_type.itemsize if data_type.itemsize <= 255 else 1)
    return {"name": "blosc", "configuration": {
        "cname": config.get("cname", "lz4"),
        "clevel": config.get("clevel", 5),
        "shuffle": shuffle,
        "typesize": typesize,
        "blocksize": config.get("blocksize", 0),
    }}


def _bytes_codec(name: str, config: dict, data_type: DataType, where: str) -> dict[str, Any]:
    """A draft bytes -> bytes codec (by short name) as a final codec's metadata object
    (the codec chain checks its configuration when the array opens)."""
    if name == "blosc":
        return _blosc(config, data_type, where)
    return {"name": _NUMCODECS_NAMES.get(name, name), "configuration": dict(config)}


def _draft_permutation(config: dict, ndim: int) -> tuple[int, ...]:
    """The permutation of a draft transpose codec: ``order`` ``"C"``, ``"F"`` or a
    permutation of the dimensions."""
    unknown = set(config) - {"order"}
    if unknown:
        raise MetadataValidationError(
            f"transpose codec: unknown configuration members {sorted(unknown)}")
    order = config.get("order", "C")
    if order == "C":
        return tuple(range(ndim))
    if order == "F":
        return tuple(reversed(range(ndim)))
    if (not isinstance(order, list) or not all(isinstance(i, int) and not isinstance(i, bool)
                                               for i in order)
            or sorted(order) != list(range(ndim))):
        raise MetadataValidationError(
            f"transpose codec: order must be 'C', 'F' or a permutation of "
            f"{list(range(ndim))}, got {order!r}")
    return tuple(order)


def _compose(p1: tuple[int, ...], p2: tuple[int, ...]) -> tuple[int, ...]:
    """``x.transpose(p1).transpose(p2) == x.transpose(_compose(p1, p2))``."""
    return tuple(p1[k] for k in p2)


def _build_chain(
    *,
    layout: str,
    doc: dict,
    data_type: DataType,
    type_endian: str | None,
    ndim: int,
    key: str,
) -> tuple[dict[str, Any], ...]:
    """The final codec chain (metadata objects) equivalent to the draft's layout +
    codecs/compressor."""
    layout_member = doc.get("chunk_memory_layout", "C")
    if isinstance(layout_member, dict):
        raise MetadataValidationError(
            f"{key}: chunk_memory_layout extension {layout_member.get('extension')!r} "
            f"(type {layout_member.get('type')!r}) is not supported"
        )
    if layout_member not in ("C", "F"):
        raise MetadataValidationError(
            f"{key}: chunk_memory_layout must be 'C' or 'F', got {layout_member!r}"
        )
    perm = tuple(range(ndim))
    if layout_member == "F":
        perm = tuple(reversed(perm))
    endian = type_endian
    codec_endian: str | None = None
    tail: list[dict[str, Any]] = []

    if layout == DRAFT_2022:
        raw = doc.get("codecs", [])
        if raw is None:
            raw = []
        if not isinstance(raw, list):
            raise MetadataValidationError(f"{key}: 'codecs' must be a list, got {raw!r}")
        seen_bytes = False  # after an endian codec or a bytes -> bytes codec
        for i, c in enumerate(raw):
            where = f"{key}: codecs[{i}]"
            if not isinstance(c, dict):
                raise MetadataValidationError(
                    f"{where}: a codec must be an object {{'type': URI, 'configuration': "
                    f"{{...}}}}, got {c!r}"
                )
            if "name" in c and "type" not in c:
                raise MetadataValidationError(
                    f"{where}: {c!r} mixes layouts: codecs named by 'name' are final Zarr v3; "
                    f"the 2022 draft names them by a 'type' URI"
                )
            unknown = set(c) - {"type", "configuration"}
            if unknown:
                raise MetadataValidationError(
                    f"{where}: unexpected codec members {sorted(unknown)} in {c!r}"
                )
            name = _codec_name(c.get("type"), _CODECS_2022, where)
            config = c.get("configuration", {})
            if config is None:
                config = {}
            if not isinstance(config, dict):
                raise MetadataValidationError(
                    f"{where}: 'configuration' must be an object, got {config!r}"
                )
            try:
                if name == "transpose":
                    if seen_bytes:
                        raise MetadataValidationError(
                            "the transpose codec needs an array, but an earlier codec "
                            "produces bytes"
                        )
                    perm = _compose(perm, _draft_permutation(config, ndim))
                elif name in ("endian", "bytes"):
                    if seen_bytes:
                        raise MetadataValidationError(
                            "the endian codec must come before any bytes -> bytes codec and "
                            "only once"
                        )
                    if set(config) - {"endian"} or config.get("endian") not in (
                            "little", "big", None):
                        raise MetadataValidationError(
                            f"endian codec: expected {{'endian': 'little' or 'big'}}, got "
                            f"{config!r}")
                    codec_endian = config.get("endian")
                    seen_bytes = True
                else:
                    tail.append(_bytes_codec(name, config, data_type, where))
                    seen_bytes = True
            except MetadataValidationError as e:  # (_blosc names `where` itself)
                add_context(e, where)
                raise
    else:
        comp = doc.get("compressor")
        if comp is not None:
            where = f"{key}: compressor"
            if not isinstance(comp, dict) or "codec" not in comp:
                if isinstance(comp, dict) and "id" in comp:
                    raise MetadataValidationError(
                        f"{where}: {comp!r} mixes layouts: a numcodecs 'id' is Zarr v2; the "
                        f"zarrita layout names the compressor by a 'codec' URI"
                    )
                raise MetadataValidationError(
                    f"{where}: expected {{'codec': URI, 'configuration': {{...}}}}, got {comp!r}"
                )
            unknown = set(comp) - {"codec", "configuration"}
            if unknown:
                raise MetadataValidationError(
                    f"{where}: unexpected members {sorted(unknown)} in {comp!r}"
                )
            name = _codec_name(comp["codec"], _CODECS_ZARRITA, where)
            config = comp.get("configuration") or {}
            if not isinstance(config, dict):
                raise MetadataValidationError(
                    f"{where}: 'configuration' must be an object, got {config!r}"
                )
            config = {k: v for k, v in config.items() if k != "id"}
            try:
                tail.append(_bytes_codec(name, config, data_type, where))
            except MetadataValidationError as e:  # (_blosc names `where` itself)
                add_context(e, where)
                raise
        attributes = doc.get("attributes")
        filters = attributes.get("filters") if isinstance(attributes, dict) else None
        if filters:
            raise UnknownCodecError(
                f"{key}: attributes['filters'] holds zarr-python 2.x filters {filters!r}; "
                f"filters in the zarrita layout are not supported"
            )

    if codec_endian is not None:
        if type_endian is not None and type_endian != codec_endian and data_type.swap_unit > 1:
            raise MetadataValidationError(
                f"{key}: data_type {doc.get('data_type')!r} is {type_endian} endian but the "
                f"endian codec says {codec_endian!r}"
            )
        endian = codec_endian
    if data_type.swap_unit == 1:
        endian = None
    elif endian is None:
        endian = "little"  # the draft's default binary representation
    codecs: list[dict[str, Any]] = []
    if perm != tuple(range(ndim)):
        codecs.append({"name": "transpose", "configuration": {"order": list(perm)}})
    codecs.append({"name": "bytes", "configuration": {"endian": endian}} if endian is not None
                  else {"name": "bytes"})
    codecs.extend(tail)
    return tuple(codecs)


# ---------------------------------------------------------------------------
# documents
# ---------------------------------------------------------------------------


def _check_members(doc: dict, allowed: set[str], layout: str, key: str, what: str) -> None:
    for member in doc:
        if member in allowed:
            continue
        if member in _FINAL_MEMBERS:
            raise MetadataValidationError(
                f"{key}: a {layout} {what} document mixes layouts: member {member!r} belongs "
                f"to final Zarr v3 (one zarr.json per node), not to {key}"
            )
        other = _OTHER_LAYOUT_MEMBERS.get(layout, {}).get(member)
        if other is not None:
            raise MetadataValidationError(
                f"{key}: a {layout} {what} document mixes layouts: member {member!r} is "
                f"{other} and does not belong in a {layout} hierarchy"
            )
        raise MetadataValidationError(
            f"{key}: unknown {what} metadata member {member!r}; the draft requires "
            f"implementations to refuse unknown members"
        )


def _int_list(value: Any, what: str, key: str, minimum: int) -> tuple[int, ...]:
    if not isinstance(value, list) or not all(
        isinstance(v, int) and not isinstance(v, bool) and v >= minimum for v in value
    ):
        raise MetadataValidationError(
            f"{key}: {what} must be a list of integers >= {minimum}, got {value!r}"
        )
    return tuple(value)


def convert_array_document(doc: Any, *, layout: str, key: str) -> ArrayMetadata:
    """A draft array document (already JSON-decoded) -> final v3 :class:`ArrayMetadata`
    whose chunk key encoding is a :class:`DraftChunkKeyEncoding`."""
    if not isinstance(doc, dict):
        raise MetadataValidationError(f"{key}: array metadata must be a JSON object, got {doc!r}")
    _check_members(doc, _ARRAY_MEMBERS[layout], layout, key, "array")
    required = ["shape", "data_type", "chunk_grid"]
    if layout == DRAFT_2022:
        required += ["chunk_memory_layout", "fill_value"]
    for member in required:
        if member not in doc:
            raise MetadataValidationError(f"{key}: required member {member!r} is missing")

    shape = _int_list(doc["shape"], "'shape'", key, 0)
    grid = doc["chunk_grid"]
    if not isinstance(grid, dict):
        raise MetadataValidationError(f"{key}: 'chunk_grid' must be an object, got {grid!r}")
    if "name" in grid or "configuration" in grid:
        raise MetadataValidationError(
            f"{key}: chunk_grid {grid!r} mixes layouts: {{'name': ..., 'configuration': ...}} "
            f"is final Zarr v3; the drafts write {{'type': 'regular', 'chunk_shape': [...], "
            f"'separator': '/'}}"
        )
    if "extension" in grid or grid.get("type") != "regular":
        raise MetadataValidationError(
            f"{key}: chunk_grid {grid.get('extension', grid.get('type'))!r} is not supported; "
            f"only 'regular' is"
        )
    unknown = set(grid) - {"type", "chunk_shape", "separator"}
    if unknown:
        raise MetadataValidationError(f"{key}: chunk_grid has unknown members {sorted(unknown)}")
    if "chunk_shape" not in grid:
        raise MetadataValidationError(f"{key}: chunk_grid.chunk_shape is required")
    chunk_shape = _int_list(grid["chunk_shape"], "chunk_grid.chunk_shape", key, 1)
    if len(chunk_shape) != len(shape):
        raise MetadataValidationError(
            f"{key}: chunk_grid.chunk_shape {list(chunk_shape)} has rank {len(chunk_shape)} "
            f"but shape {list(shape)} has rank {len(shape)}"
        )
    if any(s > _INT64_MAX for s in shape):
        raise MetadataValidationError(f"{key}: 'shape' {list(shape)} has a length above 2**63-1")
    separator = grid.get("separator", "/")
    if separator not in ("/", "."):
        raise MetadataValidationError(
            f"{key}: chunk_grid.separator must be '/' or '.', got {separator!r}"
        )
    if "dimension_separator" in doc and doc["dimension_separator"] not in ("/", ".", None):
        raise MetadataValidationError(
            f"{key}: dimension_separator must be '/' or '.', got {doc['dimension_separator']!r}"
        )

    data_type, type_endian = _parse_data_type(doc["data_type"], f"{key}: data_type")
    if math.prod(chunk_shape) * data_type.itemsize > _INT64_MAX:
        raise MetadataValidationError(
            f"{key}: chunk_grid.chunk_shape {list(chunk_shape)} holds more than 2**63-1 bytes"
        )
    fill_value = _parse_fill_value(data_type, doc.get("fill_value"), f"{key}: fill_value")
    _check_extensions(doc.get("extensions", []), key)
    st = doc.get("storage_transformers") or []
    if not isinstance(st, list):
        raise MetadataValidationError(
            f"{key}: 'storage_transformers' must be a list, got {st!r}"
        )
    if st:
        t = st[0]
        name = (t.get("extension") or t.get("type")) if isinstance(t, dict) else t
        raise MetadataValidationError(
            f"{key}: storage_transformers[0]: storage transformer {name!r} is not supported"
        )
    attributes = doc.get("attributes", {})
    if attributes is None:
        attributes = {}
    if not isinstance(attributes, dict):
        raise MetadataValidationError(
            f"{key}: 'attributes' must be an object, got {attributes!r}"
        )
    codecs = _build_chain(layout=layout, doc=doc, data_type=data_type,
                          type_endian=type_endian, ndim=len(shape), key=key)
    check_array_size(shape, chunks=chunk_shape, where=f"{key}: shape")
    return ArrayMetadata(
        shape=shape,
        data_type=data_type,
        chunk_grid=RegularChunkGrid(chunk_shape),
        chunk_key_encoding=DraftChunkKeyEncoding(
            separator=separator, scalar_key="c" if layout == DRAFT_2022 else "c0"
        ),
        fill_value=fill_value,
        codecs=codecs,
        attributes=dict(attributes),
    )


def convert_group_document(doc: Any, *, layout: str, key: str) -> GroupMetadata:
    """A draft group document -> final v3 :class:`GroupMetadata`."""
    if not isinstance(doc, dict):
        raise MetadataValidationError(f"{key}: group metadata must be a JSON object, got {doc!r}")
    _check_members(doc, {"attributes"}, layout, key, "group")
    attributes = doc.get("attributes", {})
    if attributes is None:
        attributes = {}
    if not isinstance(attributes, dict):
        raise MetadataValidationError(
            f"{key}: 'attributes' must be an object, got {attributes!r}"
        )
    return GroupMetadata(attributes=dict(attributes))


def final_metadata(metadata: ArrayMetadata) -> ArrayMetadata:
    """The converted metadata with the final ``default`` chunk key encoding (same
    separator): the document to write as ``<path>/zarr.json`` when converting."""
    cke = metadata.chunk_key_encoding
    if not isinstance(cke, DraftChunkKeyEncoding):
        return metadata
    return replace(metadata, chunk_key_encoding=DefaultChunkKeyEncoding(separator=cke.separator))


def final_chunk_key(metadata: ArrayMetadata, coords: tuple[int, ...]) -> str:
    """Where chunk ``coords`` goes (relative to the array) after :func:`final_metadata`;
    its bytes are unchanged."""
    return final_metadata(metadata).chunk_key_encoding.encode(tuple(coords))


# ---------------------------------------------------------------------------
# the hierarchy
# ---------------------------------------------------------------------------


def _is_node_name(name: str) -> bool:
    try:
        validate_node_name(name)
    except InvalidNodeNameError:
        return False
    return True


class DraftHierarchy:
    """Read access to a draft hierarchy in ``store``.

    Paths are hierarchy paths without the leading ``/`` (``""`` is the root).

    * :meth:`node` gives ``(metadata, chunk_prefix)``: final v3 metadata and the
      store prefix of the array's chunks (``data/a/b/``, ``data/root/a/b/``;
      ``None`` for groups);
    * :meth:`children` lists a group's members with ``list_dir`` of its metadata
      prefix, as the draft defines;
    * :attr:`layout` is ``"draft-2022"`` or ``"zarrita"``.
    """

    def __init__(self, store: Any, entry_point: EntryPoint | None = None) -> None:
        if entry_point is None:
            entry_point = detect(store)
            if entry_point is None:
                raise MetadataError(
                    f"{store!r} is not a draft Zarr v3 hierarchy: its {ENTRY_POINT_KEY} is "
                    f"missing or has no draft zarr_format"
                )
        self.store = store
        self.entry_point = entry_point
        self.suffix = entry_point.metadata_key_suffix
        if entry_point.layout == DRAFT_2022:
            self._meta, self._data = "meta", "data"
        else:
            self._meta, self._data = "meta/root", "data/root"

    @property
    def layout(self) -> str:
        return self.entry_point.layout

    def __repr__(self) -> str:
        return f"<DraftHierarchy {self.layout} {self.store!r}>"

    # -- keys ---------------------------------------------------------------------
    def metadata_key(self, path: str, node_type: str) -> str:
        """Key of the ``"array"`` or ``"group"`` document for ``path``."""
        path = normalize_path(path)
        if not path:
            if self.layout == DRAFT_2022:
                return f"meta/{node_type}{self.suffix}"
            return f"meta/root.{node_type}{self.suffix}"
        return f"{self._meta}/{path}.{node_type}{self.suffix}"

    def children_prefix(self, path: str) -> str:
        path = normalize_path(path)
        return f"{self._meta}/{path}/" if path else f"{self._meta}/"

    def chunk_path(self, path: str) -> str:
        """The prefix the array's chunk keys are joined to with ``/`` (``Array`` chunk_path)."""
        path = normalize_path(path)
        return f"{self._data}/{path}" if path else self._data

    # -- nodes --------------------------------------------------------------------
    def node(self, path: str) -> tuple[ArrayMetadata | GroupMetadata, str | None]:
        """``(metadata, chunk_prefix)`` of the node at ``path``; ``chunk_prefix`` is
        ``None`` for groups.  :class:`NodeNotFoundError` when nothing is there."""
        path = normalize_path(path)
        akey = self.metadata_key(path, "array")
        gkey = self.metadata_key(path, "group")
        araw = self.store.get(akey)
        graw = self.store.get(gkey)
        if araw is not None and graw is not None:
            raise ContainsArrayAndGroupError(
                f"path {('/' + path)!r} in {self.store!r} has both {akey!r} and {gkey!r}"
            )
        if araw is not None:
            doc = _load_json(araw, akey)
            md = convert_array_document(doc, layout=self.layout, key=akey)
            return md, self.chunk_path(path) + "/"
        if graw is not None:
            doc = _load_json(graw, gkey)
            return convert_group_document(doc, layout=self.layout, key=gkey), None
        if not path or not self.store.is_empty(self.children_prefix(path)):
            return GroupMetadata(), None  # implicit group (the root always exists)
        raise NodeNotFoundError(
            f"no array or group at path {('/' + path)!r} in draft ({self.layout}) hierarchy "
            f"{self.store!r}: neither {akey!r} nor {gkey!r} exists and nothing is below "
            f"{self.children_prefix(path)!r}"
        )

    def node_type(self, path: str) -> str | None:
        """``"array"``, ``"group"`` or ``None``, reading no document."""
        path = normalize_path(path)
        if self.store.exists(self.metadata_key(path, "array")):
            return "array"
        if self.store.exists(self.metadata_key(path, "group")):
            return "group"
        if not path or not self.store.is_empty(self.children_prefix(path)):
            return "group"
        return None

    def children(self, path: str) -> list[str]:
        """Names of the members of the group at ``path``: ``list_dir`` of its metadata
        prefix; keys ``<name>.array<suffix>`` are arrays, ``<name>.group<suffix>``
        explicit groups, sub-prefixes implicit groups."""
        prefix = self.children_prefix(path)
        array_end, group_end = ".array" + self.suffix, ".group" + self.suffix
        names = set()
        for entry in self.store.list_dir(prefix):
            full = prefix + entry
            for end in (array_end, group_end):
                if entry.endswith(end) and len(entry) > len(end) and self.store.exists(full):
                    name = entry[: -len(end)]
                    break
            else:
                if self.store.exists(full) or self.store.is_empty(full + "/"):
                    continue
                name = entry
            if _is_node_name(name):  # other keys (``__x``, ``..``) are not members
                names.add(name)
        return sorted(names)

    def walk(self, path: str = "") -> list[str]:
        """Paths of every node below ``path`` (depth first, sorted)."""
        out = []
        for name in self.children(path):
            child = f"{path}/{name}" if path else name
            out.append(child)
            if self.node_type(child) == "group":
                out.extend(self.walk(child))
        return out
