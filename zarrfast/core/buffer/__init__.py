"""``zarr.core.buffer``: zarr-python's buffer classes, over bytes and NumPy arrays.

zarrfast's stores take and give ``bytes`` (any bytes-like object), not buffers, and
:class:`zarrfast.storage.AsyncStore` accepts zarr-python's ``prototype`` argument and
ignores it.  Code written for zarr-python still builds buffers and prototypes
(anndata's test helpers call ``default_buffer_prototype()``); these classes let it run
with ``zarr`` installed as zarrfast (:func:`zarrfast.install_as_zarr`).  ``Buffer`` is a
one-dimensional byte buffer on the CPU, ``NDBuffer`` an N-dimensional NumPy array;
zarrfast has no GPU buffers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Buffer", "BufferPrototype", "NDBuffer", "default_buffer_prototype",
           "numpy_buffer_prototype"]


class Buffer:
    """A contiguous run of bytes (zarr-python's ``zarr.core.buffer.Buffer``).

    Parameters
    ----------
    array_like : bytes-like or numpy.ndarray
        The bytes: anything the buffer protocol exposes, viewed as a flat uint8 array
        without a copy.

    Examples
    --------
    >>> from zarrfast.core.buffer import Buffer
    >>> buf = Buffer.from_bytes(b"abc")
    >>> len(buf), buf.to_bytes()
    (3, b'abc')
    """

    _data: np.ndarray

    def __init__(self, array_like: Any) -> None:
        if isinstance(array_like, Buffer):
            array_like = array_like._data
        if isinstance(array_like, np.ndarray):
            self._data = array_like.reshape(-1).view(np.uint8)
        else:
            self._data = np.frombuffer(array_like, dtype=np.uint8)

    @classmethod
    def from_bytes(cls, bytes_like: Any) -> Buffer:
        """A buffer of ``bytes_like`` (no copy)."""
        return cls(bytes_like)

    @classmethod
    def from_array_like(cls, array_like: Any) -> Buffer:
        """A buffer of a one-dimensional array of bytes (no copy)."""
        return cls(array_like)

    @classmethod
    def create_zero_length(cls) -> Buffer:
        """An empty buffer."""
        return cls(b"")

    def as_array_like(self) -> np.ndarray:
        """The bytes as a flat uint8 NumPy array (no copy)."""
        return self._data

    def as_numpy_array(self) -> np.ndarray:
        """The bytes as a flat uint8 NumPy array (no copy)."""
        return self._data

    def as_buffer_like(self) -> memoryview:
        """The bytes as a ``memoryview`` (no copy)."""
        return memoryview(self._data)  # type: ignore[arg-type]

    def to_bytes(self) -> bytes:
        """The bytes, copied into ``bytes``."""
        return self._data.tobytes()

    def __bytes__(self) -> bytes:
        return self.to_bytes()

    def __buffer__(self, flags: int) -> memoryview:
        return memoryview(self._data)  # type: ignore[arg-type]

    def __len__(self) -> int:
        return int(self._data.size)

    def __getitem__(self, key: slice) -> Buffer:
        return type(self)(self._data[key])

    def __add__(self, other: Any) -> Buffer:
        return type(self)(np.concatenate([self._data, Buffer(other)._data]))

    def __eq__(self, other: object) -> bool:
        try:
            return self.to_bytes() == Buffer(other).to_bytes()  # type: ignore[arg-type]
        except TypeError:
            return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Buffer({self.to_bytes()[:32]!r}{'...' if len(self) > 32 else ''})"


class NDBuffer:
    """An N-dimensional array (zarr-python's ``zarr.core.buffer.NDBuffer``), a NumPy one.

    Parameters
    ----------
    array : numpy.ndarray or array-like
        The array (``numpy.asarray`` of it, no copy when it is one).

    Examples
    --------
    >>> import numpy as np
    >>> from zarrfast.core.buffer import NDBuffer
    >>> NDBuffer.from_numpy_array(np.arange(3)).as_numpy_array()
    array([0, 1, 2])
    """

    def __init__(self, array: Any) -> None:
        self._data = np.asarray(array)

    @classmethod
    def from_ndarray_like(cls, ndarray_like: Any) -> NDBuffer:
        """An ``NDBuffer`` of an array."""
        return cls(ndarray_like)

    @classmethod
    def from_numpy_array(cls, array_like: Any) -> NDBuffer:
        """An ``NDBuffer`` of a NumPy array."""
        return cls(array_like)

    @classmethod
    def create(cls, *, shape: Any, dtype: Any, order: str = "C",
               fill_value: Any = None) -> NDBuffer:
        """A new array of ``shape`` and ``dtype``, filled with ``fill_value`` if given."""
        data = np.empty(shape, dtype=dtype, order=order)  # type: ignore[call-overload]
        if fill_value is not None:
            data.fill(fill_value)
        return cls(data)

    def as_ndarray_like(self) -> np.ndarray:
        """The array."""
        return self._data

    def as_numpy_array(self) -> np.ndarray:
        """The array, as a NumPy array."""
        return self._data

    @property
    def shape(self) -> tuple[int, ...]:
        """The array's shape."""
        return self._data.shape

    @property
    def dtype(self) -> np.dtype:
        """The array's data type."""
        return self._data.dtype

    def __getitem__(self, key: Any) -> NDBuffer:
        return type(self)(self._data[key])

    def __setitem__(self, key: Any, value: Any) -> None:
        self._data[key] = value.as_numpy_array() if isinstance(value, NDBuffer) else value

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return f"NDBuffer({self._data!r})"


@dataclass(frozen=True)
class BufferPrototype:
    """The buffer classes to read into (zarr-python's ``BufferPrototype``).

    Parameters
    ----------
    buffer : type
        The one-dimensional buffer class.
    nd_buffer : type
        The N-dimensional buffer class.
    """

    buffer: type[Buffer]
    nd_buffer: type[NDBuffer]


def default_buffer_prototype() -> BufferPrototype:
    """The prototype of CPU buffers, zarr-python's default.

    Returns
    -------
    BufferPrototype
        ``BufferPrototype(buffer=Buffer, nd_buffer=NDBuffer)``.

    Examples
    --------
    >>> from zarrfast.core.buffer import default_buffer_prototype
    >>> default_buffer_prototype().buffer.from_bytes(b"ab").to_bytes()
    b'ab'
    """
    return _PROTOTYPE


numpy_buffer_prototype = default_buffer_prototype

_PROTOTYPE = BufferPrototype(buffer=Buffer, nd_buffer=NDBuffer)
