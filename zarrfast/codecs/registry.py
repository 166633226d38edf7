"""Codec registry.

Codecs are looked up by the ``name`` in their metadata.  The core codecs are
registered here; third parties add theirs through the entry-point group
``zarrfast.codecs`` (``name = "package.module:CodecClass"``, a subclass of one
of the classes in :mod:`zarrfast.codecs._base`) or by calling
:func:`register_codec`.
"""

from __future__ import annotations

import threading
from importlib.metadata import entry_points
from typing import Any

from zarrfast.codecs._base import Codec
from zarrfast.errors import (
    MetadataError,
    MetadataValidationError,
    UnknownCodecError,
    add_context,
)

__all__ = ["codec_object", "get_codec_class", "parse_codec", "register_codec", "registered_codecs"]

_registry: dict[str, type[Codec]] = {}
_entry_points_loaded = False
_lock = threading.Lock()


def register_codec(cls: type[Codec], name: str | None = None) -> type[Codec]:
    """Register ``cls`` under ``name`` (default ``cls.name``) and its aliases."""
    if not (isinstance(cls, type) and issubclass(cls, Codec)):
        raise TypeError(f"register_codec: {cls!r} is not a zarrfast Codec subclass")
    with _lock:
        _registry[name or cls.name] = cls
        for alias in cls.aliases:
            _registry.setdefault(alias, cls)
    return cls


def _load_entry_points() -> None:
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    for ep in entry_points(group="zarrfast.codecs"):
        if ep.name in _registry:
            continue
        try:
            cls = ep.load()
        except Exception as e:  # noqa: BLE001 - a broken plugin must not break core codecs
            import warnings

            warnings.warn(f"could not load zarrfast codec entry point {ep.name!r}: {e}",
                          stacklevel=2)
            continue
        register_codec(cls, ep.name)


def get_codec_class(name: str) -> type[Codec] | None:
    cls = _registry.get(name)
    if cls is None:
        _load_entry_points()
        cls = _registry.get(name)
    return cls


def registered_codecs() -> dict[str, type[Codec]]:
    _load_entry_points()
    return dict(_registry)


def parse_codec(value: Any, *, where: str = "codecs") -> Codec | None:
    """Parse one codec object from metadata.

    Returns ``None`` for an unknown codec explicitly marked
    ``"must_understand": false`` (the spec allows ignoring it); any other
    unknown codec raises :class:`UnknownCodecError`.
    """
    if isinstance(value, Codec):
        return value
    if isinstance(value, str):
        name = value
    elif isinstance(value, dict):
        name = value.get("name")
        if not isinstance(name, str):
            raise MetadataValidationError(
                f"{where}: codec object needs a string 'name', got {value!r}"
            )
    else:
        raise MetadataValidationError(
            f"{where}: a codec must be an object with 'name' (and 'configuration') or a "
            f"name string, got {value!r}"
        )
    cls = get_codec_class(name)
    if cls is None:
        if isinstance(value, dict) and value.get("must_understand") is False:
            return None
        raise UnknownCodecError(
            f"{where}: unknown codec {name!r}; registered codecs: "
            f"{', '.join(sorted(k for k in registered_codecs() if '/' not in k))}"
        )
    try:
        return cls.from_dict(value)
    except MetadataError as e:  # invalid, or needs a package that is not installed
        add_context(e, where)
        raise
    except (TypeError, ValueError, KeyError) as e:
        raise MetadataValidationError(f"{where}: invalid codec {value!r}: {e}") from None


def codec_object(value: Any) -> Any:
    """The codec object of one codec's JSON (``ZstdCodec(level=0, checksum=False)``), as
    zarr-python's metadata holds it; the JSON itself when no codec class takes it (an
    unknown codec, or one :class:`~zarrfast.codecs.CodecChain` will refuse with the node's
    name when the array is used); :mod:`zarrfast.codecs.metadata` makes zarr-python's
    metadata with it."""
    try:
        obj = parse_codec(value, where="codecs")
    except Exception:  # noqa: BLE001 - CodecChain reports it, naming the node
        return value
    return value if obj is None else obj
