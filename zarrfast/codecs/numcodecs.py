"""zarr-python's ``zarr.codecs.numcodecs`` classes: numcodecs' codecs under their Zarr v3
names, built from numcodecs' keyword arguments.

Each class takes numcodecs' own parameters and writes what zarr-python writes (making
one warns, as zarr-python does, that other Zarr implementations may not read it)::

    >>> from zarrfast.codecs.numcodecs import LZMA, Delta
    >>> Delta(dtype="<i4").to_dict()
    {'name': 'numcodecs.delta', 'configuration': {'dtype': '<i4'}}
    >>> arr = zarrfast.create_array(store={}, shape=(100,), dtype="i4",
    ...                             filters=[Delta(dtype="<i4")], compressors=[LZMA(preset=1)])
    >>> arr[:] = np.arange(100)
    >>> arr.filters, arr.compressors
    ((Delta(codec_name='numcodecs.delta', codec_config={'dtype': '<i4'}),),
     (LZMA(codec_name='numcodecs.lzma', codec_config={'preset': 1}),))
    >>> int(arr[99])
    99

They are the classes zarrfast reads ``numcodecs.<id>`` metadata into (so an array's
``filters`` compare equal to the codecs it was created with), each a subclass of the codec
doing the work in ``zarrfast.codecs.numcodecs_v3``: ``Zstd``, ``Blosc`` and ``GZip`` are
the core codecs' fast paths, the rest numcodecs' classes.  ``CRC32C`` is numcodecs' own
(it also puts the checksum first, ``location="start"``); metadata naming
``numcodecs.crc32c`` with the checksum at the end reads into the ``crc32c`` fast path.
"""

from __future__ import annotations

import warnings
from typing import Any

from zarrfast.codecs.numcodecs_v3 import (
    _FAST,
    _GENERIC,
    PREFIX,
    _make_impl,
    _numcodecs_config,
    zarr_repr,
)
from zarrfast.errors import MetadataValidationError, ZarrUserWarning

__all__ = [
    "BZ2", "CRC32", "CRC32C", "LZ4", "LZMA", "ZFPY", "Adler32", "AsType", "BitRound",
    "Blosc", "Delta", "FixedScaleOffset", "Fletcher32", "GZip", "JenkinsLookup3", "PCodec",
    "PackBits", "Quantize", "Shuffle", "Zlib", "Zstd",
]  # (the classes only, as zarr-python's: its tests take every name here for a class)


def _user_config(name: str, configuration: Any, codec_config: dict[str, Any]) -> dict:
    """The numcodecs configuration (without ``id``) of ``Cls(**codec_config)`` or
    ``Cls(configuration={...})``."""
    codec_id = name[len(PREFIX):]
    if configuration is None:  # made by the user (metadata read gives configuration=)
        warnings.warn("Numcodecs codecs are not in the Zarr version 3 specification and may "
                      "not be supported by other zarr implementations.", ZarrUserWarning,
                      stacklevel=3)
    if configuration is not None:
        if codec_config:
            raise MetadataValidationError(
                f"codec {name!r}: give numcodecs' parameters as keywords or as "
                f"configuration=, not both (got configuration={configuration!r} and "
                f"{codec_config!r})")
        if not isinstance(configuration, dict):
            raise MetadataValidationError(
                f"codec {name!r}: configuration must be a dict, got {configuration!r}")
        codec_config = configuration
    config = dict(codec_config)
    given = config.pop("id", codec_id)
    if given != codec_id:
        raise MetadataValidationError(
            f"codec {name!r}: id {given!r} does not match the codec id {codec_id!r}")
    return config


#: keyword arguments for the example of a class's docstring (``None``: no example)
_EXAMPLE_KWARGS = {"bz2": "level=9", "lz4": "acceleration=1", "lzma": "preset=1",
                   "zlib": "level=1", "gzip": "level=1", "zstd": "level=3"}


def _class_doc(cls_name: str, codec_id: str, fast: bool) -> str:
    """The docstring of the class of ``numcodecs.<codec_id>``."""
    numcodecs_name = _NUMCODECS_NAMES[codec_id]
    path = (f"The bytes are those of the core ``{codec_id}`` codec, with its fast path."
            if fast else f"numcodecs' ``{numcodecs_name}`` encodes and decodes.")
    extra = ("" if codec_id not in ("pcodec", "zfpy") else f"""
    UnknownCodecError
        The ``{codec_id}`` package is not installed.""")
    doc = f"""``numcodecs.{codec_id}``: ``numcodecs.{numcodecs_name}`` with its keyword arguments.

    zarr-python's ``zarr.codecs.numcodecs.{cls_name}``: arrays record it as
    ``{{"name": "numcodecs.{codec_id}", "configuration": {{...}}}}``, the configuration
    being numcodecs' own without ``id``.
    {path}
    Making one from keywords warns (``ZarrUserWarning``) that other Zarr implementations
    may not read it, as zarr-python does.
    See [numcodecs.{numcodecs_name}](https://numcodecs.readthedocs.io/en/stable/) for its
    parameters.

    Parameters
    ----------
    configuration : dict, optional
        numcodecs' configuration as a dict (how metadata is read); give it or keywords,
        not both.
    **codec_config
        numcodecs' keyword arguments for ``numcodecs.{numcodecs_name}``; an ``id`` given
        must be ``"{codec_id}"``.

    Raises
    ------
    MetadataValidationError
        Both ``configuration`` and keywords are given, or numcodecs refuses the
        configuration (an unknown keyword, a bad value).{extra}
"""
    kwargs = _EXAMPLE_KWARGS.get(codec_id)
    if kwargs is not None:
        key, value = kwargs.split("=")
        doc += f"""
    Examples
    --------
    >>> from zarrfast.codecs.numcodecs import {cls_name}
    >>> codec = {cls_name}({kwargs})
    >>> codec.to_dict()
    {{'name': 'numcodecs.{codec_id}', 'configuration': {{'{key}': {value}}}}}
    >>> bytes(codec.decode(codec.encode(b"abc" * 100)))[:6]
    b'abcabc'
"""
    return doc


