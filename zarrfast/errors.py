"""The zarrfast error hierarchy.

Every error zarrfast raises on purpose derives from [zarrfast.errors.ZarrfastError][],
which is itself a ``ValueError``, and where a builtin fits better the
error mixes it in too (``NodeNotFoundError`` is a ``FileNotFoundError``,
``ReadOnlyError`` a ``PermissionError``, ...), so that ``except`` clauses
written for zarr-python or for the builtins keep working.

Messages name the node path, store key or value at fault and say what was
expected.  Code that knows more of where an error happened than the code that raised
it adds that with [zarrfast.errors.add_context][] and re-raises the same object.
"""

from __future__ import annotations

__all__ = [
    "ChunkNotFoundError",
    "PickleCodecDisabledError",
    "RectilinearChunksDisabledError",
    "UnstableSpecificationWarning",
    "ZarrDeprecationWarning",
    "ZarrFutureWarning",
    "ZarrRuntimeWarning",
    "ZarrUserWarning",
    "ZarrfastError",
    "BaseZarrError",
    "MetadataError",
    "MetadataValidationError",
    "MetadataTypeError",
    "UnknownCodecError",
    "UnsupportedDataTypeError",
    "FillValueError",
    "FillValueOverflowError",
    "ValueCastError",
    "ValueOverflowError",
    "ValueTypeError",
    "NodeNotFoundError",
    "ArrayNotFoundError",
    "GroupNotFoundError",
    "MemberNotFoundError",
    "ContainsArrayError",
    "ContainsGroupError",
    "ContainsArrayAndGroupError",
    "NodeTypeValidationError",
    "ArrayNotGroupError",
    "IncompatibleNodeError",
    "IncompatibleMemberError",
    "InvalidNodeNameError",
    "InvalidKeyError",
    "ReadOnlyError",
    "BoundsCheckError",
    "IndexingError",
    "ArrayIndexError",
    "NegativeStepError",
    "VindexInvalidSelectionError",
    "DataTypeValidationError",
    "ChunkDecodeError",
    "ChecksumError",
    "CodecError",
    "AllocationError",
    "ChunkAllocationError",
    "ConcurrentWriteError",
    "LockTimeoutError",
    "LockUnavailableError",
]


class ZarrfastError(ValueError):
    """Root of all zarrfast errors."""


#: zarr-python's name for the root of its hierarchy.
BaseZarrError = ZarrfastError


class MetadataError(ZarrfastError):
    """A metadata document is malformed or invalid."""


class MetadataValidationError(MetadataError):
    """A metadata member is missing, mistyped or has an invalid value."""


class DataTypeValidationError(MetadataValidationError):
    """A value is not (the JSON form of, or a NumPy dtype of) a data type.

    Raised by the data-type classes of [zarrfast.dtype][] (``Int32.from_native_dtype``,
    ``from_json``, ...) as zarr-python 3.4's ``zarr.errors.DataTypeValidationError``, a
    ``ValueError``; the registry takes it as "not this data type" and tries the next.
    """


class MetadataTypeError(MetadataValidationError, TypeError):
    """An argument describing a node has the wrong type, where zarr-python raises ``TypeError``.

    A codec of the wrong kind (a compressor among the filters), several compressors for
    a Zarr v2 array, a shape that is not integers.  Both a ``TypeError`` and a
    [zarrfast.errors.MetadataValidationError][].
    """


class UnknownCodecError(MetadataError):
    """A codec named in the metadata is not registered."""


class UnsupportedDataTypeError(MetadataError, TypeError):
    """A data type is unknown or cannot be stored."""


class FillValueError(MetadataError):
    """A fill value cannot be represented in the array's data type."""


class FillValueOverflowError(FillValueError, OverflowError):
    """A fill value is out of the data type's range (300 for uint8).

    Also the ``OverflowError`` NumPy 2 and zarr-python raise for it.
    """


