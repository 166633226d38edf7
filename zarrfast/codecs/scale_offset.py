"""``zarr.codecs.scale_offset``: zarr-python 3.4's ``ScaleOffset`` codec class.

The ``scale_offset`` codec of the zarr-extensions registry, under zarr-python 3.4's name
and constructor: ``ScaleOffset(offset=0, scale=1)``, keyword-only, numbers or strings
(strings keep the JSON exactly as written), and ``to_dict`` leaving out what equals the
default.  It encodes and decodes as :class:`~zarrfast.codecs.ScaleOffsetCodec` (zarrfast's
class of the codec, which arrays read from metadata hold).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from zarrfast.codecs._base import parse_named_config
from zarrfast.codecs.arithmetic import ScaleOffsetCodec

__all__ = ["ScaleOffset"]


@dataclass(frozen=True, init=False)
class ScaleOffset(ScaleOffsetCodec):
    """``scale_offset`` as zarr-python 3.4's ``ScaleOffset``: ``out = (in - offset) * scale``.

    Parameters
    ----------
    offset : int, float or str, default 0
        Subtracted when encoding (a string keeps its JSON form, such as ``"NaN"``).
    scale : int, float or str, default 1
        Multiplied after the offset when encoding; it must not be 0.

    Raises
    ------
    TypeError
        ``offset`` or ``scale`` is not a number or a string.

    Examples
    --------
    >>> from zarrfast.codecs import ScaleOffset
    >>> ScaleOffset().to_dict(), ScaleOffset(scale=0.1).to_dict()
    ({'name': 'scale_offset'}, {'name': 'scale_offset', 'configuration': {'scale': 0.1}})
    >>> arr = zarrfast.create_array(store={}, shape=(3,), dtype="float64",
    ...                             filters=[ScaleOffset(offset=10, scale=100)])
    >>> arr[:] = [10.0, 10.5, 11.25]
    >>> arr[:]
    array([10.  , 10.5 , 11.25])
    """

    def __init__(self, *, offset: object = 0, scale: object = 1) -> None:
        if not isinstance(offset, int | float | str):
            raise TypeError(f"offset must be a number or string, got {type(offset).__name__}")
        if not isinstance(scale, int | float | str):
            raise TypeError(f"scale must be a number or string, got {type(scale).__name__}")
        object.__setattr__(self, "offset", offset)
        object.__setattr__(self, "scale", scale)

    @classmethod
    def from_dict(cls, data: Any) -> ScaleOffset:
        """Make the codec from its metadata object.

        Parameters
        ----------
        data : dict
            ``{"name": "scale_offset"}``, with a ``configuration`` of ``offset`` and/or
            ``scale`` or without.

        Returns
        -------
        ScaleOffset
            The codec.

        Raises
        ------
        MetadataValidationError
            Another name, an unknown member.
        """
        config = parse_named_config(data, cls.name, allowed=("offset", "scale"))
        return cls(**config)

    def compute_encoded_size(self, input_byte_length: int, _chunk_spec: Any) -> int:
        """The bytes of an encoded chunk, as zarr-python's ``compute_encoded_size``.

        Parameters
        ----------
        input_byte_length : int
            The bytes of the chunk given to the codec.
        _chunk_spec : Any
            zarr-python's ``ArraySpec`` of the chunk (not used: the values keep their
            data type; zarr-python's name for it).

        Returns
        -------
        int
            ``input_byte_length``.
        """
        return input_byte_length

    def to_dict(self) -> dict[str, Any]:
        """Give the codec's metadata object, as zarr-python 3.4 writes it.

        Returns
        -------
        dict
            ``{"name": "scale_offset", "configuration": {...}}`` with ``offset`` unless 0
            and ``scale`` unless 1 (no ``configuration`` when both are left out).
        """
        config: dict[str, Any] = {}
        if self.offset != 0:
            config["offset"] = self.offset
        if self.scale != 1:
            config["scale"] = self.scale
        return {"name": self.name, "configuration": config} if config else {"name": self.name}
