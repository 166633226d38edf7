"""Zarr v3.0 array and group metadata (``zarr.json``).

Spec: zarr-specs ``docs/v3/core/index.rst``, "Metadata".  Documents parse
into frozen dataclasses that are validated once; :meth:`to_dict` gives the
document back in the same form (what zarr-python and tensorstore write reads
back to an identical dict).  Unknown members are errors unless they are
objects with ``"must_understand": false``, which are kept and written back.

Errors are :class:`~zarrfast.errors.MetadataValidationError` (or a subclass)
and name the node path and the member.
"""

from __future__ import annotations

import json
import marshal
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from zarrfast import config
from zarrfast.errors import (
    FillValueError,
    InvalidNodeNameError,
    MetadataValidationError,
)
from zarrfast.metadata.chunk_grid import (
    ChunkGrid,
    ChunkKeyEncoding,
    parse_chunk_grid,
    parse_chunk_key_encoding,
)
from zarrfast.metadata.dtype import DataType, parse_data_type
from zarrfast.metadata.gcpause import collector_paused
from zarrfast.metadata.limits import INT64_MAX, check_array_size
from zarrfast.metadata.limits import load_json as _load_json  # (hierarchy, draft read it here)
from zarrfast.metadata.paths import validate_node_name
from zarrfast.metadata.zdtype import zdtype_of

__all__ = ["ArrayMetadata", "ArrayV3Metadata", "ConsolidatedMetadata", "GroupMetadata",
           "parse_metadata"]

_ARRAY_KEYS = {
    "zarr_format",
    "node_type",
    "shape",
    "data_type",
    "chunk_grid",
    "chunk_key_encoding",
    "fill_value",
    "codecs",
    "attributes",
    "dimension_names",
    "storage_transformers",
}
_GROUP_KEYS = {"zarr_format", "node_type", "attributes"}
#: documents larger than this (bytes) are parsed with the garbage collector paused
LARGE_DOCUMENT = 1 << 20


def _where(path: str) -> str:
    return f"array {path or '/'!r}" if path is not None else "array"


def _extra_members(doc: dict, known: set[str], node: str) -> dict[str, Any]:
    extra = {}
    for key in doc:
        if key in known:
            continue
        value = doc[key]
        if key == "consolidated_metadata" and (value is None or isinstance(value, dict)):
            extra[key] = value
            continue
        if isinstance(value, dict) and value.get("must_understand") is False:
            extra[key] = value
            continue
        raise MetadataValidationError(
            f"{node}: unknown metadata member {key!r}; members that implementations may "
            f"ignore must be objects with \"must_understand\": false"
        )
    return extra


def _check_header(doc: Any, node: str, node_type: str) -> None:
    """The members every v3 document has: an object with zarr_format 3 and node_type."""
    if not isinstance(doc, dict):
        raise MetadataValidationError(f"{node}: metadata must be a JSON object, got {doc!r}")
    if doc.get("zarr_format") != 3:
        raise MetadataValidationError(
            f"{node}: zarr_format must be 3, got {doc.get('zarr_format')!r}"
        )
    if doc.get("node_type") != node_type:
        raise MetadataValidationError(
            f"{node}: node_type must be {node_type!r}, got {doc.get('node_type')!r}"
        )


