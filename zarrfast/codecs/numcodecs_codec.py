"""numcodecs codecs (Zarr v2 ``compressor`` and ``filters``) as bytes -> bytes codecs.

Zarr v2 encodes a chunk by handing its array (C or F order) to each filter in
turn and then to the compressor; any numcodecs codec can appear
(``{"id": "zstd", "level": 1}``, ``{"id": "delta", "dtype": "<i4"}``, ...).
:class:`NumcodecsCodec` wraps one; the first filter of a chain is given the
chunk viewed as the array's dtype (some filters, e.g. ``bitround``, check it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numcodecs
import numpy as np

from ..errors import CodecError, UnknownCodecError
from ._base import BytesBytesCodec


def get_numcodecs_codec(config: Any, *, where: str) -> Any:
    """A numcodecs codec instance from its config dict; errors name ``where``."""
    if not isinstance(config, dict) or not isinstance(config.get("id"), str):
        raise UnknownCodecError(
            f"{where}: a numcodecs codec must be an object with a string 'id', got {config!r}"
        )
    try:
        return numcodecs.get_codec(dict(config))
    except ValueError as e:  # unknown id
        raise UnknownCodecError(f"{where}: unknown numcodecs codec {config['id']!r} ({e})"
                                ) from None
    except (TypeError, KeyError) as e:
        raise UnknownCodecError(f"{where}: invalid configuration {config!r} ({e})") from None


@dataclass(frozen=True)
class NumcodecsCodec(BytesBytesCodec):
    """One numcodecs codec in a Zarr v2 chain."""

    config: dict = field(default_factory=dict, compare=True, hash=False)
    #: dtype to view the incoming bytes as when encoding (the first filter gets the chunk's)
    view_dtype: Any = field(default=None, compare=False, hash=False)
    codec: Any = field(default=None, compare=False, hash=False, repr=False)
    name = "numcodecs"

    @classmethod
    def from_config(cls, config: dict, *, where: str, view_dtype: Any = None) -> NumcodecsCodec:
        return cls(config=dict(config), view_dtype=view_dtype,
                   codec=get_numcodecs_codec(config, where=where))

    def to_dict(self) -> dict[str, Any]:
        return dict(self.config)

    def encode(self, data: Any) -> Any:
        if (self.view_dtype is not None and isinstance(data, np.ndarray)
                and data.dtype == np.uint8 and data.nbytes % self.view_dtype.itemsize == 0):
            data = data.view(self.view_dtype)
        try:
            return self.codec.encode(data)
        except Exception as e:  # noqa: BLE001 - numcodecs raises anything
            raise CodecError(f"numcodecs {self.config.get('id')!r}: cannot encode: {e}") from e

    def decode(self, data: Any, out: Any = None) -> Any:
        try:
            if out is not None:
                return self.codec.decode(data, out=out)
            return self.codec.decode(data)
        except Exception as e:  # noqa: BLE001
            raise CodecError(f"numcodecs {self.config.get('id')!r}: cannot decode: {e}") from e
