"""Zarr v3 metadata as zarr-python's, whose array metadata holds codec objects.

The metadata layer (:mod:`zarrfast.metadata.v3`) parses and validates documents and keeps
the codecs as it was given them (a document's JSON): it is below the codecs and knows no
codec classes.  zarr-python's ``ArrayV3Metadata`` holds codec objects (``BytesCodec(...)``,
``ZstdCodec(level=0, checksum=False)``) from its constructor, its ``from_dict`` and every
change (``update_shape``, ``update_attributes``).  The subclasses here, in the layer that
knows the codecs, are those classes: ``zarrfast.core.metadata`` and ``zarrfast.core.group``
export them, and nodes' ``metadata`` is one of them (:func:`with_codec_objects`, made once
per node's metadata).  The engine keeps working from the metadata layer's objects, which
make no codec objects::

    md = ArrayV3Metadata.from_dict(json.loads(store.get("a/zarr.json")))
    md.codecs  # (BytesCodec(endian='little'), ZstdCodec(level=0, ...))
    md.to_dict()  # the document as it was

An instance equals the metadata layer's instance of the same document (codecs aside, as
there: they are not compared).  A codec no class takes stays its JSON, for
:class:`~zarrfast.codecs.CodecChain` to refuse with the node's name when the array is used
(or leave out, if ``"must_understand": false``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any

from zarrfast.codecs.registry import codec_object
from zarrfast.errors import MetadataValidationError
from zarrfast.metadata import v2 as _v2
from zarrfast.metadata import v3 as _v3
from zarrfast.metadata.chunk_grid import RectilinearChunkGrid, RegularChunkGrid

__all__ = ["ArrayMetadataV2", "ArrayV3Metadata", "ConsolidatedMetadata", "GroupMetadata",
           "GroupMetadataV2",
           "RectilinearChunkGridMetadata", "RegularChunkGridMetadata", "with_codec_objects"]


def _codec_objects(codecs: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(codec_object(c) if isinstance(c, (dict, str)) else c for c in codecs)


def _compared(md: Any, base: type) -> tuple[Any, ...]:
    return tuple(getattr(md, f.name) for f in fields(base) if f.compare)


def _equal_as(base: type) -> Any:
    """``__eq__`` of a subclass of ``base`` (a dataclass): equal to any ``base`` with the
    same compared fields, as two ``base`` are (a dataclass's own ``__eq__`` wants the same
    class on both sides, so the node's metadata would not equal the document's)."""

    def __eq__(self: Any, other: object) -> Any:
        if not isinstance(other, base):
            return NotImplemented
        return _compared(self, base) == _compared(other, base)

    return __eq__


# Each class is made a dataclass again so that its __init__ calls its own __post_init__
# (the metadata layer's ConsolidatedMetadata has none, so its __init__ calls none) and
# pprint lays it out as zarr-python's (it does so for a dataclass's own repr); eq is the
# one written here.


@dataclass(frozen=True, eq=False)
class RegularChunkGridMetadata(RegularChunkGrid):
    """zarr-python 3.4's ``RegularChunkGridMetadata``: the metadata layer's
    :class:`~zarrfast.metadata.chunk_grid.RegularChunkGrid` under zarr-python's name (what
    ``ArrayV3Metadata.chunk_grid`` of a node is, and prints as); equal to a
    ``RegularChunkGrid`` of the same chunk shape."""

    __eq__ = _equal_as(RegularChunkGrid)
    __hash__ = RegularChunkGrid.__hash__


@dataclass(frozen=True, eq=False)
class RectilinearChunkGridMetadata(RectilinearChunkGrid):
    """zarr-python 3.4's ``RectilinearChunkGridMetadata``: the metadata layer's
    :class:`~zarrfast.metadata.chunk_grid.RectilinearChunkGrid` under zarr-python's name;
    equal to a ``RectilinearChunkGrid`` of the same chunk shapes."""

    __eq__ = _equal_as(RectilinearChunkGrid)
    __hash__ = RectilinearChunkGrid.__hash__


def _grid_metadata(grid: Any) -> Any:
    """A chunk grid as zarr-python 3.4's metadata class of it (the same fields)."""
    cls: type | None = {RegularChunkGrid: RegularChunkGridMetadata,
                        RectilinearChunkGrid: RectilinearChunkGridMetadata}.get(type(grid))
    if cls is None:
        return grid
    out: Any = object.__new__(cls)
    out.__dict__.update(vars(grid))
    return out