class _Wrapper:
    """zarr-python's repr (``codec_name`` and ``codec_config`` come with the codecs)."""

    __repr__ = zarr_repr

    @property
    def _codec(self) -> Any:
        """numcodecs' codec object of this configuration (zarr-python's ``_codec``)."""
        impl = getattr(self, "_impl", None)
        if impl is None:  # (the core codecs' fast paths keep none)
            name = self.name  # type: ignore[attr-defined]
            impl = _make_impl(name, name[len(PREFIX):], dict(self.configuration))  # type: ignore[attr-defined]
        return impl


#: zarr-python's (private) base class of these classes, under its name: its own tests
#: collect the codec classes with ``issubclass(cls, _NumcodecsCodec)``
_NumcodecsCodec = _Wrapper


def _generic(cls_name: str, codec_id: str) -> type:
    base = _GENERIC[codec_id]

    def __init__(self: Any, configuration: dict | None = None, **codec_config: Any) -> None:
        base.__init__(self, configuration=_user_config(base.name, configuration, codec_config))

    return type(cls_name, (_Wrapper, base), {
        "__init__": __init__, "__module__": __name__, "__qualname__": cls_name,
        "codec_name": f"numcodecs.{codec_id}",  # (on the class too, as zarr-python's)
        "__doc__": _class_doc(cls_name, codec_id, fast=False)})


def _fast(cls_name: str, codec_id: str) -> type:
    base = _FAST[codec_id]

    def __init__(self: Any, configuration: dict | None = None, **codec_config: Any) -> None:
        config = _user_config(base.name, configuration, codec_config)
        impl = _make_impl(base.name, codec_id, config)
        base.__init__(self, **base._core(impl, config), configuration=config)

    def from_dict(cls: Any, data: Any) -> Any:
        """Make the codec from its metadata object.

        Parameters
        ----------
        data : dict
            ``{"name": "numcodecs.<id>", "configuration": {...}}``.

        Returns
        -------
        Codec
            The codec.

        Raises
        ------
        MetadataValidationError
            Another name, or a configuration numcodecs refuses.
        """
        config, _ = _numcodecs_config(base.name, codec_id, data)
        return cls(configuration=config)

    return type(cls_name, (_Wrapper, base), {
        "__init__": __init__, "from_dict": classmethod(from_dict), "__module__": __name__,
        "__qualname__": cls_name, "codec_name": f"numcodecs.{codec_id}",
        "__doc__": _class_doc(cls_name, codec_id, fast=True)})


#: numcodecs' class name for each codec id
_NUMCODECS_NAMES = {
    "blosc": "Blosc", "lz4": "LZ4", "zstd": "Zstd", "zlib": "Zlib", "gzip": "GZip",
    "bz2": "BZ2", "lzma": "LZMA", "shuffle": "Shuffle", "crc32": "CRC32", "crc32c": "CRC32C",
    "adler32": "Adler32", "fletcher32": "Fletcher32", "jenkins_lookup3": "JenkinsLookup3",
    "delta": "Delta", "bitround": "BitRound", "fixedscaleoffset": "FixedScaleOffset",
    "quantize": "Quantize", "packbits": "PackBits", "astype": "AsType", "pcodec": "PCodec",
    "zfpy": "ZFPY",
}

Blosc = _fast("Blosc", "blosc")
Zstd = _fast("Zstd", "zstd")
GZip = _fast("GZip", "gzip")
LZ4 = _generic("LZ4", "lz4")
Zlib = _generic("Zlib", "zlib")
BZ2 = _generic("BZ2", "bz2")
LZMA = _generic("LZMA", "lzma")
Shuffle = _generic("Shuffle", "shuffle")
CRC32 = _generic("CRC32", "crc32")
CRC32C = _generic("CRC32C", "crc32c")
Adler32 = _generic("Adler32", "adler32")
Fletcher32 = _generic("Fletcher32", "fletcher32")
JenkinsLookup3 = _generic("JenkinsLookup3", "jenkins_lookup3")
Delta = _generic("Delta", "delta")
BitRound = _generic("BitRound", "bitround")
FixedScaleOffset = _generic("FixedScaleOffset", "fixedscaleoffset")
Quantize = _generic("Quantize", "quantize")
PackBits = _generic("PackBits", "packbits")
AsType = _generic("AsType", "astype")
PCodec = _generic("PCodec", "pcodec")
ZFPY = _generic("ZFPY", "zfpy")


def wrapper_classes() -> list[type]:
    """The class registered for each ``numcodecs.<id>`` name (``numcodecs.crc32c`` keeps its
    fast path, see the module docstring)."""
    out = [cls for name, cls in globals().items() if name in __all__ and isinstance(cls, type)]
    return [cls for cls in out if cls is not CRC32C] + [_FAST["crc32c"]]
