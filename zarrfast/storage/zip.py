"""A store in one zip archive, compatible with zarr-python's ``ZipStore``.

Keys are member names (``"zarr.json"``, ``"c/0/0"``).  Modes are those of
:class:`zipfile.ZipFile`: ``"r"`` reads, ``"w"`` creates (truncating),
``"a"`` appends to an existing archive (or creates one), ``"x"`` creates and
refuses an existing file.  Writing a key again appends a new member; reads see
the latest one (zip archives cannot replace members in place), and deletes are
not supported.  The archive is finalised by :meth:`ZipStore.close` (also on
garbage collection and at interpreter exit); until then its central directory
is not written.

Member names of an archive opened for reading are checked like keys: names
that would leave the archive's root when extracted or used as a path (``..``
segments, absolute paths, backslashes, drive letters; "zip slip") make the
open fail, naming the archive and the member.

One lock serialises every access to the archive, so a store may be shared by
threads.  Byte ranges of a stored (uncompressed) member seek within it.
"""

from __future__ import annotations

import io
import os
import threading
import time
import warnings
import weakref
import zipfile
import zlib
from collections.abc import Hashable, Iterator
from pathlib import Path
from typing import IO, Any, Literal, cast

from zarrfast.errors import InvalidKeyError, ReadOnlyError, ZarrfastError, ZarrUserWarning
from zarrfast.storage.base import (
    ByteRequest,
    Ready,
    Store,
    listing_prefix,
    normalize_byte_range,
    validate_key,
    validate_prefix,
    zarr_python_get,
    zarr_python_value,
)
from zarrfast.storage.errors import (
    ArchiveNotFoundError,
    StoreError,
    UnsafeArchiveMemberError,
    UnsupportedStoreOperationError,
    ValueTooLargeError,
)

__all__ = ["ZipStore"]

_Mode = Literal["r", "w", "a", "x"]
_MODES: tuple[_Mode, ...] = ("r", "w", "a", "x")


class _RawReaderAdapter(io.RawIOBase):
    """A reader with ``read``, ``seek`` and ``tell`` that is not an ``io`` object (an
    obstore ``ReadableFile``), as ``zipfile`` needs it: wrapped in ``io.BufferedReader``
    its reads give ``bytes`` (zarr-python's adapter, the same way)."""

    def __init__(self, fileobj: Any) -> None:
        self._fileobj = fileobj
        self._size: int | None = None

    def _get_size(self) -> int:
        if self._size is None:  # (read-only: the size cannot change)
            pos = self._fileobj.tell()
            self._size = self._fileobj.seek(0, os.SEEK_END)
            self._fileobj.seek(pos)
        return cast(int, self._size)

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, pos: int, whence: int = 0) -> int:
        return self._fileobj.seek(pos, whence)

    def tell(self) -> int:
        return self._fileobj.tell()

    def readinto(self, b: Any) -> int:
        # reads are clamped to what is left: some readers raise on a short read
        wanted = min(len(b), self._get_size() - self._fileobj.tell())
        if wanted <= 0:
            return 0
        data = self._fileobj.read(wanted)
        b[:len(data)] = memoryview(data)
        return len(data)


class _Archive:
    """The open ``ZipFile`` and the lock guarding it, shared by a store and its views."""

    def __init__(self, path: Path | IO[bytes], mode: str, compression: int,
                 allow_zip64: bool, name: str) -> None:
        self.path = path
        self.mode = mode
        self.lock = threading.RLock()
        try:
            # (ZipStore checked that mode is one of _MODES)
            self.zf = zipfile.ZipFile(path, mode=cast(_Mode, mode), compression=compression,
                                      allowZip64=allow_zip64)
        except FileNotFoundError:
            raise ArchiveNotFoundError(f"zip archive {name!r} does not exist") from None
        except FileExistsError:
            raise FileExistsError(
                f"zip archive {name!r} already exists (mode 'x' creates a new one)"
            ) from None
        except zipfile.BadZipFile as e:
            raise StoreError(f"{name!r} is not a readable zip archive: {e}") from None
        except io.UnsupportedOperation as e:  # a file object opened for something else
            raise StoreError(f"cannot open zip archive {name!r} with mode {mode!r}: "
                             f"{e}") from None
        # finalise the central directory even if nobody calls close()
        self._finalizer = weakref.finalize(self, _close_quietly, self.zf, name)

    @property
    def closed(self) -> bool:
        return self.zf.fp is None

    def close(self, name: str) -> None:
        """Close the archive; an error writing its central directory is raised, naming
        ``name`` (only the finaliser of a store nobody closed stays quiet)."""
        with self.lock:
            if self._finalizer.detach() is None:
                return  # closed before
            try:
                self.zf.close()
            except (OSError, ValueError) as e:
                e.add_note(f"closing zip archive {name!r} failed: it may be incomplete")
                raise


