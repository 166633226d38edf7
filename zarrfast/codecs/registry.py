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
from zarrfast.concurrency import renew_after_fork
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
renew_after_fork(globals(), "_lock", threading.Lock)


def register_codec(cls: type[Codec], name: str | None = None) -> type[Codec]:
    """Register the codec class ``cls``, so that metadata naming it reads into it.

    It is registered under ``name`` and, unless another class holds them, under its
    ``aliases``; a class registered before under ``name`` is replaced.  Returning the
    class, this can be used as a class decorator.  Third-party packages may instead
    declare an entry point in the group ``zarrfast.codecs``.

    Parameters
    ----------
    cls : type
        A subclass of [zarrfast.codecs.ArrayArrayCodec][],
        [zarrfast.codecs.ArrayBytesCodec][] or [zarrfast.codecs.BytesBytesCodec][] with
        ``name``, ``from_dict`` and ``to_dict``.
    name : str, optional
        The name to register it under; default ``cls.name``.

    Returns
    -------
    type
        ``cls``.

    Raises
    ------
    TypeError
        ``cls`` is not a subclass of [zarrfast.codecs.Codec][].

    Examples
    --------
    >>> from dataclasses import dataclass
    >>> from zarrfast.codecs import BytesBytesCodec, get_codec_class, register_codec
    >>> @register_codec
    ... @dataclass(frozen=True)
    ... class Invert(BytesBytesCodec):
    ...     name = "example.invert"
    ...     @classmethod
    ...     def from_dict(cls, data):
    ...         return cls()
    ...     def to_dict(self):
    ...         return {"name": self.name}
    ...     def encode(self, data):
    ...         return bytes(255 - b for b in bytes(data))
    ...     def decode(self, data, out=None):
    ...         return bytes(255 - b for b in bytes(data))
    >>> get_codec_class("example.invert") is Invert
    True
    >>> arr = zarrfast.create_array(store={}, shape=(3,), dtype="uint8",
    ...                             compressors=[Invert()])
    >>> arr[:] = [1, 2, 3]
    >>> arr[:]
    array([1, 2, 3], dtype=uint8)
    """
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
    """Find the codec class registered under a name.

    The codecs of the entry-point group ``zarrfast.codecs`` are loaded the first time a
    name is not found among those registered.

    Parameters
    ----------
    name : str
        The name in a codec's metadata object (``"zstd"``, ``"numcodecs.delta"``) or
        one of a codec's aliases (a draft URI).

    Returns
    -------
    type or None
        The codec class, or ``None`` when no class is registered under ``name``.

    Examples
    --------
    >>> from zarrfast.codecs import get_codec_class
    >>> get_codec_class("zstd")
    <class 'zarrfast.codecs.compressors.ZstdCodec'>
    >>> get_codec_class("no-such-codec") is None
    True
    """
    cls = _registry.get(name)
    if cls is None:
        _load_entry_points()
        cls = _registry.get(name)
    return cls


def registered_codecs() -> dict[str, type[Codec]]:
    """Give every registered codec class by name, the entry-point group's included.

    Returns
    -------
    dict of str to type
        A copy of the registry: each name and alias a codec answers to (``"zstd"``,
        ``"numcodecs.zstd"``, draft URIs) and its class.

    Examples
    --------
    >>> from zarrfast.codecs import registered_codecs
    >>> codecs = registered_codecs()
    >>> codecs["blosc"].__name__, "sharding_indexed" in codecs
    ('BloscCodec', True)
    """
    _load_entry_points()
    return dict(_registry)


def parse_codec(value: Any, *, where: str = "codecs") -> Codec | None:
    """Parse one codec object from metadata into a codec.

    Parameters
    ----------
    value : dict, str or Codec
        A codec's metadata object (``{"name": ..., "configuration": {...}}``), a bare
        codec name, or a codec (given back as it is).
    where : str, default "codecs"
        What to name in error messages (``"array 'a': codecs[1]"``).

    Returns
    -------
    Codec or None
        The codec; ``None`` for an unknown codec explicitly marked
        ``"must_understand": false`` (the specification allows ignoring it).

    Raises
    ------
    UnknownCodecError
        No codec is registered under the name (the message lists those that are).
    MetadataValidationError
        ``value`` is not a codec object, or its configuration is invalid.

    Examples
    --------
    >>> from zarrfast.codecs import parse_codec
    >>> parse_codec({"name": "gzip", "configuration": {"level": 1}})
    GzipCodec(level=1)
    >>> parse_codec({"name": "x.unknown", "must_understand": False}) is None
    True
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
