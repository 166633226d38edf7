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
    md.codecs  # (BytesCodec(endian=<Endian.little: 'little'>), ZstdCodec(level=0, ...))
    md.to_dict()  # the document as it was

An instance equals the metadata layer's instance of the same document (codecs aside, as
there: they are not compared).  A codec no class takes stays its JSON, for
:class:`~zarrfast.codecs.CodecChain` to refuse with the node's name when the array is used
(or leave out, if ``"must_understand": false``).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from zarrfast.codecs.registry import codec_object
from zarrfast.metadata import v3 as _v3

__all__ = ["ArrayV3Metadata", "ConsolidatedMetadata", "GroupMetadata", "with_codec_objects"]


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
class ArrayV3Metadata(_v3.ArrayV3Metadata):
    """zarr-python's ``ArrayV3Metadata``: :class:`zarrfast.metadata.v3.ArrayV3Metadata`
    whose ``codecs`` are codec objects, however it is made (codec objects or their JSON
    may be given)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "codecs", _codec_objects(self.codecs))

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
        return out


@dataclass(frozen=True, eq=False)
class GroupMetadata(_v3.GroupMetadata):
    """zarr-python's ``GroupMetadata``: its consolidated metadata is a
    :class:`ConsolidatedMetadata` (arrays' codecs as codec objects)."""

    def __post_init__(self) -> None:
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

    @classmethod
    def _of(cls, metadata: _v3.ConsolidatedMetadata) -> ConsolidatedMetadata:
        """``metadata`` as this class (its members too)."""
        if isinstance(metadata, cls):
            return metadata
        return cls(**{f.name: getattr(metadata, f.name) for f in fields(metadata) if f.init})


def with_codec_objects(metadata: Any) -> Any:
    """``metadata`` (of any node, either format) as zarr-python's: v3 metadata as the
    classes above (arrays' codecs, their own and those in consolidated metadata, as codec
    objects); anything else (Zarr v2 metadata) as it is."""
    if isinstance(metadata, _v3.ArrayV3Metadata):
        return ArrayV3Metadata._of(metadata)
    if isinstance(metadata, _v3.GroupMetadata):
        return GroupMetadata._of(metadata)
    if isinstance(metadata, _v3.ConsolidatedMetadata):
        return ConsolidatedMetadata._of(metadata)
    return metadata