@dataclass(frozen=True, eq=False)
class ArrayV3Metadata(_v3.ArrayV3Metadata):
    """zarr-python's ``ArrayV3Metadata``: :class:`zarrfast.metadata.v3.ArrayV3Metadata`
    whose ``codecs`` are codec objects, however it is made (codec objects or their JSON
    may be given)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "codecs", _codec_objects(self.codecs))
        object.__setattr__(self, "chunk_grid", _grid_metadata(self.chunk_grid))

    __eq__ = _equal_as(_v3.ArrayV3Metadata)
    __hash__ = _v3.ArrayV3Metadata.__hash__

    @classmethod
    def _of(cls, metadata: _v3.ArrayV3Metadata) -> ArrayV3Metadata:
        """``metadata`` as this class: the same fields (not validated again), the codecs as
        codec objects."""
        if isinstance(metadata, cls):
            return metadata
        out = object.__new__(cls)
        out.__dict__.update(vars(metadata))
        object.__setattr__(out, "codecs", _codec_objects(metadata.codecs))
        object.__setattr__(out, "chunk_grid", _grid_metadata(metadata.chunk_grid))
        return out


#: what zarr-python 3.4 calls the keys of a group document that are no extra field
_GROUP_RESERVED = frozenset({"attributes", "zarr_format", "node_type", "consolidated_metadata"})


@dataclass(frozen=True, eq=False)
class GroupMetadata(_v3.GroupMetadata):
    """zarr-python's ``GroupMetadata``: its consolidated metadata is a
    :class:`ConsolidatedMetadata` (arrays' codecs as codec objects), and ``extra_fields``
    (zarr-python 3.4) are the members of the document an implementation may ignore
    (objects with ``"must_understand": false``), kept and written back."""

    extra_fields: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        given = dict(self.extra_fields or {})
        if given:  # (given to the constructor: checked as zarr-python 3.4 checks them)
            clash = sorted(_GROUP_RESERVED & set(given))
            if clash:
                raise MetadataValidationError(
                    f"Invalid extra fields. The following keys: {clash} are invalid because "
                    f"they collide with keys reserved for use by the group metadata document.")
            extra = dict(self.extra)
            extra.update(_v3._extra_members(given, set(), "group metadata: extra_fields"))
            object.__setattr__(self, "extra", extra)
        object.__setattr__(self, "extra_fields", {
            k: v for k, v in self.extra.items() if k != "consolidated_metadata"})
        super().__post_init__()
        cm = self.consolidated_metadata
        if cm is not None:
            object.__setattr__(self, "consolidated_metadata", ConsolidatedMetadata._of(cm))

    __eq__ = _equal_as(_v3.GroupMetadata)
    __hash__ = _v3.GroupMetadata.__hash__

    @classmethod
    def _consolidated_class(cls) -> type[ConsolidatedMetadata]:
        return ConsolidatedMetadata

    @classmethod
    def _of(cls, metadata: _v3.GroupMetadata) -> GroupMetadata:
        """``metadata`` as this class (its consolidated metadata too)."""
        if isinstance(metadata, cls):
            return metadata
        return cls(**{f.name: getattr(metadata, f.name) for f in fields(metadata) if f.init})


@dataclass(frozen=True, eq=False)
class ConsolidatedMetadata(_v3.ConsolidatedMetadata):
    """zarr-python's ``ConsolidatedMetadata``: its members are :class:`ArrayV3Metadata`
    and :class:`GroupMetadata` (given the metadata layer's, it holds them as these)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "metadata", {k: with_codec_objects(v)
                                              for k, v in self.metadata.items()})

    __eq__ = _equal_as(_v3.ConsolidatedMetadata)
    __hash__ = _v3.ConsolidatedMetadata.__hash__

    @classmethod
    def _node_class(cls, node_type: Any) -> type[ArrayV3Metadata] | type[GroupMetadata]:
        return ArrayV3Metadata if node_type == "array" else GroupMetadata

    @property
    def flattened_metadata(self) -> dict[str, Any]:
        """Every node below the group by its relative path (groups without their own
        consolidated metadata; one that had its subtree keeps an empty one, as
        zarr-python's): v2 member groups (:class:`GroupMetadataV2`) as v3 ones."""
        out: dict[str, Any] = {}
        for name, md in self.metadata.items():
            cm = getattr(md, "consolidated_metadata", None)
            if getattr(md, "node_type", None) != "group":
                out[name] = md
                continue
            out[name] = replace(md, consolidated_metadata=None if cm is None else type(self)())
            if cm is not None:
                out.update({f"{name}/{k}": v for k, v in cm.flattened_metadata.items()})
        return out

    def members(self) -> dict[str, Any]:
        """Every node below the group by its relative path, each group with the nodes
        below it: v2 member groups (:class:`GroupMetadataV2`) as v3 ones."""
        out: dict[str, Any] = {}
        for name, md in self.metadata.items():
            out[name] = md
            cm = getattr(md, "consolidated_metadata", None)
            if getattr(md, "node_type", None) == "group" and cm is not None:
                out.update({f"{name}/{k}": v for k, v in cm.members().items()})
        return out

    @classmethod
    def _of(cls, metadata: _v3.ConsolidatedMetadata) -> ConsolidatedMetadata:
        """``metadata`` as this class (its members too)."""
        if isinstance(metadata, cls):
            return metadata
        return cls(**{f.name: getattr(metadata, f.name) for f in fields(metadata) if f.init})