class ValueCastError(ZarrfastError):
    """A value written to an array cannot be stored in its data type.

    Raised where NumPy 2 refuses the same assignment (NaN into an integer array).  The
    message names the array, the value and the data type; nothing was written.
    """


class ValueOverflowError(ValueCastError, OverflowError):
    """A Python scalar written to an array is out of its data type's range.

    ``a[:] = 300`` into uint8, ``1e20`` into int32: also the ``OverflowError`` NumPy 2
    raises.
    """


class ValueTypeError(ValueCastError, TypeError):
    """A value written to an array is of a type its data type cannot hold.

    A complex number into integers, for example: also the ``TypeError`` NumPy 2 raises.
    """


class NodeNotFoundError(ZarrfastError, FileNotFoundError):
    """No array or group exists at a path."""


class ArrayNotFoundError(NodeNotFoundError):
    """No array exists at a path."""


class GroupNotFoundError(NodeNotFoundError):
    """No group exists at a path."""


class MemberNotFoundError(NodeNotFoundError, KeyError):
    """A group has no member of that name (also a ``KeyError``, as for mappings)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class ContainsArrayError(ZarrfastError, FileExistsError):
    """An array already exists at a path."""


class ContainsGroupError(ZarrfastError, FileExistsError):
    """A group already exists at a path."""


class ContainsArrayAndGroupError(ZarrfastError, FileExistsError):
    """Both array and group metadata exist at a path."""


class NodeTypeValidationError(MetadataValidationError):
    """A node has a different type than the one asked for."""


class ArrayNotGroupError(NodeTypeValidationError, ContainsArrayError):
    """A group was asked for where an array is.

    A [zarrfast.errors.NodeTypeValidationError][] and, as zarr-python raises here, a
    [zarrfast.errors.ContainsArrayError][].
    """


class IncompatibleNodeError(ZarrfastError, TypeError):
    """``require_array``/``require_group`` found a node that does not fit what is required.

    Another shape, a dtype that does not cast, an array for a group: a ``TypeError``, as
    zarr-python raises.
    """


class IncompatibleMemberError(IncompatibleNodeError, ContainsArrayError):
    """``require_group`` found an array (or ``require_array`` a group) under that name.

    An [zarrfast.errors.IncompatibleNodeError][] and the
    [zarrfast.errors.ContainsArrayError][] zarrfast raised here before.
    """


class InvalidNodeNameError(ZarrfastError):
    """A node name breaks the rules of the specification."""


class InvalidKeyError(ZarrfastError, KeyError):
    """A store key is malformed or would leave the store."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class ReadOnlyError(ZarrfastError, PermissionError):
    """A write was attempted on a read-only store or array."""


class IndexingError(ZarrfastError, IndexError):
    """A selection is malformed."""


class BoundsCheckError(IndexingError):
    """A selection reaches outside the array."""


class ArrayIndexError(IndexingError):
    """A selection item an indexing mode does not take (zarr-python's ``ArrayIndexError``).

    Also an ``IndexError``, like every [zarrfast.errors.IndexingError][].
    """


class NegativeStepError(IndexingError):
    """A slice of negative step where a selection takes steps >= 1 only.

    zarr-python raises it for every negative step; zarrfast reads basic selections of
    any step (as NumPy) and raises it where a step must be positive.  An ``IndexError``.
    """


class VindexInvalidSelectionError(IndexingError):
    """A ``vindex`` selection that is neither a coordinate nor a mask selection.

    zarr-python 3.4's ``VindexInvalidSelectionError``, an ``IndexError``.
    """


class CodecError(ZarrfastError):
    """A codec failed to encode or decode."""


class ChunkDecodeError(CodecError):
    """A stored chunk could not be decoded into the expected shape."""


class ChecksumError(ChunkDecodeError):
    """A stored checksum does not match the data."""


class AllocationError(ZarrfastError, MemoryError):
    """Memory for a buffer could not be allocated.

    Also a ``MemoryError``; the message names the node (or chunk key), what the buffer
    was for, its bytes, shape and dtype.
    """