def _parse_attributes(value: Any, node: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise MetadataValidationError(f"{node}: 'attributes' must be an object, got {value!r}")
    return value


def _parse_codec_list(value: Any, node: str) -> tuple[Any, ...]:
    """The ``codecs`` member as JSON: a list of codec objects (``{"name": ...,
    "configuration": {...}}``) or name strings.  Which codecs they are, and whether the
    chain fits the data, is :class:`zarrfast.codecs.CodecChain`'s business."""
    if not isinstance(value, list):
        raise MetadataValidationError(f"{node}: 'codecs' must be a list, got {value!r}")
    for i, c in enumerate(value):
        name = c.get("name") if isinstance(c, dict) else c
        if not isinstance(name, str):
            raise MetadataValidationError(
                f"{node}: codecs[{i}]: a codec must be an object with a string 'name' (and "
                f"'configuration') or a name string, got {c!r}"
            )
    return tuple(value)


def _codec_json(codec: Any) -> Any:
    """A codec's metadata object (codec objects, as callers may pass them, give theirs)."""
    return codec if isinstance(codec, (dict, str)) else codec.to_dict()


def _as_data_type(value: Any) -> DataType:
    """zarrfast's :class:`DataType` of a ``data_type`` (itself, or a ``ZDType``)."""
    return value if isinstance(value, DataType) else parse_data_type(value, where="data_type")


def _as_zdtype(value: Any) -> Any:
    """The ``ZDType`` (``Float32(endianness='little')``) of a ``data_type``, as
    zarr-python's metadata holds it; a :class:`DataType` that zarr-python has no class for
    stays itself."""
    return zdtype_of(value) if isinstance(value, DataType) else value


@dataclass(frozen=True)
class ArrayV3Metadata:
    """Validated Zarr v3 array metadata.

    The fields, and what they print, are zarr-python's ``ArrayV3Metadata``'s: ``data_type``
    is the ``ZDType`` (``Float32(endianness='little')``).  This layer knows no codec
    classes, so ``codecs`` holds them as given (a document's JSON); zarr-python's class,
    whose ``codecs`` are codec objects, is the codecs layer's subclass
    :class:`zarrfast.codecs.metadata.ArrayV3Metadata` (``zarrfast.core.metadata``'s, and
    what nodes' ``metadata`` gives).  zarrfast works from :attr:`type_info` (its
    :class:`DataType`, which keeps the name the document gave) and writes
    :attr:`codecs_json`."""

    shape: tuple[int, ...]
    #: the ``ZDType`` (a :class:`DataType` or a ``ZDType`` may be given)
    data_type: Any
    #: :class:`RegularChunkGrid` or :class:`RectilinearChunkGrid`
    chunk_grid: ChunkGrid
    chunk_key_encoding: ChunkKeyEncoding
    fill_value: Any  # a NumPy scalar of data_type
    #: the codec chain, in encode order, as given: JSON or codec objects
    #: (:class:`zarrfast.codecs.CodecChain` reads either, and refuses an unknown codec with
    #: the node's name, or leaves it out if ``"must_understand": false``)
    codecs: tuple[Any, ...] = field(compare=False)
    attributes: dict[str, Any] = field(default_factory=dict)
    dimension_names: tuple[str | None, ...] | None = None
    zarr_format: int = 3
    node_type: str = "array"
    #: ``None`` when the document has no ``storage_transformers`` member
    storage_transformers: tuple[Any, ...] | None = None
    #: the members an implementation may ignore (``"must_understand": false``), kept
    extra_fields: dict[str, Any] = field(default_factory=dict)
    #: the fill value exactly as the document wrote it (kept for identical round trips)
    fill_value_json: Any = field(default=None, repr=False)
    #: whether the document had an ``attributes`` member (tensorstore omits an empty one)
    write_attributes: bool = field(default=True, compare=False, repr=False)
    #: zarrfast's :class:`DataType` of :attr:`data_type` (derived unless given)
    type_info: DataType | None = field(default=None, repr=False, compare=False)
    #: the codecs as JSON objects (derived)
    codecs_json: tuple[Any, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        info = self.type_info
        if isinstance(self.data_type, DataType):
            info = self.data_type
        elif info is None or _as_zdtype(info) != self.data_type:
            info = _as_data_type(self.data_type)
        object.__setattr__(self, "type_info", info)
        object.__setattr__(self, "data_type", _as_zdtype(info)
                           if isinstance(self.data_type, DataType) else self.data_type)
        grid = self.chunk_grid
        check_array_size(self.shape, chunks=grid.chunk_shape if grid.is_regular else None)
        object.__setattr__(self, "codecs_json", tuple(_codec_json(c) for c in self.codecs))
        object.__setattr__(self, "codecs", tuple(self.codecs))
        if self.fill_value_json is None:
            object.__setattr__(
                self, "fill_value_json", info.fill_value_to_json(self.fill_value)
            )

    # -- derived -------------------------------------------------------------
    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def chunks(self) -> tuple[int, ...]:
        """The chunk shape of a regular grid.  A rectilinear grid has none: as
        zarr-python, :class:`NotImplementedError` (see ``chunk_grid``)."""
        grid = self.chunk_grid
        if not grid.is_regular:
            raise NotImplementedError(
                "the chunk shape ('chunks') is only defined for arrays with a regular chunk "
                "grid; this array's grid is rectilinear (see its chunk_grid, or "
                "read_chunk_sizes)")
        return grid.chunk_shape

    @property
    def regular(self) -> bool:
        """Whether the chunk grid is regular (one chunk shape)."""
        return self.chunk_grid.is_regular

    @property
    def dtype(self) -> np.dtype:
        return self.type_info.dtype

    # -- (de)serialization -------------------------------------------------------
    @classmethod
    def from_dict(cls, doc: Any, *, path: str = "") -> ArrayV3Metadata:
        node = _where(path)
        _check_header(doc, node, "array")
        for key in ("shape", "data_type", "chunk_grid", "chunk_key_encoding", "fill_value",
                    "codecs"):
            if key not in doc:
                raise MetadataValidationError(f"{node}: required member {key!r} is missing")
        extra = _extra_members(doc, _ARRAY_KEYS, node)

        raw_shape = doc["shape"]
        if not isinstance(raw_shape, list) or not all(
            isinstance(s, int) and not isinstance(s, bool) for s in raw_shape
        ):
            raise MetadataValidationError(
                f"{node}: 'shape' must be a list of integers, got {raw_shape!r}"
            )
        shape = tuple(raw_shape)
        if any(s < 0 for s in shape):
            raise MetadataValidationError(f"{node}: 'shape' has a negative length: {raw_shape!r}")
        # Every dimension fits in int64 (NumPy's and the index kernels' type), and so does
        # the number of chunks (below); the element count need not: arrays that large open
        # lazily, only the chunks a selection touches exist.
        check_array_size(shape, where=f"{node}: 'shape'")

        data_type = parse_data_type(doc["data_type"], where=f"{node}: data_type")
        chunk_grid = parse_chunk_grid(doc["chunk_grid"], where=f"{node}: chunk_grid")
        if chunk_grid.is_regular:
            largest = chunk_grid.chunk_shape
            if len(largest) != len(shape):
                raise MetadataValidationError(
                    f"{node}: chunk_grid.chunk_shape {list(largest)} has rank "
                    f"{len(largest)} but shape {list(shape)} has rank {len(shape)}"
                )
            check_array_size(shape, chunks=largest, where=f"{node}: 'shape'")
        else:
            chunk_grid.check_shape(shape, f"{node}: chunk_grid")
            largest = chunk_grid.max_chunk_shape()
        if math.prod(largest) * data_type.itemsize > INT64_MAX:
            raise MetadataValidationError(f"{node}: chunk_shape is too large")
        cke = parse_chunk_key_encoding(
            doc["chunk_key_encoding"], where=f"{node}: chunk_key_encoding"
        )
        try:
            fill_value = data_type.parse_fill_value(doc["fill_value"], where=f"{node}: fill_value")
        except FillValueError:
            raise
        codecs_t = _parse_codec_list(doc["codecs"], node)

        attributes = _parse_attributes(doc.get("attributes"), node)
        dim_names = doc.get("dimension_names")
        if dim_names is not None:
            if not isinstance(dim_names, list) or not all(
                d is None or isinstance(d, str) for d in dim_names
            ):
                raise MetadataValidationError(
                    f"{node}: 'dimension_names' must be a list of strings or nulls, "
                    f"got {dim_names!r}"
                )
            if len(dim_names) != len(shape):
                raise MetadataValidationError(
                    f"{node}: 'dimension_names' has {len(dim_names)} entries but the array has "
                    f"{len(shape)} dimensions"
                )
            dim_names = tuple(dim_names)
        st = doc.get("storage_transformers", [])
        if st is None:
            st = []
        if not isinstance(st, list):
            raise MetadataValidationError(
                f"{node}: 'storage_transformers' must be a list, got {st!r}"
            )
        for i, t in enumerate(st):
            if isinstance(t, dict) and t.get("must_understand") is False:
                continue
            name = t.get("name") if isinstance(t, dict) else t
            raise MetadataValidationError(
                f"{node}: storage_transformers[{i}]: unsupported storage transformer {name!r}"
            )
        return cls(
            shape=shape,
            data_type=data_type,
            chunk_grid=chunk_grid,
            chunk_key_encoding=cke,
            fill_value=fill_value,
            codecs=codecs_t,
            attributes=attributes,
            dimension_names=dim_names,
            storage_transformers=tuple(st) if "storage_transformers" in doc else None,
            extra_fields=extra,
            fill_value_json=doc["fill_value"],
            write_attributes="attributes" in doc,
        )

    @classmethod
    def from_dict_shared(cls, doc: Any, *, path: str = "",
                         parsed: dict[Any, Any] | None = None) -> ArrayV3Metadata:
        """:meth:`from_dict`, for many documents of which most differ only in their
        attributes (the arrays of a hierarchy): ``parsed`` (kept by the caller for one
        batch of documents) holds the metadata parsed of each document but its attributes,
        and a document equal to one of them but for its attributes gets a copy of that
        metadata with its own attributes, without parsing the rest again (the same
        metadata ``from_dict`` would give; every other document is parsed and checked).
        ``doc``: as JSON parsing gives it (dicts, lists, strings, numbers, booleans and
        ``None``).  Documents are told apart by their ``marshal`` bytes (version 2: no
        references to earlier objects), which tell ``0``, ``0.0``, ``-0.0`` and ``false``
        apart and keep the members' order: two documents with the same bytes are the same
        document (equal ones with other bytes, such as an interned string against another,
        are parsed each)."""
        if parsed is None or type(doc) is not dict:
            return cls.from_dict(doc, path=path)
        attributes = doc.get("attributes")
        if attributes is not None and type(attributes) is not dict:
            return cls.from_dict(doc, path=path)  # (the error names the member)
        rest = dict(doc)
        rest.pop("attributes", None)
        try:
            key = (marshal.dumps(rest, 2), "attributes" in doc)
        except (ValueError, RecursionError):  # (not JSON's types; nested too deeply)
            return cls.from_dict(doc, path=path)
        known = parsed.get(key)
        if known is None or type(known) is not cls:
            md = parsed[key] = cls.from_dict(doc, path=path)
            return md
        md = object.__new__(cls)
        vars(md).update(vars(known))
        vars(md)["attributes"] = {} if attributes is None else attributes
        return md

    def to_dict(self) -> dict[str, Any]:
        # members in zarr-python's order, so that both write the same document
        doc: dict[str, Any] = {
            "shape": list(self.shape),
            "data_type": self.type_info.to_json(),
            "chunk_grid": self.chunk_grid.to_dict(),
            "chunk_key_encoding": self.chunk_key_encoding.to_dict(),
            "fill_value": self.fill_value_json,
            "codecs": list(self.codecs_json),
        }
        if self.attributes or self.write_attributes:
            doc["attributes"] = self.attributes
        if self.dimension_names is not None:
            doc["dimension_names"] = list(self.dimension_names)
        doc["zarr_format"] = 3
        doc["node_type"] = "array"
        if self.storage_transformers is not None:
            doc["storage_transformers"] = list(self.storage_transformers)
        doc.update(self.extra_fields)
        return doc

    def to_json(self) -> bytes:
        return json.dumps(self.to_dict(), indent=config.get("json_indent"), allow_nan=True).encode()

    def store_documents(self) -> dict[str, bytes]:
        return {"zarr.json": self.to_json()}

    @property
    def effective_fill_value(self) -> Any:
        return self.fill_value

    def update_attributes(self, attributes: dict[str, Any]) -> ArrayV3Metadata:
        return replace(self, attributes=attributes, write_attributes=True)

    def update_shape(self, shape: tuple[int, ...]) -> ArrayV3Metadata:
        shape = tuple(shape)
        return replace(self, shape=shape,
                       chunk_grid=self.chunk_grid.resized(self.shape, shape))


#: ArrayMetadata is the v3 array metadata's name in zarrfast
ArrayMetadata = ArrayV3Metadata


@dataclass(frozen=True)
class GroupMetadata:
    """Validated Zarr v3 group metadata; its fields, and what they print, are zarr-python's
    ``GroupMetadata``'s (``consolidated_metadata`` as :class:`ConsolidatedMetadata`)."""

    attributes: dict[str, Any] = field(default_factory=dict)
    zarr_format: int = 3
    #: the metadata of the nodes below (written by ``consolidate_metadata``), or ``None``;
    #: its JSON may be given
    consolidated_metadata: ConsolidatedMetadata | None = None
    node_type: str = "group"
    #: the members an implementation may ignore (``"must_understand": false``), kept
    extra: dict[str, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        cm = self.consolidated_metadata
        if cm is None and isinstance(self.extra.get("consolidated_metadata"), dict):
            cm = self.extra["consolidated_metadata"]
            object.__setattr__(self, "extra", {k: v for k, v in self.extra.items()
                                               if k != "consolidated_metadata"})
        if isinstance(cm, Mapping):
            cm = self._consolidated_class().from_dict(cm)
        object.__setattr__(self, "consolidated_metadata", cm)

    @classmethod
    def _consolidated_class(cls) -> type[ConsolidatedMetadata]:
        """The class of :attr:`consolidated_metadata` read from JSON (a subclass names its
        own)."""
        return ConsolidatedMetadata

    @classmethod
    def from_dict(cls, doc: Any, *, path: str = "") -> GroupMetadata:
        node = f"group {path or '/'!r}"
        _check_header(doc, node, "group")
        extra = _extra_members(doc, _GROUP_KEYS, node)
        cm = extra.pop("consolidated_metadata", None)
        if cm is not None:  # (a null one is kept as it was written)
            cm = cls._consolidated_class().from_dict(
                cm, key=f"{node}: consolidated_metadata", path=path)
        elif "consolidated_metadata" in doc:
            extra["consolidated_metadata"] = None
        return cls(attributes=_parse_attributes(doc.get("attributes"), node),
                   consolidated_metadata=cm, extra=extra)

    def to_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"attributes": self.attributes, "zarr_format": 3}
        if self.consolidated_metadata is not None:  # before node_type, as zarr-python's
            doc["consolidated_metadata"] = self.consolidated_metadata.to_dict()
        doc.update(self.extra)
        doc["node_type"] = "group"
        return doc

    def to_json(self) -> bytes:
        return json.dumps(self.to_dict(), indent=config.get("json_indent"), allow_nan=True).encode()

    def store_documents(self) -> dict[str, bytes]:
        return {"zarr.json": self.to_json()}


def check_member_path(rel: Any, key: str, what: str = "member") -> str:
    """A member of consolidated metadata (v3's member, v2's ``.zmetadata`` key) is named by
    node names joined by ``/``: no empty, ``.`` or ``..`` segment can make it name a node
    outside the group."""
    if not isinstance(rel, str) or not rel:
        raise MetadataValidationError(
            f"{key}: consolidated metadata {what} {rel!r} is not a node path")
    try:
        for name in rel.split("/"):
            validate_node_name(name, path=rel, reserved_ok=True)  # read what others wrote
    except InvalidNodeNameError as e:
        raise MetadataValidationError(
            f"{key}: consolidated metadata {what} {rel!r} is not a valid node path: {e}"
        ) from None
    return rel


@dataclass(frozen=True)
class ConsolidatedMetadata:
    """The metadata of the nodes below a group, kept in the group's ``zarr.json``::

        "consolidated_metadata": {"kind": "inline", "must_understand": false,
                                  "metadata": {"a": {...}, "a/x": {...}}}

    As zarr-python's: ``metadata`` holds the direct members by name; a member group's
    own ``consolidated_metadata`` holds the nodes below it; ``flattened_metadata`` has
    every node by its path relative to the group."""

    metadata: dict[str, Any] = field(default_factory=dict)
    kind: str = "inline"
    must_understand: bool = False

    @classmethod
    def from_dict(cls, doc: Any, *, key: str = "consolidated_metadata",
                  path: str = "") -> ConsolidatedMetadata:
        """From its JSON, whose ``metadata`` has every node by its path relative to the
        group at ``path`` (errors name ``key`` and the entry)."""
        if (not isinstance(doc, Mapping) or doc.get("kind") != "inline"
                or not isinstance(doc.get("metadata"), Mapping)
                or doc.get("must_understand", False) is not False):
            raise MetadataValidationError(
                f"{key}: consolidated_metadata must be {{'kind': 'inline', "
                f"'must_understand': false, 'metadata': {{...}}}}, got {doc!r}")
        flat: dict[str, Any] = {}
        parsed: dict[Any, Any] = {}  # (arrays alike but for their attributes: parsed once)
        base = path.strip("/")
        for rel, entry in doc["metadata"].items():
            check_member_path(rel, key)
            if type(entry) is not dict and not isinstance(entry, Mapping):
                raise MetadataValidationError(
                    f"{key}: consolidated entry {rel!r} is not an object")
            child = f"{base}/{rel}" if base else rel
            node_class = cls._node_class(entry.get("node_type"))
            if issubclass(node_class, ArrayV3Metadata):
                flat[rel] = node_class.from_dict_shared(entry, path=child, parsed=parsed)
            else:
                flat[rel] = node_class.from_dict(entry, path=child)
        for rel in flat:
            parent = rel.rpartition("/")[0]
            if parent and not isinstance(flat.get(parent), GroupMetadata):
                raise MetadataValidationError(
                    f"{key}: consolidated metadata member {rel!r} is below {parent!r}, "
                    f"which {'is an array' if parent in flat else 'has no entry'}; the "
                    f"entries must be the whole hierarchy below the group")
        return cls.from_flat(flat)

    @classmethod
    def _node_class(cls, node_type: Any) -> type[ArrayV3Metadata] | type[GroupMetadata]:
        """The class of a member of ``node_type`` read from JSON (a subclass names its
        own)."""
        return ArrayV3Metadata if node_type == "array" else GroupMetadata

    @classmethod
    def from_flat(cls, flat: Mapping[str, Any]) -> ConsolidatedMetadata:
        """From the metadata of every node below the group, by relative path."""
        top: dict[str, Any] = {}
        below: dict[str, dict[str, Any]] = {}
        for rel, md in flat.items():
            head, _, rest = rel.partition("/")
            if rest:
                below.setdefault(head, {})[rest] = md
            else:
                top[head] = md
        for name, rest in below.items():
            if not isinstance(top.get(name), GroupMetadata):
                raise MetadataValidationError(
                    f"consolidated metadata: member {name + '/' + next(iter(rest))!r} is "
                    f"below {name!r}, which {'is an array' if name in top else 'has no entry'}")
        for name, md in top.items():
            if isinstance(md, GroupMetadata):  # (its subtree, perhaps empty: as zarr-python)
                top[name] = replace(md, consolidated_metadata=cls.from_flat(below.get(name, {})))
        return cls(metadata=top)

    @property
    def flattened_metadata(self) -> dict[str, Any]:
        """Every node below the group by its relative path (groups without their own
        consolidated metadata)."""
        out: dict[str, Any] = {}
        for name, md in self.metadata.items():
            if isinstance(md, GroupMetadata):
                # as zarr-python: a group that had its subtree keeps an empty one
                cm = md.consolidated_metadata
                out[name] = replace(md, consolidated_metadata=None if cm is None else
                                    type(self)())
                if cm is not None:
                    out.update({f"{name}/{k}": v for k, v in cm.flattened_metadata.items()})
            else:
                out[name] = md
        return out

    def members(self) -> dict[str, Any]:
        """Every node below the group by its relative path, each group with the nodes
        below it (as the group opened from this metadata has them)."""
        out: dict[str, Any] = {}
        for name, md in self.metadata.items():
            out[name] = md
            if isinstance(md, GroupMetadata) and md.consolidated_metadata is not None:
                out.update({f"{name}/{k}": v
                            for k, v in md.consolidated_metadata.members().items()})
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "must_understand": self.must_understand,
                "metadata": {k: v.to_dict() for k, v in self.flattened_metadata.items()}}


def parse_metadata(
    raw: bytes | bytearray | memoryview, *, path: str, key: str,
    parsed: dict[Any, Any] | None = None,
) -> ArrayV3Metadata | GroupMetadata:
    """Parse a ``zarr.json`` document, dispatching on ``node_type``.  ``parsed``: the
    arrays parsed so far of a batch of documents (see
    :meth:`ArrayV3Metadata.from_dict_shared`)."""
    if len(raw) > LARGE_DOCUMENT:  # (a consolidated hierarchy's: a million objects)
        with collector_paused():
            return _parse_document(raw, path, key, parsed)
    return _parse_document(raw, path, key, parsed)


def _parse_document(raw: bytes | bytearray | memoryview, path: str, key: str,
                    parsed: dict[Any, Any] | None) -> ArrayV3Metadata | GroupMetadata:
    doc = _load_json(raw, key)
    if not isinstance(doc, dict):
        raise MetadataValidationError(f"{key}: metadata must be a JSON object, got {doc!r}")
    node_type = doc.get("node_type")
    if node_type == "array":
        return ArrayV3Metadata.from_dict_shared(doc, path=path, parsed=parsed)
    if node_type == "group":
        return GroupMetadata.from_dict(doc, path=path)
    raise MetadataValidationError(
        f"{key}: node_type must be 'array' or 'group', got {node_type!r}"
    )