@dataclass(frozen=True, eq=False)
class ArrayMetadataV2(_v2.ArrayMetadataV2):
    """zarr-python's ``ArrayV2Metadata``: its ``to_dict()`` holds the array's
    ``attributes`` too, as zarr-python's does (pydantic-zarr's ``ArraySpec.from_zarr``,
    which ome-zarr uses, validates that dict and needs them).  The documents written
    (``.zarray``, ``.zattrs``) are the metadata layer's; equal to the metadata layer's
    instance of the same documents."""

    __eq__ = _equal_as(_v2.ArrayMetadataV2)
    __hash__ = _v2.ArrayMetadataV2.__hash__

    def to_dict(self) -> dict[str, Any]:
        """The ``.zarray`` document with the ``attributes`` (``.zattrs``), as zarr-python's
        ``ArrayV2Metadata.to_dict()``."""
        return {**_v2.ArrayMetadataV2.to_dict(self), "attributes": dict(self.attributes)}

    def store_documents(self) -> dict[str, bytes]:
        """The documents stored: ``.zarray`` (without the attributes) and ``.zattrs``."""
        return self._layer().store_documents()

    def to_json(self) -> bytes:
        """One document (for pickling), as the metadata layer's."""
        return self._layer().to_json()

    def _layer(self) -> _v2.ArrayMetadataV2:
        return _v2.ArrayMetadataV2(**{f.name: getattr(self, f.name)
                                      for f in fields(_v2.ArrayMetadataV2) if f.init})

    @classmethod
    def _of(cls, metadata: _v2.ArrayMetadataV2) -> ArrayMetadataV2:
        """``metadata`` as this class."""
        if isinstance(metadata, cls):
            return metadata
        return cls(**{f.name: getattr(metadata, f.name)
                      for f in fields(_v2.ArrayMetadataV2) if f.init})