class ChunkAllocationError(ChunkDecodeError, AllocationError):
    """Decoding a chunk needed a buffer larger than the memory available.

    A chunk of huge nominal shape, for example: a [zarrfast.errors.ChunkDecodeError][]
    naming the key as well as an [zarrfast.errors.AllocationError][].
    """


class ConcurrentWriteError(ZarrfastError):
    """Another writer changed a node while this one was updating it.

    Its metadata was replaced between this writer's read and its write, or its directory
    was deleted while a value was written there.  Nothing of this update was stored:
    open the node again and retry.
    """


class LockTimeoutError(ConcurrentWriteError, TimeoutError):
    """A lock serialising updates was not acquired in time: another thread or process held it.

    The lock of a node's metadata updates (an append, a resize, an attribute change) or
    of a partial write of a shard, waited for ``config lock_timeout`` seconds.  Nothing
    of this update was stored.
    """


class LockUnavailableError(ConcurrentWriteError, OSError):
    """The file system refuses the file lock that excludes other processes from an update.

    The ``flock`` of a read-modify-write (NFS mounted ``nolock``, Lustre without
    ``flock``).  Nothing of this update was stored; ``config file_locks`` set to
    ``False`` writes with the threads of this process excluded only.
    """


def add_context(error: BaseException, context: str, message: str | None = None) -> None:
    """Say in ``error`` itself where it happened, then re-raise it with a bare ``raise``.

    The object is kept, so its type, attributes, traceback, ``__cause__``, ``__context__``
    and notes survive, and the constructor of its class, which may take other arguments,
    is not called again.

    ``context`` names the place (``"chunk 'c/0/0'"``).  When the error's message is its
    one string argument, as for zarrfast's own errors, the message becomes ``message``
    (by default ``f"{context}: {error}"``, left as it is when it already starts with
    ``context``), so that ``str(error)`` names the place as zarrfast's messages always
    have.  Otherwise (several arguments, or a ``__str__`` of its own) ``context`` is
    added as a note (``BaseException.add_note``), which a traceback prints under
    the message.
    """
    args = error.args
    if len(args) == 1 and isinstance(args[0], str) and str(error) == args[0]:
        if message is None:
            if args[0].startswith(context):
                return
            message = f"{context}: {args[0]}"
        error.args = (message,)
        if str(error) == message:
            return
        error.args = args  # its __str__ does not show its argument
    if context not in getattr(error, "__notes__", ()):
        error.add_note(context)


# -- zarr-python 3.4's settings: array.read_missing_chunks, allow_unsafe_pickle_decode,
# rectilinear_chunks ----------------------------------------------------------------


class ChunkNotFoundError(ZarrfastError):
    """A read touched a chunk that is not stored while ``read_missing_chunks`` is False
    (zarr-python 3.4's ``zarr.errors.ChunkNotFoundError``)."""


class PickleCodecDisabledError(ZarrfastError):
    """A read would decode chunks with the ``pickle`` codec while the configuration's
    ``array.allow_unsafe_pickle_decode`` is not True (zarr-python 3.4's
    ``zarr.errors.PickleCodecDisabledError``)."""


class RectilinearChunksDisabledError(ZarrfastError):
    """An array of a rectilinear chunk grid is written or read while the configuration's
    ``array.rectilinear_chunks`` is False (zarr-python 3.4's
    ``RectilinearChunksDisabledError``)."""


# -- warnings, under zarr-python's names (``pytest.warns(zarr.errors.ZarrUserWarning)``) ---


class ZarrUserWarning(UserWarning):
    """Something the user asked for works, but probably not as they meant."""


class ZarrFutureWarning(FutureWarning):
    """Behaviour that will change."""


class UnstableSpecificationWarning(ZarrFutureWarning):
    """Data written with a format extension whose specification is not final."""


class ZarrDeprecationWarning(DeprecationWarning):
    """A deprecated name or argument."""


class ZarrRuntimeWarning(RuntimeWarning):
    """A questionable situation met while running."""