def _close_quietly(zf: zipfile.ZipFile, name: str) -> None:
    """Finish the archive of a store nobody closed; a failure (its file object closed
    first, the file gone) cannot be raised here, but is said: the archive is lost."""
    try:
        zf.close()
    except (OSError, ValueError) as e:
        warnings.warn(ZarrUserWarning(
            f"zip archive {name!r} was never closed and cannot be finished now ({e}): it "
            f"is incomplete; close the store (ZipStore.close) before its file"),
            stacklevel=2)


def check_member_name(archive: str, name: str) -> str:
    """The key of member ``name`` (directory entries end in ``/``), or an
    :class:`UnsafeArchiveMemberError` naming ``archive`` and the member."""
    key = name[:-1] if name.endswith("/") and len(name) > 1 else name
    try:
        return validate_key(key)
    except InvalidKeyError as e:
        raise UnsafeArchiveMemberError(
            f"zip archive {archive!r} has an unsafe member name {name!r}: {e}; refusing to "
            f"use it (it could write or read outside the archive's root)"
        ) from None


class ZipStore(Store):
    """A store in one zip archive, compatible with zarr-python's ``ZipStore``.

    Keys are member names (``"zarr.json"``, ``"c/0/0"``).  Writing a key again appends
    a new member, and reads see the latest one (zip archives cannot replace members in
    place); deletes are not supported.  The archive is finalised by ``close`` (also
    when the store is garbage-collected, and at interpreter exit): until then its
    central directory is not written.  One lock serialises every access to the
    archive, so threads may share a store.  Byte ranges of a stored (uncompressed)
    member seek within it.

    The member names of an archive that is opened are checked like keys: a name that
    would leave the archive's root when extracted or used as a path (``..``
    segments, absolute paths, backslashes, drive letters: "zip slip") makes the open
    fail, naming the archive and the member.  An archive opened with mode ``"r"``
    pickles as its path (dask workers open it again); a writable one cannot be pickled.

    Parameters
    ----------
    path : str or os.PathLike or binary file object
        The archive file, or an open binary file object (a file opened with ``open``
        or fsspec, an obstore reader) with ``read``, ``seek`` and ``tell``, as
        zarr-python takes it.  A file object must stay open while the store is used;
        closing the store does not close it.  One that is not an ``io`` object (an
        obstore reader) is read only (mode ``"r"``).  A store on a file object cannot
        be pickled.
    mode : {"r", "w", "a", "x"}, default "r"
        As for ``zipfile.ZipFile``: ``"r"`` reads, ``"w"`` creates (truncating an
        existing file), ``"a"`` appends to an existing archive (or creates one),
        ``"x"`` creates and refuses an existing file.
    read_only : bool, optional
        Refuse writes; ``None`` (the default) means ``mode == "r"``.  A store opened
        with mode ``"r"`` is always read-only (``read_only=False`` is taken, as
        zarr-python takes it, and the store is read-only all the same).
    compression : int, default zipfile.ZIP_STORED
        The ``zipfile`` compression of new members.  ``ZIP_STORED`` (no compression;
        chunks are usually compressed already) lets byte ranges seek without
        decompressing.
    allowZip64 : bool, default True
        Allow archives and members larger than 4 GiB.

    Attributes
    ----------
    path : pathlib.Path or None
        The archive file, absolute; ``None`` for a store on a file object.
    mode : str
        The mode it was opened with.

    Raises
    ------
    zarrfast.storage.errors.ArchiveNotFoundError
        When the archive to read (mode ``"r"``) does not exist.
    FileExistsError
        When mode ``"x"`` finds an existing file.
    zarrfast.storage.errors.StoreError
        When the file is not a readable zip archive.
    zarrfast.storage.errors.UnsafeArchiveMemberError
        When a member name could leave the archive's root.
    ZarrfastError
        When ``mode`` is not one of the four.
    TypeError
        When ``path`` is neither a path nor a file object with ``read``, ``seek`` and
        ``tell``, or a file object that is not an ``io`` object is to be written.

    Examples
    --------
    >>> from zarrfast.storage import ZipStore
    >>> with ZipStore("data.zip", mode="w") as store:
    ...     array = zarrfast.create_array(store, shape=(4,), chunks=(2,), dtype="int32")
    ...     array[:] = np.arange(4)
    >>> store = ZipStore("data.zip")
    >>> store
    ZipStore('zip://data.zip', mode='r', read_only=True)
    >>> list(store.list())
    ['c/0', 'c/1', 'zarr.json']
    >>> zarrfast.open_array(store)[:]
    array([0, 1, 2, 3], dtype=int32)
    >>> store.close()
    """

    supports_deletes = False
    supports_partial_reads = True

    def __init__(
        self,
        path: str | os.PathLike | IO[bytes],
        *,
        mode: str = "r",
        read_only: bool | None = None,
        compression: int = zipfile.ZIP_STORED,
        allowZip64: bool = True,  # noqa: N803 - zarr-python's name
    ) -> None:
        if mode not in _MODES:
            raise ZarrfastError(f"ZipStore mode must be one of {_MODES}, got {mode!r}")
        # mode "r" reads only, whatever read_only says (zarr-python 3.4 takes
        # read_only=False with mode "r" too: its writes then fail in zipfile)
        read_only = mode == "r" if read_only is None else bool(read_only) or mode == "r"
        super().__init__(read_only=read_only)
        self.path: Path | None = None
        self._shown_path: Path | None = None
        self._fileobj: IO[bytes] | None = None
        source: Path | IO[bytes]
        if isinstance(path, (str, os.PathLike)):
            source = self.path = Path(path).expanduser().absolute()
            self._shown_path = Path(path)  # as given (relative too), for str(): as zarr-python
        else:
            source = self._fileobj = _file_object(path, mode)
        self.mode = mode
        self.compression = compression
        self.allowZip64 = allowZip64
        self._archive = _Archive(source, mode, compression, allowZip64, self._name)
        try:
            self._check_members()
        except BaseException:
            self._archive.close(self._name)
            raise

    @classmethod
    def _view(cls, other: ZipStore, read_only: bool) -> ZipStore:
        view = cls.__new__(cls)
        Store.__init__(view, read_only=read_only)
        view.path, view.mode = other.path, other.mode
        view._fileobj = other._fileobj
        view._shown_path = other._shown_path
        view.compression, view.allowZip64 = other.compression, other.allowZip64
        view._archive = other._archive
        return view

    def _lock_scope(self) -> tuple[str, int]:
        return ("zip", id(self._archive))  # views made by with_read_only share the archive

    def with_read_only(self, read_only: bool = True) -> ZipStore:
        """A store of the same archive with another read-only flag; see ``Store.with_read_only``.

        Parameters
        ----------
        read_only : bool, default True
            The new store's flag.

        Returns
        -------
        ZipStore
            A view sharing this store's open archive and lock; closing either closes
            the archive for both.

        Raises
        ------
        ReadOnlyError
            When a store opened with mode ``"r"`` is asked to be writable.
        """
        if not read_only and self.mode == "r":
            raise ReadOnlyError(f"{self!r} was opened with mode 'r'; it cannot be made writable")
        return ZipStore._view(self, read_only)

    def __str__(self) -> str:
        """``zip://`` and the archive's path as given (or the file object's repr), as
        zarr-python's."""
        if self.path is None:
            return f"zip://{self._fileobj!r}"
        return f"zip://{os.fspath(self._shown_path or self.path)}"

    def __repr__(self) -> str:
        ro = ", read_only=True" if self.read_only else ""
        return f"ZipStore('{self}', mode={self.mode!r}{ro})"

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, ZipStore) and other._archive is self._archive
                and other.read_only == self.read_only)

    def __hash__(self) -> int:
        return hash((ZipStore, id(self._archive), self.read_only))

    def __reduce__(self):
        """An archive opened with mode 'r' pickles as its path (dask workers reopen it);
        a writable one cannot be shared: its directory is only written on close."""
        if self.path is None:
            raise TypeError(f"{self!r} cannot be pickled: it reads an open file object; "
                            f"make the store from the archive's path instead")
        if self.mode != "r":
            raise TypeError(f"{self!r} cannot be pickled: it is open for writing; close it "
                            f"and pickle ZipStore(path, mode='r') instead")
        return (_reopen, (os.fspath(self.path), self.compression, self.allowZip64))

    # -- members -------------------------------------------------------------------
    @property
    def _name(self) -> str:
        if self.path is None:
            return repr(self._fileobj)
        return os.fspath(self.path)

    def _zf(self) -> zipfile.ZipFile:
        if self._archive.closed:
            raise StoreError(f"zip archive {self._name!r} is closed")
        return self._archive.zf

    def _check_members(self) -> None:
        with self._archive.lock:
            for info in self._zf().infolist():
                check_member_name(self._name, info.filename)

    def _info(self, key: str) -> zipfile.ZipInfo | None:
        validate_key(key)
        return self._zf().NameToInfo.get(key)  # the latest member of that name

    # -- reads ---------------------------------------------------------------------
    def get(self, key: str, byte_range: ByteRequest | None = None, *,
            prototype: Any = None) -> bytes | None:
        """Read the latest member named ``key``, or some bytes of it; see ``Store.get``.

        Parameters
        ----------
        key : str
            The key.
        byte_range : RangeByteRequest or OffsetByteRequest or SuffixByteRequest, optional
            The bytes to read; ``None`` (the default) reads the whole member.  A stored
            member seeks to them; a compressed one is decompressed up to them.
        prototype : BufferPrototype, optional
            zarr-python's buffer prototype, for code written for its stores (``await
            store.get(key, prototype=...)``): then the result is a ``Ready`` to await,
            of a ``Buffer`` of the prototype or ``None``.

        Returns
        -------
        bytes or None
            The bytes, or ``None`` when the archive has no such member (with
            ``prototype``: a ``Ready`` of them).

        Raises
        ------
        InvalidKeyError
            When ``key`` is not a valid key.
        zarrfast.storage.errors.StoreError
            When the member cannot be read (a corrupt archive, an encrypted member, an
            unknown compression), or the archive is closed.
        """
        if prototype is not None:
            return zarr_python_get(self, key, byte_range, prototype)  # type: ignore[return-value]
        with self._archive.lock:
            info = self._info(key)
            if info is None:
                return None
            try:
                with self._zf().open(info) as f:
                    if byte_range is None:
                        return f.read()
                    start, stop = normalize_byte_range(byte_range, info.file_size)
                    if stop <= start:
                        return b""
                    f.seek(start)
                    return f.read(stop - start)
            except (zipfile.BadZipFile, OSError, EOFError, zlib.error, RuntimeError,
                    NotImplementedError) as e:  # corrupt, encrypted, unknown compression
                raise StoreError(
                    f"cannot read member {key!r} of zip archive {self._name!r}: "
                    f"{type(e).__name__}: {e}") from e

    def get_limited(self, key: str, limit: int) -> bytes | None:
        """Read the member ``key``, refusing one larger than ``limit`` bytes unread.

        A member whose declared or stored size is above ``limit`` is refused before any
        of it is decompressed (an archive bomb); see ``Store.get_limited``.

        Parameters
        ----------
        key : str
            The key.
        limit : int
            The largest size, in bytes, of a value that is returned.

        Returns
        -------
        bytes or None
            The value, or ``None`` when the archive has no such member.

        Raises
        ------
        zarrfast.storage.errors.ValueTooLargeError
            When the member declares or stores more than ``limit`` bytes.
        """
        with self._archive.lock:
            info = self._info(key)
        if info is not None and max(info.file_size, info.compress_size) > limit:
            raise ValueTooLargeError(
                f"member {key!r} of zip archive {self._name!r} declares {info.file_size} "
                f"bytes ({info.compress_size} stored), more than any valid value there "
                f"({limit} bytes at most); not read")
        return self.get(key)

    def exists(self, key: str) -> bool:
        """Whether the archive has a member named ``key``; see ``Store.exists``.

        Parameters
        ----------
        key : str
            The key.

        Returns
        -------
        bool
            ``True`` when there is such a member.

        Raises
        ------
        InvalidKeyError
            When ``key`` is not a valid key.
        zarrfast.storage.errors.StoreError
            When the archive is closed.
        """
        with self._archive.lock:
            return self._info(key) is not None

    def getsize(self, key: str) -> int:
        """The uncompressed size of the latest member named ``key``; see ``Store.getsize``.

        Parameters
        ----------
        key : str
            The key.

        Returns
        -------
        int
            The member's size in bytes, as its header declares it.

        Raises
        ------
        FileNotFoundError
            When the archive has no such member.
        """
        with self._archive.lock:
            info = self._info(key)
        if info is None:
            raise FileNotFoundError(f"key {key!r} not found in zip archive {self._name!r}")
        return info.file_size

    def version(self, key: str) -> Hashable | None:
        """A token that changes whenever ``key`` is written again; see ``Store.version``.

        Parameters
        ----------
        key : str
            The key.

        Returns
        -------
        tuple or None
            The archive and the offset of the latest member of that name (a new write
            is a new member), or ``None`` when there is none.
        """
        with self._archive.lock:
            info = self._info(key)
            return None if info is None else (id(self._archive), info.header_offset)

    # -- writes --------------------------------------------------------------------
    def set(self, key: str, value: bytes | bytearray | memoryview) -> None:
        """Append a member named ``key`` holding ``value``; see ``Store.set``.

        A key written before keeps its old member in the archive (reads see the new
        one); the archive grows with every rewrite, and ``zipfile`` warns
        (``UserWarning: Duplicate name: ...``), as with zarr-python.

        Parameters
        ----------
        key : str
            The key.
        value : bytes-like
            The value: any object with the buffer protocol.  It is copied.  A
            zarr-python ``Buffer`` is stored too, and then the result is a ``Ready`` to
            await, as zarr-python's ``await store.set(key, buffer)``.

        Raises
        ------
        ReadOnlyError
            When the store is read-only.
        zarrfast.storage.errors.UnsafeArchiveMemberError
            When ``key`` is not a valid key (it would be an unsafe member name).
        zarrfast.storage.errors.StoreError
            When the archive is closed.
        TypeError
            When ``value`` is not a buffer.
        """
        self._check_writable(key)
        try:
            validate_key(key)
        except InvalidKeyError as e:
            raise UnsafeArchiveMemberError(
                f"cannot write key {key!r} to zip archive {self._name!r}: {e}") from None
        try:
            view = memoryview(value)  # TypeError for str, int, None, lists
        except TypeError:
            plain = zarr_python_value(value)  # zarr-python's Buffer: its style of call
            if plain is None:
                raise
            self.set(key, plain)
            return Ready()  # type: ignore[return-value]
        data = view.tobytes()
        info = zipfile.ZipInfo(filename=key, date_time=time.localtime(time.time())[:6])
        info.compress_type = self.compression
        info.external_attr = 0o644 << 16
        with self._archive.lock:
            zf = self._zf()
            # a key written again appends a member of the same name (reads see the last):
            # zipfile warns "Duplicate name: ...", as with zarr-python, since the archive
            # keeps the old member and grows
            zf.writestr(info, data)

    def delete(self, key: str) -> None:
        """Refuse to delete ``key``: zip archives do not support deletes.

        Deleting a missing key does nothing, as for every store.

        Parameters
        ----------
        key : str
            The key.

        Raises
        ------
        zarrfast.storage.errors.UnsupportedStoreOperationError
            When the key exists.
        ReadOnlyError
            When the store is read-only.
        """
        self._check_writable(key)
        if self.exists(key):
            raise UnsupportedStoreOperationError(
                f"cannot delete key {key!r}: zip archive {self._name!r} does not support "
                f"deletes (ZipStore.supports_deletes is False); write a new archive instead")

    def delete_dir(self, prefix: str) -> None:
        """Refuse to delete the keys below ``prefix``, as ``delete`` refuses one.

        Nothing to delete below ``prefix`` is no error.

        Parameters
        ----------
        prefix : str
            A node's path, with or without a trailing ``/``; ``""`` is the root.

        Raises
        ------
        zarrfast.storage.errors.UnsupportedStoreOperationError
            When a key lies below ``prefix``.
        ReadOnlyError
            When the store is read-only.
        """
        self._check_writable(prefix or "<root>")
        validate_prefix(prefix)
        p = prefix[:-1] if prefix.endswith("/") else prefix
        if not self.is_empty(p + "/" if p else ""):
            raise UnsupportedStoreOperationError(
                f"cannot delete {p or '<root>'!r}: zip archive {self._name!r} does not "
                f"support deletes (ZipStore.supports_deletes is False)")

    # -- listing -------------------------------------------------------------------
    def list(self) -> Iterator[str]:
        """List every member name (once each, directory entries left out), sorted.

        See ``Store.list``.

        Returns
        -------
        Iterator[str]
            The keys; the iterator also works with ``async for``.

        Raises
        ------
        zarrfast.storage.errors.StoreError
            When the archive is closed.
        """
        with self._archive.lock:
            names = [n for n in self._zf().NameToInfo if not n.endswith("/")]
        return iter(sorted(names))

    def list_prefix(self, prefix: str) -> Iterator[str]:
        """List the member names that start with ``prefix``, sorted; see ``Store.list_prefix``.

        Parameters
        ----------
        prefix : str
            The start of the keys (``""``: every key; ``"/"``: none).

        Returns
        -------
        Iterator[str]
            The keys; the iterator also works with ``async for``.

        Raises
        ------
        InvalidKeyError
            When ``prefix`` is not ``""``, ``"/"`` or a valid key (optionally followed
            by ``/``).
        """
        if not listing_prefix(prefix):
            return iter(())
        return iter([k for k in self.list() if k.startswith(prefix)])

    # -- closing -------------------------------------------------------------------
    def close(self) -> None:
        """Write the central directory (modes "w", "a", "x") and close the file.

        Views made with ``with_read_only`` share the archive and close it too.  Closing
        again does nothing; leaving a ``with`` block closes the store.  A file object
        the store was made on is left open.

        Raises
        ------
        OSError or ValueError
            When the central directory cannot be written (the file is gone, or a file
            object the store was made on was closed): the archive may be incomplete.
        """
        self._archive.close(self._name)

    @property
    def closed(self) -> bool:
        """Whether the archive is closed (every read or write then raises ``StoreError``)."""
        return self._archive.closed

    def __enter__(self) -> ZipStore:
        return self


