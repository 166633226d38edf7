"""zarr-python 3.4's deprecated codec enums: classes whose members are plain strings.

zarr-python 3.4 replaced the ``StrEnum``s ``Endian``, ``BloscCname``, ``BloscShuffle``
and ``ShardingCodecIndexLocation`` by literal strings. The names stay for old code:
``Endian.little`` is the string ``"little"``, with a ``DeprecationWarning``, and an
enum member given to a codec is taken as its value, with a ``DeprecationWarning`` too.
zarrfast does the same, with the same warning texts.
"""

from __future__ import annotations

import warnings
from enum import Enum

__all__ = ["DeprecatedStrEnumMeta", "coerce_enum_input"]


class DeprecatedStrEnumMeta(type):
    """The metaclass of the deprecated enum classes: ``Cls.name`` -> its string, warned.

    A class declares its members in ``_members`` (member name -> string).
    """

    _members: dict[str, str]

    def __getattr__(cls, name: str) -> str:
        members: dict[str, str] = type.__getattribute__(cls, "_members")
        if name in members:
            warnings.warn(
                f"{cls.__name__}.{name} is deprecated; pass the string {members[name]!r} "
                f"instead.",
                DeprecationWarning,
                stacklevel=2,
            )
            return members[name]
        raise AttributeError(name)


def coerce_enum_input(value: object, param_name: str, codec_name: str) -> object:
    """An ``Enum`` member given for ``param_name`` -> its value, with zarr-python's
    ``DeprecationWarning``; anything else as it is."""
    if isinstance(value, Enum):
        warnings.warn(
            f"Passing an enum to {codec_name}(..., {param_name}=...) is deprecated; "
            "pass the equivalent literal string instead.",
            DeprecationWarning,
            stacklevel=4,
        )
        return value.value
    return value
