"""Errors of the remote and archive stores.

They extend the :mod:`zarrfast.errors` hierarchy (every one is a
:class:`~zarrfast.errors.ZarrfastError`) and mix in the builtin that fits, so
``except OSError`` / ``except PermissionError`` written for fsspec or
zarr-python keeps working.  Messages name the store URL (or archive) and key.
"""

from __future__ import annotations

from zarrfast.errors import ChunkDecodeError, InvalidKeyError, ZarrfastError

__all__ = [
    "ForkedRuntimeError",
    "MissingDependencyError",
    "RemotePermissionError",
    "RemoteStoreError",
    "RetriesExhaustedError",
    "SpecialFileError",
    "StoreError",
    "StorePermissionError",
    "StoreWriteError",
    "StorageOptionsError",
    "UnsafeArchiveMemberError",
    "UnsupportedStoreOperationError",
    "ValueTooLargeError",
    "value_too_large",
]


class StoreError(ZarrfastError):
    """A store could not carry out a request."""


class SpecialFileError(StoreError, OSError):
    """A key of a local store is a FIFO, a socket or a device: never read (a FIFO would
    block the reader forever)."""


class StoreWriteError(StoreError, OSError):
    """A write or delete failed in the file system (disk full, quota, an I/O error):
    the message names the key; ``errno`` and ``filename`` are the system's.  The
    previous value of the key is unchanged."""

    def __init__(self, message: str, errno: int | None = None,
                 filename: str | None = None) -> None:
        super().__init__(message)
        self.errno = errno
        self.strerror = message
        self.filename = filename

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""

    def __reduce__(self):
        return (type(self), (str(self), self.errno, self.filename))


class StorePermissionError(StoreWriteError, PermissionError):
    """The file system refused a write or delete (``EACCES``, ``EPERM``)."""


class ValueTooLargeError(StoreError, ChunkDecodeError):
    """A stored value is larger than any valid value at its key (a decompression or
    archive bomb, a sparse multi-GiB file): refused before it is read.  (A chunk that
    cannot be decoded, too: ``except ChunkDecodeError`` catches it.)"""


def value_too_large(key: str, size: int, limit: int) -> ValueTooLargeError:
    """The refusal of a value of ``size`` bytes at ``key``, where none is larger than
    ``limit`` bytes."""
    return ValueTooLargeError(f"key {key!r}: {size} bytes, more than any valid value there "
                              f"({limit} bytes at most)")


class ArchiveNotFoundError(StoreError, FileNotFoundError):
    """A zip archive opened for reading does not exist."""


class RemoteStoreError(StoreError, OSError):
    """A request to a remote store failed (and will not succeed by retrying)."""


class ForkedRuntimeError(RemoteStoreError):
    """A request through obstore in a process forked after its parent made requests
    through obstore: obstore's runtime threads do not survive ``fork``, so the request
    would never finish."""


class RemotePermissionError(RemoteStoreError, PermissionError):
    """The remote store refused access (HTTP 403, bad credentials)."""


class RetriesExhaustedError(RemoteStoreError):
    """A transient failure (HTTP 5xx, connection reset, timeout) persisted through every attempt.

    Parameters
    ----------
    message : str
        What failed (the key and its URL), after how many attempts, and the last
        error.
    attempts : int
        How many attempts were made.

    Attributes
    ----------
    attempts : int
        How many attempts were made (``RetryPolicy.attempts``).
    """

    def __init__(self, message: str, attempts: int) -> None:
        super().__init__(message)
        self.attempts = attempts

    def __reduce__(self):
        return (type(self), (str(self), self.attempts))


class MissingDependencyError(StoreError, ImportError):
    """An optional dependency of a store is not installed."""


class StorageOptionsError(StoreError, TypeError):
    """``storage_options`` were given for a store that does not use them."""


class UnsupportedStoreOperationError(StoreError, NotImplementedError):
    """The store cannot do this at all (deleting from a zip archive)."""


class UnsafeArchiveMemberError(InvalidKeyError, StoreError):
    """An archive member name would leave the archive's root when extracted or used
    as a key (``..`` segments, absolute paths, backslashes, drive letters)."""