def _file_object(fileobj: Any, mode: str) -> IO[bytes]:
    """The file object ``zipfile`` reads: ``fileobj`` itself when it is an ``io`` object,
    else (an obstore reader) ``fileobj`` adapted, read only."""
    if isinstance(fileobj, io.IOBase):
        if mode != "r" and not fileobj.writable():
            # (zipfile would only fail when the store is closed, its central directory
            # then lost)
            raise TypeError(f"ZipStore: cannot write a zip archive (mode={mode!r}) to "
                            f"{fileobj!r}: it is not open for writing")
        return cast(IO[bytes], fileobj)
    if not all(callable(getattr(fileobj, attr, None)) for attr in ("read", "seek", "tell")):
        raise TypeError(f"ZipStore needs a path or an open binary file object supporting "
                        f"read/seek/tell, got {type(fileobj).__name__}")
    if mode != "r":
        raise TypeError(f"ZipStore: a file object that is not an io.IOBase instance "
                        f"({type(fileobj).__name__}) can only be read (mode='r', got "
                        f"mode={mode!r})")
    return cast(IO[bytes], io.BufferedReader(_RawReaderAdapter(fileobj)))


def _reopen(path: str, compression: int, allow_zip64: bool) -> ZipStore:
    return ZipStore(path, mode="r", compression=compression, allowZip64=allow_zip64)