@dataclass(frozen=True, eq=False)
class GroupMetadataV2(_v2.GroupMetadataV2):
    """zarr-python's ``GroupMetadata`` of a Zarr v2 group: with ``consolidated_metadata``,
    as zarr-python's has for both formats (libraries test it: anndata refuses to write
    into a group whose ``metadata.consolidated_metadata is not None``).

    It is ``None`` unless the group was opened with consolidated metadata (``.zmetadata``);
    then a :class:`ConsolidatedMetadata` of the nodes below the group (member groups
    holding their own, as zarr-python nests them).  Not part of the documents written
    (``.zgroup``, ``.zattrs``) nor compared: equal to the metadata layer's instance of the
    same documents.
    """

    consolidated_metadata: ConsolidatedMetadata | None = field(default=None, compare=False)

    __eq__ = _equal_as(_v2.GroupMetadataV2)
    __hash__ = _v2.GroupMetadataV2.__hash__

    @classmethod
    def _of(cls, metadata: _v2.GroupMetadataV2, consolidated: Any = None) -> GroupMetadataV2:
        """``metadata`` as this class, with the consolidated metadata of ``consolidated``
        (the group's view of its consolidated members: ``child_names()``, ``get(name)``
        and ``sub(name)``, or ``None``)."""
        if isinstance(metadata, cls) and consolidated is None:
            return metadata
        cm = None if consolidated is None else _view_consolidated(consolidated)
        own = {f.name: getattr(metadata, f.name) for f in fields(_v2.GroupMetadataV2)
               if f.init}
        return cls(**own, consolidated_metadata=cm)


def _view_consolidated(view: Any) -> ConsolidatedMetadata:
    """The nested :class:`ConsolidatedMetadata` of a group's consolidated ``view`` (its
    ``child_names()``, ``get(name)`` and ``sub(name)``): each member group holding the
    nodes below it, as zarr-python nests them."""
    members: dict[str, Any] = {}
    for name in view.child_names():
        md = view.get(name)
        if isinstance(md, _v2.GroupMetadataV2):
            md = GroupMetadataV2._of(md, view.sub(name))
        elif isinstance(md, _v3.GroupMetadata) and md.consolidated_metadata is None:
            md = replace(md, consolidated_metadata=_view_consolidated(view.sub(name)))
        members[name] = md
    return ConsolidatedMetadata(metadata=members)


def with_codec_objects(metadata: Any, consolidated: Any = None) -> Any:
    """``metadata`` (of any node, either format) as zarr-python's: v3 metadata as the
    classes above (arrays' codecs, their own and those in consolidated metadata, as codec
    objects), v2 group metadata as :class:`GroupMetadataV2` and v2 array metadata as
    :class:`ArrayMetadataV2`.  ``consolidated``, the group's view of its consolidated
    members, gives a group the consolidated metadata zarr-python's has: a v2 group's, and
    a v3 group's whose own document holds none (a member of a consolidated group)."""
    if isinstance(metadata, _v2.GroupMetadataV2):
        return GroupMetadataV2._of(metadata, consolidated)
    if isinstance(metadata, _v2.ArrayMetadataV2):
        return ArrayMetadataV2._of(metadata)
    if isinstance(metadata, _v3.ArrayV3Metadata):
        return ArrayV3Metadata._of(metadata)
    if isinstance(metadata, _v3.GroupMetadata):
        if consolidated is not None and metadata.consolidated_metadata is None:
            # a member of a consolidated group (its own document holds none): the nodes
            # below it, from the view, as zarr-python gives them
            metadata = replace(metadata,
                               consolidated_metadata=_view_consolidated(consolidated))
        return GroupMetadata._of(metadata)
    if isinstance(metadata, _v3.ConsolidatedMetadata):
        return ConsolidatedMetadata._of(metadata)
    return metadata
