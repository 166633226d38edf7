"""A store backed by a directory of the local file system.

Keys map to files below ``root`` (``"a/c/0/1"`` -> ``root/a/c/0/1``).  Writes
go to a temporary file in the target's directory and are renamed into place,
so a reader never sees a half-written value and a crash leaves the old value
(or nothing).  Byte ranges are served with ``os.pread``.

No read or write leaves the root.  Keys are validated (see
:func:`~zarrfast.storage.base.validate_key`), and every file is opened relative
to an open descriptor of the root without following symbolic links, in one step
(:func:`zarrfast.kernels.open_nolinks`: ``openat2`` on Linux).  A path with a
link on it takes a slower way: it is resolved, and used only when it stays
inside the root (then opened again, link-free, relative to the root); a link
that leads outside is refused naming the key.  Writes and deletes work on the
open descriptor of the key's directory (``openat``/``renameat``/``unlinkat``),
so a directory swapped for a link between the check and the write cannot
redirect them.

That needs ``dir_fd`` (``openat`` and its kin), ``O_NOFOLLOW`` and ``O_DIRECTORY``:
Linux, macOS and the BSDs have them.  Where the platform lacks any of them (Windows)
the store takes its portable way, chosen once at import from those facts
(:data:`DIR_FD`): every path is resolved with ``realpath`` and used only when it stays
inside the root (a link that leads outside is refused naming the key, as above), then
opened by that link-free path, with ``O_NOFOLLOW`` where the platform has it; writes
are a temporary file in the key's directory and ``os.replace``; deletes never follow a
link.  What the portable way cannot promise is the step from check to use: a directory
swapped for a link between the two can redirect that one operation.  The batched file
kernels (which open files relative to open directories) are not used then.

Updates of an array's metadata (append, resize, attributes) lock the file
``.zarrfast.lock`` in the array's directory with ``flock`` (POSIX), excluding other
processes as well as threads (:meth:`LocalStore.node_lock`); the file exists while the
lock is held (one left by a killed process is empty and harmless).  It is not a key:
listings skip it, as they skip the ``.zarrfast-tmp-*`` files of writes in progress.

Deleting a node while another thread or process writes below it: the delete retries
while values keep appearing (then raises :class:`~zarrfast.errors.ConcurrentWriteError`
naming the node), and a write whose directory disappears under it raises
``ConcurrentWriteError`` naming the key; a write that starts after the delete recreates
its directories (a key below a node that no longer exists, which no listing of
nodes shows).
"""

from __future__ import annotations

import contextlib
import copy
import copyreg
import dataclasses
import errno
import itertools
import os
import shutil
import stat
import sys
import time
import uuid
from collections.abc import Hashable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from zarrfast import config
from zarrfast.errors import (
    AllocationError,
    ConcurrentWriteError,
    InvalidKeyError,
    LockUnavailableError,
    ZarrfastError,
)
from zarrfast.kernels.buffers import human_bytes
from zarrfast.storage import locks as _locks
from zarrfast.storage.base import (
    ByteRequest,
    RangeReader,
    Ready,
    Store,
    StoreCapabilities,
    listing_prefix,
    many_requests,
    normalize_byte_range,
    validate_key,
    validate_keys,
    validate_prefix,
    zarr_python_get,
    zarr_python_value,
)
from zarrfast.storage.errors import (
    SpecialFileError,
    StorePermissionError,
    StoreWriteError,
    ValueTooLargeError,
)

__all__ = ["LocalStore"]

_TMP_MARK = ".zarrfast-tmp-"
#: bytes per ``os.write`` of a value at most, as the file kernels write
#: (``ZF_WRITE_PIECE`` in ``_fileio.pyx``: a larger call has the page cache take huge
#: folios, which a VM with free page reporting faults in again from its host)
_WRITE_PIECE = 131072
_tmp_counter = itertools.count()
_tmp_prefix: str  # (_new_tmp_prefix sets it, in each process)
_LOCK_NAME = _locks.LOCK_NAME
#: the lock files of values read, changed and written back (a shard's partial writes)
#: while the value does not exist yet
_VALUE_LOCK = _LOCK_NAME + "."
#: how many times ``delete_dir`` removes a tree again when values keep appearing in it
_DELETE_ATTEMPTS = 20


def _hidden(name: str) -> bool:
    """Files of the store's own that are not keys: temporary files, lock files."""
    return name.startswith(_TMP_MARK) or name == _LOCK_NAME or name.startswith(_VALUE_LOCK)


def _unique() -> str:
    """A temporary-file suffix unique across processes, threads and calls (cheaper than
    a UUID): a random per-process prefix (fresh after fork), then a counter."""
    return f"{_tmp_prefix}{next(_tmp_counter)}"


def _tmp_names(n: int) -> list[bytes]:
    """The temporary file names (file-system encoded) of a batch of ``n`` files for the
    file kernels: one :func:`_unique` name ``n`` times.  The kernels write the files one
    after the other, each renamed into place (or removed) before the next is made, so
    the name is free again for the next file, and no other call or process has it; a
    file the kernel does not write goes through ``set`` and its own name.  (A name per
    file cost 0.28 us each with the GIL held: 1.1 ms of a write of 4096 small files.)"""
    return [os.fsencode(f"{_TMP_MARK}{_unique()}")] * n


def _new_tmp_prefix() -> None:
    global _tmp_prefix
    _tmp_prefix = f"{uuid.uuid4().hex[:16]}-"


_new_tmp_prefix()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_tmp_prefix)


_HAS_PREADV = hasattr(os, "preadv")

#: Whether this platform opens files relative to an open directory without following
#: links (``dir_fd`` for open/stat/mkdir/unlink/rename/rmdir, ``listdir`` of a
#: descriptor, ``stat`` without following, ``O_NOFOLLOW``, ``O_DIRECTORY``): Linux,
#: macOS, the BSDs.  Where not (Windows), :class:`LocalStore` takes its portable way.
DIR_FD = bool(
    {os.open, os.stat, os.mkdir, os.unlink, os.rename, os.rmdir} <= os.supports_dir_fd
    and os.stat in os.supports_follow_symlinks
    and os.listdir in os.supports_fd
    and hasattr(os, "O_NOFOLLOW") and hasattr(os, "O_DIRECTORY"))
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR,
          "a character device"), (stat.S_ISBLK, "a block device"))


def _special_file(key: str, path: str, mode: int) -> SpecialFileError:
    what = next((name for test, name in _KINDS if test(mode)), "not a regular file")
    return SpecialFileError(f"key {key!r}: {path!r} is {what}, not a file holding a value; "
                            f"not read")


#: open a directory to resolve paths against (``O_PATH`` where there is one)
_O_SEARCH = (getattr(os, "O_PATH", os.O_RDONLY) | getattr(os, "O_DIRECTORY", 0)
             | getattr(os, "O_CLOEXEC", 0))
#: open a directory to write in (``fsync`` needs a readable descriptor)
_O_DIR = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
#: open any file to look at it (``fstat``), without blocking on a FIFO
_O_LOOK = getattr(os, "O_PATH", os.O_RDONLY | _O_NONBLOCK) | getattr(os, "O_CLOEXEC", 0)
#: what ``os.fsencode`` encodes with (its call is a Python function's)
_FS_ENCODING, _FS_ERRORS = sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()
_O_READ = os.O_RDONLY | _O_NONBLOCK | getattr(os, "O_BINARY", 0)
_LINKED = (errno.ELOOP, errno.EXDEV)
#: how long a read trusts the open root before checking its path again
_RECHECK_SECONDS = 0.1


def _open_nolinks(dirfd: int, path: bytes, flags: int, mode: int) -> int:
    """:func:`zarrfast.kernels.open_nolinks` (bound on first use)."""
    global _open_nolinks
    from zarrfast.kernels import open_nolinks

    _open_nolinks = open_nolinks
    return open_nolinks(dirfd, path, flags, mode)


#: keys :func:`_check_key` found valid (at most ``_CHECKED_KEYS``)
_checked: dict[str, None] = {}
_CHECKED_KEYS = 4096


def _check_key(key: str) -> None:
    """:func:`~zarrfast.storage.base.validate_key`, remembered for the last few
    thousand valid keys: the reads of small boxes open the same few files again and
    again, and the check cost a third of what the store spends opening one."""
    if type(key) is not str:
        validate_key(key)  # (a str subclass is checked every time, never remembered)
        return
    if key in _checked:
        return
    validate_key(key)
    if len(_checked) >= _CHECKED_KEYS:
        _checked.clear()  # (atomic, as the store below: threads may share the dict)
    _checked[key] = None


class _Root:
    """An open descriptor of a store's root directory (what every file is opened
    relative to), kept while the store is used; closed with the last reference.
    Without ``dir_fd`` (``opened=False``) no descriptor: ``fd`` is -1, and only which
    directory it is (device, inode) is kept."""

    __slots__ = ("fd", "dev", "ino", "checked")

    def __init__(self, path: str, opened: bool = True) -> None:
        if not opened:
            st = os.stat(path)
            if not stat.S_ISDIR(st.st_mode):
                raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), path)
            self.fd, self.dev, self.ino = -1, st.st_dev, st.st_ino
            self.checked = time.monotonic()
            return
        try:
            fd = os.open(path, _O_DIR)
        except PermissionError:  # a directory we may search but not list
            fd = os.open(path, _O_SEARCH)
        st = os.fstat(fd)
        self.fd, self.dev, self.ino = fd, st.st_dev, st.st_ino
        self.checked = time.monotonic()

    def stale(self, path: str, within: float) -> bool:
        """Whether ``path`` is no longer this directory (removed, moved or replaced);
        not looked at again when it was less than ``within`` seconds ago."""
        now = time.monotonic()
        if now - self.checked < within:
            return False
        try:
            st = os.stat(path)
        except OSError:
            return True
        if (st.st_dev, st.st_ino) != (self.dev, self.ino):
            return True
        self.checked = now
        return False

    def __del__(self) -> None:
        try:
            if self.fd >= 0:
                os.close(self.fd)
        except Exception:  # pragma: no cover - interpreter shutdown
            pass


class LocalStore(Store):
    """A store in a directory of the local file system.

    Keys map to files below ``root`` (``"a/c/0/1"`` is ``root/a/c/0/1``).  A write goes
    to a temporary file in the key's directory, renamed over the key, so a reader never
    sees a half-written value and a crash leaves the old value (or nothing).  No read
    or write leaves the root: keys are validated, files are opened relative to the
    root without following symbolic links, and a link on a key's path is followed
    only when it stays inside the root.  Listings skip the lock files
    (``.zarrfast.lock``) and the temporary files of writes in progress.  Updates of a
    node's metadata lock out other processes too (``flock``, POSIX), unless
    ``config file_locks`` is off.

    Parameters
    ----------
    root : str or os.PathLike
        The directory, absolute or relative to the working directory (``file://``
        URLs are accepted).  Created on the first write if it does not exist.
    read_only : bool, default False
        Refuse writes and deletes (``ReadOnlyError``).
    fsync : bool, default False
        Flush every written file (and its directory entry) to disk before returning,
        for durability across power loss.

    Attributes
    ----------
    root : pathlib.Path
        The directory, absolute.
    fsync : bool
        Whether writes are flushed to disk.

    Examples
    --------
    >>> store = zarrfast.LocalStore("data.zarr")
    >>> store
    LocalStore('file://data.zarr')
    >>> array = zarrfast.create_array(store, shape=(4,), chunks=(2,), dtype="int32")
    >>> array[:] = np.arange(4)
    >>> import os
    >>> sorted(os.listdir("data.zarr"))
    ['c', 'zarr.json']
    >>> list(store.list())
    ['c/0', 'c/1', 'zarr.json']
    >>> zarrfast.open_array(zarrfast.LocalStore("data.zarr", read_only=True))[:]
    array([0, 1, 2, 3], dtype=int32)
    """

    supports_partial_reads = True
    #: ``flock`` on a lock file in the node's directory (POSIX)
    @property
    def interprocess_locks(self) -> bool:  # type: ignore[override]
        """``flock`` on files (POSIX), unless ``config file_locks`` is ``False``."""
        return _locks.HAVE_FLOCK and bool(config.get("file_locks"))

    #: files opened relative to open directories (:data:`DIR_FD`), else the portable way
    #: (see the module's docstring); set on the class to force the portable way (tests)
    _dir_fd: bool = DIR_FD

    def __init__(self, root: str | os.PathLike, *, read_only: bool = False, fsync: bool = False):
        super().__init__(read_only=read_only)
        if isinstance(root, str) and root.startswith("file://"):
            root = root[len("file://"):]
        self.root = Path(root).expanduser().absolute()
        self._shown_root = Path(root)  # as given (relative too), for str(): as zarr-python
        self._root_str = os.fspath(self.root)
        self.fsync = bool(fsync)
        self._fast_get_into: bool | None = None  # set: overrides the property
        self._root: _Root | None = None  # the open root, once a file was opened

    def __getstate__(self) -> dict:
        state = super().__getstate__()
        state["_root"] = None  # a descriptor: opened again where it is needed
        return state

    def __str__(self) -> str:
        """``file://`` and the root as given (``file://data/x.zarr``), as zarr-python's."""
        return f"file://{getattr(self, '_shown_root', self.root).as_posix()}"

    def __repr__(self) -> str:
        return f"LocalStore('{self}'{', read_only=True' if self.read_only else ''})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, LocalStore)
            and other._root_str == self._root_str
            and other.read_only == self.read_only
        )

    def __hash__(self) -> int:
        return hash((LocalStore, self._root_str, self.read_only))

    def __reduce__(self):
        if type(self) is not LocalStore:  # a subclass: its class and its own state
            return (copyreg.__newobj__, (type(self),), self.__getstate__())
        return (_rebuild, (self._root_str, self.read_only, self.fsync))

    def with_read_only(self, read_only: bool = True) -> LocalStore:
        """A store of the same directory with another read-only flag; see ``Store.with_read_only``.

        Parameters
        ----------
        read_only : bool, default True
            The new store's flag.

        Returns
        -------
        LocalStore
            A copy of this store (of the same class: a subclass's methods stay) with
            that flag.

        Examples
        --------
        >>> zarrfast.LocalStore("data.zarr").with_read_only()
        LocalStore('file://data.zarr', read_only=True)
        """
        new = copy.copy(self)
        new._read_only = bool(read_only)
        new._shown_root = self._shown_root  # (a pickled copy shows the absolute root)
        return new

    def _lock_scope(self) -> tuple[str, str]:
        # the root resolved (links, ``..``; case on Windows): every spelling of one
        # directory shares this process's locks (resolved once: a lock costs no lstat)
        scope = self.__dict__.get("_scope")
        if scope is None:
            scope = self._scope = ("local", os.path.normcase(os.path.realpath(self._root_str)))
        return scope

    def _lock_interprocess(self, path: str, deadline: float, timed_out: Any) -> Any:
        """``flock`` on ``.zarrfast.lock`` in the node's directory (made for the update,
        removed after it).  Nothing is locked when the directory does not exist: the node
        is gone, as the caller then finds."""
        key = f"{path}/{_LOCK_NAME}" if path else _LOCK_NAME
        with self._flock_errors("node", path or "/"):
            if self._dir_fd:  # the directory opened link-free, the file made in it
                dfd = self._open_dir(path, key, create=False)
                if dfd is None:
                    return None
                return _locks.flock_file(_LOCK_NAME, deadline, timed_out, dir_fd=dfd)
            lock_path = self._path(key)
            self._inside(key, key)  # never a lock file outside the root
            return _locks.flock_file(lock_path, deadline, timed_out)

    def _lock_value_interprocess(self, key: str, deadline: float, timed_out: Any) -> Any:
        """``flock`` on the value's own file (:func:`~zarrfast.storage.locks.flock_value`;
        while it is missing, on ``.zarrfast.lock.NAME`` next to it, made and removed by
        its creators, never a key), its directory opened link-free and made first (its
        write makes it anyway).  The portable way (no ``dir_fd``: Windows, which has no
        ``flock`` either; or forced) locks ``.zarrfast.lock.NAME`` by path for every
        write."""
        self._check_writable(key)
        parent, _, name = key.rpartition("/")
        if not self._dir_fd:
            lock_key = f"{parent}/{_VALUE_LOCK}{name}" if parent else f"{_VALUE_LOCK}{name}"
            lock_path = self._path(lock_key)
            self._handle(create=True, key=key)
            self._inside(lock_key, key)  # never a lock file (nor its directory) outside
            if parent:
                _makedirs(os.path.dirname(lock_path), key, lock_path)
            with self._flock_errors("key", key):
                return _locks.flock_file(lock_path, deadline, timed_out)
        dfd = self._open_dir(parent, key, create=True)
        assert dfd is not None
        with self._flock_errors("key", key):
            try:
                return _locks.flock_value(dfd, name, deadline, timed_out,
                                          create_lock=f"{_VALUE_LOCK}{name}")
            except FileNotFoundError:  # its directory removed while this waited
                raise _removed_under(self, key, self._path(parent) if parent
                                     else self._root_str) from None
            except _locks.NotAFile as e:
                path = self._path(key)
                if stat.S_ISDIR(e.mode):
                    raise ZarrfastError(f"cannot write key {key!r}: {path!r} is a "
                                        f"directory") from None
                raise _special_file(key, path, e.mode) from None

    @contextlib.contextmanager
    def _flock_errors(self, what: str, name: str) -> Iterator[None]:
        """A file system that refuses ``flock``: :class:`LockUnavailableError` naming
        the node or key, and what to do."""
        try:
            yield
        except OSError as e:
            if isinstance(e, BlockingIOError) or e.errno not in _locks.NO_FLOCK:
                raise
            raise LockUnavailableError(
                f"cannot lock {what} {name!r} in {self!r} against other processes: the file "
                f"system refuses flock ({e.strerror}); nothing was written. With config "
                f"file_locks=False (ZARRFAST_FILE_LOCKS=0) the threads of this process are "
                f"still excluded: then write from one process at a time") from e

    def _path(self, key: str) -> str:
        validate_key(key)
        return self._root_str + os.sep + (key if os.sep == "/" else key.replace("/", os.sep))

    # -- reads ------------------------------------------------------------
    def get(self, key: str, byte_range: ByteRequest | None = None, *,
            prototype: Any = None) -> bytes | None:
        """Read the file of ``key``, or some bytes of it (``pread``); see ``Store.get``.

        Parameters
        ----------
        key : str
            The key.
        byte_range : RangeByteRequest or OffsetByteRequest or SuffixByteRequest, optional
            The bytes to read; ``None`` (the default) reads the whole file.
        prototype : BufferPrototype, optional
            zarr-python's buffer prototype, for code written for its stores (``await
            store.get(key, prototype=...)``): then the result is a ``Ready`` to await,
            of a ``Buffer`` of the prototype or ``None``.

        Returns
        -------
        bytes or None
            The bytes, or ``None`` when there is no file (a directory is no value); with
            ``prototype``, a ``Ready`` of them.

        Raises
        ------
        InvalidKeyError
            When ``key`` is not a valid key, or a symbolic link on its path leads
            outside the root.
        zarrfast.storage.errors.SpecialFileError
            When the key is a FIFO, a socket or a device (never read).
        zarrfast.errors.AllocationError
            When there is no memory for the value.
        """
        if prototype is not None:
            return zarr_python_get(self, key, byte_range, prototype)  # type: ignore[return-value]
        return self._read(key, byte_range, None)

    def get_limited(self, key: str, limit: int) -> bytes | None:
        """Read the file of ``key``, refusing one larger than ``limit`` bytes unread.

        The file's size is checked before any of it is read (a sparse multi-GiB file
        costs an ``fstat``); see ``Store.get_limited``.  A subclass's own ``get`` is
        honoured (then the value is refused once read).

        Parameters
        ----------
        key : str
            The key.
        limit : int
            The largest size, in bytes, of a value that is returned.

        Returns
        -------
        bytes or None
            The value, or ``None`` when there is no file.

        Raises
        ------
        zarrfast.storage.errors.ValueTooLargeError
            When the file holds more than ``limit`` bytes; the message names the key
            and both sizes.
        """
        if type(self).get is not LocalStore.get:
            return super().get_limited(key, limit)
        return self._read(key, None, limit)

    # -- opening files inside the root ------------------------------------
    def _handle(self, *, create: bool = False, key: str = "") -> _Root | None:
        """The open root (made first with ``create``); ``None`` when it does not exist."""
        h = self._root
        if h is None:
            try:
                h = _Root(self._root_str, self._dir_fd)
            except (FileNotFoundError, NotADirectoryError):
                if not create:
                    return None
                _makedirs(self._root_str, key, self._root_str)
                h = _Root(self._root_str, self._dir_fd)
            self._root = h
        return h

    def _inside(self, rel: str, key: str) -> bytes:
        """The link-free path, relative to the root, that ``rel`` (a path with a
        symbolic link on it) resolves to; refused naming ``key`` when it leaves the root."""
        real_root, real = self._resolve(rel, key)
        return os.fsencode(real[len(real_root.rstrip(os.sep)) + 1:])

    def _resolve(self, rel: str, key: str) -> tuple[str, str]:
        """The root and ``rel`` below it, both resolved (``realpath``: no link, no
        ``..``); refused naming ``key`` when ``rel`` leaves the root."""
        real_root = os.path.realpath(self._root_str)
        if not rel:
            return real_root, real_root
        try:
            real = os.path.realpath(self._root_str + os.sep + rel.replace("/", os.sep))
        except OSError as e:  # a link replaced while it was being resolved
            raise InvalidKeyError(
                f"key {key!r}: a symbolic link on its path changed while it was resolved "
                f"({e.strerror}); refused") from None
        if not real.startswith(real_root.rstrip(os.sep) + os.sep):
            raise InvalidKeyError(
                f"key {key!r} resolves to {real!r}, outside the store root {real_root!r} "
                f"(through a symbolic link); refused")
        return real_root, real

    def _real_path(self, rel: str, key: str) -> str:
        """The portable way's path of ``rel``: resolved, inside the root (else refused
        naming ``key``)."""
        return self._resolve(rel, key)[1]

    def _open(self, rel: str, flags: int, key: str, mode: int = 0o666) -> int:
        """``rel`` (a key or one of its directories) opened relative to the open root
        without following links; a path with a link on it is resolved and opened
        only when it stays inside the root (:meth:`_inside`).  A root that was
        removed, moved or replaced since it was opened is opened again: noticed on a
        miss at once, and on a hit within ``_RECHECK_SECONDS`` (one ``stat`` of the
        root's path then, not one per read)."""
        h = self._handle()
        if h is not None and h.stale(self._root_str, _RECHECK_SECONDS):
            self._root = None  # removed, moved or replaced: open the path again
            h = self._handle()
        if h is None:
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), self._root_str)
        try:
            return self._open_at(h, rel, flags, key, mode)
        except (FileNotFoundError, NotADirectoryError):
            if not h.stale(self._root_str, 0.0):
                raise
            self._root = None  # a miss in a root that is gone: look in the new one
            h = self._handle()
            if h is None:
                raise
            return self._open_at(h, rel, flags, key, mode)

    def _open_at(self, h: _Root, rel: str, flags: int, key: str, mode: int) -> int:
        if h.fd >= 0:
            return self._open_in(h.fd, rel, flags, key, mode)
        # the portable way: the resolved path, inside the root; its last component not
        # followed (a link put there since it was resolved)
        try:
            return os.open(self._real_path(rel, key), flags | _O_NOFOLLOW, mode)
        except OSError as e:
            if e.errno != errno.ELOOP:
                raise
            raise InvalidKeyError(
                f"key {key!r}: a symbolic link on its path changed while it was opened; "
                f"refused") from None

    def _open_in(self, rootfd: int, rel: str, flags: int, key: str, mode: int) -> int:
        try:
            return _open_nolinks(rootfd, rel.encode(_FS_ENCODING, _FS_ERRORS), flags, mode)
        except OSError as e:
            if e.errno not in _LINKED:
                raise
        real = self._inside(rel, key)
        try:
            return _open_nolinks(rootfd, real, flags, mode)
        except OSError as e:
            if e.errno not in _LINKED:
                raise
            raise InvalidKeyError(
                f"key {key!r}: a symbolic link on its path changed while it was opened; "
                f"refused") from None

    def _open_read(self, key: str) -> int | None:
        """The file of ``key`` opened for reading (``None``: missing, or a directory);
        a special file is refused naming the key."""
        _check_key(key)
        h = self._root
        if h is not None and h.fd >= 0 and time.monotonic() - h.checked < _RECHECK_SECONDS:
            # (what _open does first, flattened: the root is open and was checked lately,
            # the file is opened relative to it without following links; a miss, a link
            # on the path or an error takes the whole way below, which says what it is)
            try:
                return _open_nolinks(h.fd, key.encode(_FS_ENCODING, _FS_ERRORS), _O_READ,
                                     0o666)
            except OSError:
                pass
        try:
            # non-blocking: a FIFO (or a device) opens at once instead of waiting for a
            # writer, and is refused by the caller's fstat
            return self._open(key, _O_READ, key)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None
        except PermissionError:
            if os.path.isdir(self._path(key)):  # Windows raises this for directories
                return None
            raise
        except OSError as e:
            if e.errno == errno.ENXIO:  # a socket (or a device without its driver)
                path = self._path(key)
                raise _special_file(key, path, os.stat(path).st_mode) from None
            raise

    def _stat(self, key: str) -> os.stat_result | None:
        """What ``key``'s file is (not following links out of the root); ``None``
        when there is none."""
        self._path(key)
        if not self._dir_fd:  # (a directory cannot be opened everywhere: Windows)
            if self._handle() is None:
                return None
            try:
                return os.stat(self._real_path(key, key), follow_symlinks=False)
            except (FileNotFoundError, NotADirectoryError):
                return None
        try:
            fd = self._open(key, _O_LOOK, key)
        except (FileNotFoundError, NotADirectoryError):
            return None
        try:
            return os.fstat(fd)
        finally:
            os.close(fd)

    def _read(self, key: str, byte_range: ByteRequest | None, limit: int | None
              ) -> bytes | None:
        fd = self._open_read(key)  # (validates the key)
        if fd is None:
            return None
        n = 0
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                if stat.S_ISDIR(st.st_mode):  # a directory: a prefix, not a key
                    return None
                raise _special_file(key, self._path(key), st.st_mode)
            if limit is not None and st.st_size > limit:
                raise ValueTooLargeError(
                    f"key {key!r}: the file holds {st.st_size} bytes, more than any valid "
                    f"value there ({limit} bytes at most); not read")
            if byte_range is None:
                start, stop = 0, st.st_size
            else:
                start, stop = normalize_byte_range(byte_range, st.st_size)
            n = stop - start
            # os.pread/os.read return a new bytes object sized to the request, so the
            # common single-read case costs no copy beyond the kernel's.
            chunks: list[bytes] = []
            got = 0
            while got < n:
                if hasattr(os, "pread"):
                    chunk = os.pread(fd, n - got, start + got)
                else:  # pragma: no cover - Windows
                    os.lseek(fd, start + got, os.SEEK_SET)
                    chunk = os.read(fd, n - got)
                if not chunk:
                    break  # the file shrank under us
                chunks.append(chunk)
                got += len(chunk)
            if len(chunks) == 1:
                return chunks[0]
            return b"".join(chunks)
        except IsADirectoryError:
            return None
        except MemoryError as e:
            if isinstance(e, AllocationError):  # pragma: no cover - nothing here makes one
                raise
            raise AllocationError(
                f"key {key!r}: out of memory reading {n} bytes ({human_bytes(n)}) of "
                f"{self._path(key)!r}") from None
        finally:
            os.close(fd)

    @property
    def fast_get_into(self) -> bool:  # type: ignore[override]
        """Files are read straight into buffers (``preadv``) -- unless a subclass
        changes what ``get`` returns without saying what ``get_into`` does: those reads
        would bypass its ``get``.  Setting it (``False``) turns the fast paths off."""
        if self._fast_get_into is not None:
            return self._fast_get_into
        cls = type(self)
        return _HAS_PREADV and (cls.get is LocalStore.get
                                or cls.get_into is not LocalStore.get_into)

    @fast_get_into.setter
    def fast_get_into(self, value: bool) -> None:
        self._fast_get_into = bool(value)  # (the capabilities are computed again)

    def _capabilities(self) -> StoreCapabilities:
        """The class flags, with the locks this platform has: whether they are taken
        is ``config file_locks`` (:attr:`interprocess_locks`), asked at each write."""
        return dataclasses.replace(super()._capabilities(),
                                   interprocess_locks=_locks.HAVE_FLOCK)

    def _reads_files(self) -> bool:
        """Whether kernels may read this store's files themselves (``file_paths``,
        ``read_many_into``): only when neither ``get`` nor ``get_into`` is a
        subclass's own, since those reads call neither."""
        cls = type(self)
        return (self.fast_get_into and cls.get is LocalStore.get
                and cls.get_into is LocalStore.get_into and self._dir_fd)

    def get_into(self, key: str, out: memoryview) -> int | None:
        """Read the file of ``key`` straight into ``out`` (``preadv``, no copy).

        See ``Store.get_into``.

        Parameters
        ----------
        key : str
            The key.
        out : writable buffer
            Where to put the value; it is filled only when the file has exactly
            ``len(out)`` bytes.

        Returns
        -------
        int or None
            The file's size (fewer bytes when the file shrank while it was read), or
            ``None`` when there is no file.

        Raises
        ------
        zarrfast.storage.errors.SpecialFileError
            When the key is a FIFO, a socket or a device.
        """
        if not self.fast_get_into:  # pragma: no cover - Windows
            return super().get_into(key, out)
        fd = self._open_read(key)
        if fd is None:
            return None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                if stat.S_ISDIR(st.st_mode):
                    return None
                raise _special_file(key, self._path(key), st.st_mode)
            n = st.st_size
            view = memoryview(out).cast("B")
            if n != len(view):
                return n
            got = 0
            while got < n:
                k = os.preadv(fd, [view[got:]], got)
                if k == 0:
                    return got  # the file shrank under us
                got += k
            return n
        finally:
            os.close(fd)

    def open_ranges(self, key: str) -> RangeReader | None:
        """Open the file of ``key`` once, for reading several byte ranges of it.

        The reader's ``version`` (as ``version`` gives it) comes from ``fstat`` on the
        open file and every range is read from that file (``preadv``), so all of them
        see one value even if the key is written meanwhile.  See ``Store.open_ranges``.
        Where kernels may not read the files themselves (see ``file_paths``) the
        reader is the generic one, which reads through ``get``.

        Parameters
        ----------
        key : str
            The key.

        Returns
        -------
        RangeReader or None
            The reader (close it, or use it as a context manager), or ``None`` when
            there is no file.

        Raises
        ------
        zarrfast.storage.errors.SpecialFileError
            When the key is a FIFO, a socket or a device.

        Examples
        --------
        >>> from zarrfast.storage import RangeByteRequest
        >>> store = zarrfast.LocalStore("data.zarr")
        >>> store.set("shard", b"0123456789")
        >>> with store.open_ranges("shard") as reader:
        ...     reader.size, reader.read(RangeByteRequest(2, 4))
        (10, b'23')
        """
        if not self._reads_files():
            return super().open_ranges(key)
        fd = self._open_read(key)  # (validates the key)
        if fd is None:
            return None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                if stat.S_ISDIR(st.st_mode):  # a directory: a prefix, not a key
                    os.close(fd)
                    return None
                raise _special_file(key, self._path(key), st.st_mode)
        except BaseException:
            with contextlib.suppress(OSError):
                os.close(fd)
            raise
        return _FileRanges(self, key, fd, st)

    def file_paths(self, keys: Sequence[str]) -> tuple[bytes, list[bytes]] | None:
        """The root and the keys' paths relative to it, for kernels that read files themselves.

        The kernels open them without following links; see ``Store.file_paths``.

        Parameters
        ----------
        keys : sequence of str
            The keys.

        Returns
        -------
        tuple of (bytes, list of bytes) or None
            The root and the paths, file-system encoded; ``None`` when kernels may not
            read the files themselves (a subclass with its own ``get`` or ``get_into``,
            ``fast_get_into`` turned off, or a platform without ``openat``).

        Raises
        ------
        InvalidKeyError
            When a key is not valid.
        """
        if not self._reads_files():
            return None
        return os.fsencode(self._root_str), validate_keys(keys)

    def file_version(self, stamp: tuple[int, int, int, int]) -> Hashable | None:
        """The ``version`` token of a file a kernel read; see ``Store.file_version``.

        Parameters
        ----------
        stamp : tuple of int
            ``(st_ino, st_size, st_mtime_ns, st_ctime_ns)`` from ``fstat`` on the file.

        Returns
        -------
        tuple of int or None
            What ``version`` gives for that file (``stamp`` as a tuple), or ``None`` when
            a subclass has its own ``version``.
        """
        if type(self).version is not LocalStore.version:
            return None
        return tuple(stamp)

    def read_many_into(self, keys: Sequence[str], out: Any, offsets: Any,
                       nbytes: int, *, exact: bool = True) -> Any:
        """Read many files into one buffer, each at its own offset, in one kernel call.

        A compiled loop that releases the GIL opens, checks, reads and closes each file
        (``zarrfast.kernels.read_files_into``); a subclass with its own ``get_into`` or
        ``get`` is read one by one through them instead.  A file with a symbolic link on
        its path is read with ``get``, which follows the link only inside the root.  See
        ``Store.read_many_into``.

        Parameters
        ----------
        keys : sequence of str
            The keys.
        out : writable buffer
            Where to put the values (a ``uint8`` NumPy array, a ``bytearray``).
        offsets : sequence of int
            The byte offset in ``out`` of each key's value.
        nbytes : int
            The size a value must have (``exact``) or may have at most.
        exact : bool, default True
            Copy only files of exactly ``nbytes`` bytes; with ``False``, any file of at
            most ``nbytes`` bytes.

        Returns
        -------
        numpy.ndarray
            The ``int64`` sizes of the files, in the order of ``keys``; ``-1`` for a
            missing one.  A file whose size does not fit was not copied.

        Raises
        ------
        InvalidKeyError
            When a key is not valid, or a link on its path leads outside the root.
        OSError
            When a file cannot be read (the message names the key).
        """
        files = self.file_paths(keys)
        if files is None:
            return super().read_many_into(keys, out, offsets, nbytes, exact=exact)
        from zarrfast import kernels as _kernels

        root, paths = files
        offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        sizes, errors = _kernels.read_files_into(paths, out, offsets, nbytes, exact,
                                                 root=root)
        if errors.any():
            view = memoryview(out).cast("B")
            for i in np.flatnonzero(errors).tolist():
                code = int(errors[i])
                if code in (errno.ENOENT, errno.ENOTDIR, errno.EISDIR):
                    continue
                # a link on the path: read again, which follows it inside the root and
                # refuses it outside; not a regular file (a FIFO, a socket, a device):
                # read again, which raises naming the key and what it is
                value = self.get(keys[i])
                if code not in _LINKED:
                    raise OSError(code, f"cannot read key {keys[i]!r}: {os.strerror(code)}",
                                  self._path(keys[i]))
                if value is not None:
                    n = sizes[i] = len(value)
                    if n == nbytes or (not exact and n < nbytes):
                        off = int(offsets[i])
                        view[off:off + n] = value
        return sizes

    def exists(self, key: str) -> bool:
        """Whether ``key`` is a regular file; see ``Store.exists``.

        Parameters
        ----------
        key : str
            The key; a directory is not a value.

        Returns
        -------
        bool
            ``True`` when the key's file exists and is a regular file.

        Raises
        ------
        InvalidKeyError
            When ``key`` is not a valid key, or a link on its path leads outside the root.
        """
        st = self._stat(key)
        return st is not None and stat.S_ISREG(st.st_mode)

    def version(self, key: str) -> tuple[int, int, int, int] | None:
        """A token that changes whenever the file of ``key`` is replaced; see ``Store.version``.

        Parameters
        ----------
        key : str
            The key.

        Returns
        -------
        tuple of int or None
            ``(st_ino, st_size, st_mtime_ns, st_ctime_ns)`` of the file: writes replace
            files by renaming a new one over them, so a new value is a new inode.
            ``None`` when there is no file.
        """
        # writes replace files by rename, so a new value is a new inode; size and
        # change times catch the rare reuse of an inode number
        st = self._stat(key)
        if st is None:
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)

    def getsize(self, key: str) -> int:
        """The size in bytes of the file of ``key``; see ``Store.getsize``.

        Parameters
        ----------
        key : str
            The key.

        Returns
        -------
        int
            The file's size.

        Raises
        ------
        FileNotFoundError
            When there is no regular file at the key.
        """
        st = self._stat(key)
        if st is None or not stat.S_ISREG(st.st_mode):
            raise FileNotFoundError(f"key {key!r} not found in {self!r}")
        return st.st_size

    def get_many(
        self, keys: Sequence[str], byte_ranges: Sequence[ByteRequest | None] | None = None
    ) -> list[bytes | None]:
        """Read many files (or bytes of them) on the thread pool; see ``Store.get_many``.

        Fewer than four keys are read one by one on the calling thread.

        Parameters
        ----------
        keys : sequence of str
            The keys.
        byte_ranges : sequence of (byte request or None), optional
            One byte request (or ``None``: the whole file) per key; ``None`` (the
            default) reads every file whole.

        Returns
        -------
        list of (bytes or None)
            The values in the order of ``keys``; ``None`` for a missing file.

        Raises
        ------
        ZarrfastError
            When ``byte_ranges`` has another length than ``keys``.
        """
        if len(keys) < 4:
            return super().get_many(keys, byte_ranges)
        from zarrfast.concurrency import map_unordered_into

        keys, byte_ranges = many_requests(keys, byte_ranges)
        out: list[bytes | None] = [None] * len(keys)

        def work(i: int) -> None:
            out[i] = self.get(keys[i], byte_ranges[i])

        map_unordered_into(work, range(len(keys)))
        return out

    # -- writes -----------------------------------------------------------
    def _open_dir(self, rel: str, key: str, *, create: bool) -> int | None:
        """The directory ``rel`` (``""``: the root) opened to write in, inside the root;
        made one level at a time (each ``mkdir`` relative to its open parent) with
        ``create``, else ``None`` when it does not exist."""
        h = self._handle(create=create, key=key)
        if h is not None and h.stale(self._root_str, 0.0):  # removed, moved, replaced
            self._root = None
            h = self._handle(create=create, key=key)
        if h is None:
            return None
        if not rel:
            return os.dup(h.fd)
        try:
            return self._open(rel, _O_DIR, key)
        except (FileNotFoundError, NotADirectoryError) as e:
            if not create:
                return None
            if isinstance(e, NotADirectoryError):
                raise _in_the_way(key, self._path(rel)) from None
        fd = self._make_in_parent(rel, key)
        if fd is not None:
            return fd
        parts = rel.split("/")
        fd = self._open_dir("", key, create=True)
        assert fd is not None
        try:
            for i, part in enumerate(parts):
                try:
                    os.mkdir(part, 0o777, dir_fd=fd)
                    if self.fsync:
                        os.fsync(fd)  # the new directory's entry
                except FileExistsError:
                    pass
                except FileNotFoundError:  # the directory it is made in was removed
                    made_in = "/".join(parts[:i])
                    raise _removed_under(self, key, self._path(made_in) if made_in
                                         else self._root_str) from None
                sub = "/".join(parts[:i + 1])
                try:
                    nxt = self._open(sub, _O_DIR, key)
                except NotADirectoryError:
                    raise _in_the_way(key, self._path(sub)) from None
                except FileNotFoundError:  # made, then removed at once
                    raise _removed_under(self, key, self._path(sub)) from None
                os.close(fd)
                fd = nxt
            return fd
        except BaseException:
            os.close(fd)
            raise

    def _make_in_parent(self, rel: str, key: str) -> int | None:
        """The missing directory ``rel`` made in its parent when that exists, and opened
        (a write's new row of chunks, ``c/3/5`` beside ``c/3/4``: one ``mkdir`` and two
        opens, no exception per level); ``None`` when it cannot be so (no parent, or
        the parent missing): :meth:`_open_dir` then makes it level by level.  Raises as
        that does when something is in the way once made, or it was removed at once
        (a concurrent delete of the node).  (A fresh 256
        MiB write of 32^3 chunks makes 210 directories: 12 system calls and 3 exceptions
        each the level-by-level way, 5 and 1 here.)"""
        parent, _, leaf = rel.rpartition("/")
        if not parent:
            return None
        try:
            pfd = self._open(parent, _O_DIR, key)
        except (FileNotFoundError, NotADirectoryError):
            return None
        try:
            try:
                os.mkdir(leaf, 0o777, dir_fd=pfd)
                if self.fsync:
                    os.fsync(pfd)  # the new directory's entry
            except FileExistsError:
                pass
            except FileNotFoundError:  # the parent, open here, was removed meanwhile
                raise _removed_under(self, key, self._path(parent)) from None
        finally:
            os.close(pfd)
        try:  # (as level by level: what is there now is in the way, or was removed)
            return self._open(rel, _O_DIR, key)
        except NotADirectoryError:
            raise _in_the_way(key, self._path(rel)) from None
        except FileNotFoundError:  # made, then removed at once
            raise _removed_under(self, key, self._path(rel)) from None

    def _check_leaf(self, dirfd: int, name: str, key: str) -> None:
        """A symbolic link at the key itself is replaced by the write (a rename never
        follows it) -- but only when it points inside the root."""
        try:
            mode = os.stat(name, dir_fd=dirfd, follow_symlinks=False).st_mode
        except (FileNotFoundError, NotADirectoryError):
            return
        if stat.S_ISLNK(mode):
            self._inside(key, key)

    @property
    def fast_set_many(self) -> bool:  # type: ignore[override]
        """``set_many`` writes a batch of files in one ``nogil`` loop (unless a subclass
        changes ``set``, or every write is fsynced)."""
        return type(self).set is LocalStore.set and not self.fsync and self._dir_fd

    @property
    def copies_values(self) -> bool:  # type: ignore[override]
        """A value is written to a file before ``set`` / ``set_many`` return, and not
        kept (unless a subclass changes them)."""
        cls = type(self)
        return cls.set is LocalStore.set and cls.set_many is LocalStore.set_many

    def set_many(self, items: Any) -> None:
        """Write many files atomically, as ``set`` does one by one, in one kernel call.

        Each directory is opened (and made) once, inside the root, and the files of
        the batch are written relative to their open directories by one call of a
        compiled loop (``zarrfast.kernels.write_files``).  A key the kernel does not
        write (a symbolic link there, an error) goes through ``set``, which applies its
        checks and raises naming the key.  See ``Store.set_many``.

        Parameters
        ----------
        items : mapping or iterable of (str, bytes-like) pairs
            The keys and their values.

        Raises
        ------
        ReadOnlyError
            When the store is read-only.
        InvalidKeyError
            When a key is not valid.
        zarrfast.storage.errors.StoreWriteError
            When the file system fails a write (disk full, quota, an I/O error); the
            message names the key.
        """
        pairs = list(items.items() if isinstance(items, Mapping) else items)
        if not self.fast_set_many or len(pairs) < 2:
            for key, value in pairs:
                self.set(key, value)
            return

        self._check_writable(pairs[0][0])
        encoded = validate_keys([key for key, _ in pairs])  # (one pass over them all)
        try:
            errors = self._set_many(pairs, encoded)
        except ZarrfastError:
            raise
        except OSError as e:  # a directory could not be made
            raise _failed("write", pairs[0][0], self._root_str, e) from e
        for i in np.flatnonzero(errors).tolist():
            self.set(*pairs[i])  # its checks, a retry, or the error naming the key

    def _set_many(self, pairs: list, encoded: list[bytes]) -> Any:
        from zarrfast import kernels as _kernels

        with self._parents([key for key, _ in pairs], encoded) as (fds, names):
            return _kernels.write_files(fds, _tmp_names(len(pairs)), names,
                                        [_contiguous(v) for _, v in pairs])

    @contextlib.contextmanager
    def _parents(self, keys: Sequence[str], encoded: list[bytes]
                 ) -> Iterator[tuple[np.ndarray, list[bytes]]]:
        """The open directory of each key's file (each one opened, and made, once, inside
        the root) and the file's name in it, for the file kernels; closed on exit.
        ``encoded``: the keys file-system encoded (``validate_keys``)."""
        dirs: dict[bytes, int] = {}
        try:
            names: list[bytes] = []
            slots: list[int] = []
            for i, key in enumerate(encoded):
                parent, _, name = key.rpartition(b"/")
                fd = dirs.get(parent)
                if fd is None:
                    fd = self._open_dir(os.fsdecode(parent), keys[i], create=True)
                    assert fd is not None  # (made)
                    dirs[parent] = fd
                slots.append(fd)
                names.append(name)
            yield np.array(slots, dtype=np.int64), names
        finally:
            for fd in dirs.values():
                os.close(fd)

    @property
    def fast_set_regions(self) -> bool:  # type: ignore[override]
        """:meth:`set_regions` writes files from the array's memory in one ``nogil``
        loop: unless a subclass changes ``set`` or ``set_many`` (whose writes the
        pipeline must then go through), or every write is fsynced."""
        return self.fast_set_many and self.copies_values

    def set_regions(self, keys: Sequence[str], src: np.ndarray, offsets: np.ndarray,
                    strides: np.ndarray, shape: np.ndarray, itemsize: int, *,
                    fill: np.ndarray | None = None, extra: Any = None,
                    extra_first: bool = False) -> np.ndarray:
        """Write regions of an array's bytes to files straight from where they lie.

        The atomic writes of ``set_many``, each file written from its regions in
        ``src`` (``writev``, no copy: ``zarrfast.kernels.write_region_files``).  A key
        the kernel does not write (a symbolic link there, an error) gets its bytes
        gathered and goes through ``set``, which applies its checks and raises naming
        the key; a key whose region is all ``fill`` is not stored on that path either.
        See ``Store.set_regions`` for what is written.

        Parameters
        ----------
        keys : sequence of str
            The keys to write.
        src : numpy.ndarray
            The bytes the regions lie in.
        offsets : numpy.ndarray
            ``int64`` byte offsets into ``src``: a row per key, one offset per region.
        strides : numpy.ndarray
            The byte stride of each dimension of a region.
        shape : numpy.ndarray
            The shape of a region, in items.
        itemsize : int
            The size of one item in bytes.
        fill : numpy.ndarray, optional
            One item's bytes: a key with a region whose every item equals it is not
            stored.  ``None`` (the default) stores every key.
        extra : bytes-like, optional
            Bytes stored after the regions of every key (a shard's index).
        extra_first : bool, default False
            Put ``extra`` before the regions instead.

        Returns
        -------
        numpy.ndarray
            A ``bool`` mask over ``keys``: ``True`` for a key not stored because of
            ``fill``.

        Raises
        ------
        ReadOnlyError
            When the store is read-only.
        InvalidKeyError
            When a key is not valid.
        zarrfast.storage.errors.StoreWriteError
            When the file system fails a write; the message names the key.
        """
        keys = list(keys)
        if not self.fast_set_regions or not keys:
            return super().set_regions(keys, src, offsets, strides, shape, itemsize,
                                       fill=fill, extra=extra, extra_first=extra_first)
        from zarrfast import kernels as _kernels

        self._check_writable(keys[0])
        encoded = validate_keys(keys)  # (one pass over them all)
        offsets = np.ascontiguousarray(offsets, dtype=np.int64).reshape(len(keys), -1)
        try:
            with self._parents(keys, encoded) as (fds, names):
                status = _kernels.write_region_files(
                    fds, _tmp_names(len(keys)), names, src, offsets, strides, shape,
                    itemsize, fill, extra, extra_first)
        except ZarrfastError:
            raise
        except OSError as e:  # a directory could not be made
            raise _failed("write", keys[0], self._root_str, e) from e
        skipped = status < 0
        for i in np.flatnonzero(status > 0).tolist():  # its checks, a retry, or the error
            # (with ``fill`` too: a key of fill is not stored on the retry either)
            skipped[i] = super().set_regions(
                [keys[i]], src, offsets[i:i + 1], strides, shape, itemsize, fill=fill,
                extra=extra, extra_first=extra_first)[0]
        return skipped

    def set(self, key: str, value: bytes | bytearray | memoryview) -> None:
        """Write ``value`` to the file of ``key`` atomically; see ``Store.set``.

        The value goes to a temporary file in the key's directory (made if needed),
        renamed over the key; with ``fsync`` the file and the directory entry are
        flushed to disk first.  On failure the key's previous value stays as it was.

        Parameters
        ----------
        key : str
            The key.
        value : bytes-like
            The value: any object with the buffer protocol.  It is written before
            ``set`` returns (the caller may reuse its buffer).  A zarr-python ``Buffer``
            is written too, and then the result is a ``Ready`` to await, as
            zarr-python's ``await store.set(key, buffer)``.

        Raises
        ------
        ReadOnlyError
            When the store is read-only.
        InvalidKeyError
            When ``key`` is not a valid key, or a link on its path leads outside the root.
        zarrfast.storage.errors.StoreWriteError
            When the file system fails the write (disk full, quota, an I/O error);
            ``zarrfast.storage.errors.StorePermissionError`` when it refuses it.  The
            message names the key.
        zarrfast.errors.ConcurrentWriteError
            When the key's directory was removed while the value was written (a
            concurrent delete of its node); nothing was stored.
        ZarrfastError
            When a parent path of the key is a file.

        Examples
        --------
        >>> import os
        >>> store = zarrfast.LocalStore("data.zarr")
        >>> store.set("a/b/zarr.json", b"{}")
        >>> os.path.isfile(os.path.join("data.zarr", "a", "b", "zarr.json"))
        True
        """
        self._check_writable(key)
        validate_key(key)
        try:
            if not (self.fast_set_many and self._set_fast(key, value)):
                self._set(key, value)
        except ZarrfastError:
            raise
        except TypeError:
            plain = zarr_python_value(value)  # zarr-python's Buffer: its style of call
            if plain is None:
                raise
            self.set(key, plain)
            return Ready()  # type: ignore[return-value]
        except FileNotFoundError:  # the directory (and the temporary file) went away
            raise _removed_under(self, key, os.path.dirname(self._path(key))) from None
        except OSError as e:
            raise _failed("write", key, self._path(key), e) from e

    def _set_fast(self, key: str, value: Any) -> bool:
        """The file part of :meth:`_set` in one ``nogil`` kernel call (the temporary file,
        the write, the rename; not one round trip for the GIL per system call).  False,
        with nothing changed, when the kernel did not write it (a link at the key, an
        error): :meth:`_set` then applies its checks and raises naming the key."""
        from zarrfast import kernels as _kernels

        parent, _, name = key.rpartition("/")
        dirfd = self._open_dir(parent, key, create=True)
        assert dirfd is not None
        try:
            errors = _kernels.write_files(
                np.array([dirfd], dtype=np.int64), [os.fsencode(f"{_TMP_MARK}{_unique()}")],
                [os.fsencode(name)], [_contiguous(value)])
        finally:
            os.close(dirfd)
        return not errors[0]

    def _set(self, key: str, value: bytes | bytearray | memoryview) -> None:
        if not self._dir_fd:
            self._set_portable(key, value)
            return
        parent, _, name = key.rpartition("/")
        dirfd = self._open_dir(parent, key, create=True)
        assert dirfd is not None
        try:
            self._check_leaf(dirfd, name, key)
            tmp = f"{_TMP_MARK}{_unique()}"
            flags = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                     | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))
            fd = os.open(tmp, flags, 0o666, dir_fd=dirfd)
            try:
                try:
                    view = memoryview(value)
                    view = (view if view.c_contiguous else memoryview(view.tobytes())).cast("B")
                    written = 0
                    n = len(view)
                    while written < n:
                        written += os.write(fd, view[written:written + _WRITE_PIECE])
                    if self.fsync:
                        os.fsync(fd)
                finally:
                    os.close(fd)
                os.replace(tmp, name, src_dir_fd=dirfd, dst_dir_fd=dirfd)
            except BaseException:
                try:
                    os.unlink(tmp, dir_fd=dirfd)
                except OSError:
                    pass
                raise
            if self.fsync:
                os.fsync(dirfd)  # the new entry
        finally:
            os.close(dirfd)

    # -- the portable way (no dir_fd): resolved paths, checked inside the root ------
    def _dir_path(self, rel: str, key: str, *, create: bool) -> str | None:
        """The directory ``rel`` (``""``: the root), resolved and inside the root; made
        with ``create`` (a file in the way is an error naming the key), else ``None``
        when the root does not exist."""
        if self._handle(create=create, key=key) is None:
            return None
        real = self._real_path(rel, key)
        if create and rel:
            _makedirs(real, key, self._path(rel))
            real = self._real_path(rel, key)  # (made: again, in case a link was put there)
        return real

    def _set_portable(self, key: str, value: bytes | bytearray | memoryview) -> None:
        """:meth:`_set` without ``dir_fd``: a temporary file in the key's (resolved)
        directory, then ``os.replace`` over the key (a link there is replaced, never
        followed -- and only when it points inside the root)."""
        parent, _, name = key.rpartition("/")
        d = self._dir_path(parent, key, create=True)
        assert d is not None
        path = d + os.sep + name
        try:
            if stat.S_ISLNK(os.lstat(path).st_mode):
                self._inside(key, key)
        except (FileNotFoundError, NotADirectoryError):
            pass
        tmp = d + os.sep + f"{_TMP_MARK}{_unique()}"
        flags = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW
                 | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))
        fd = os.open(tmp, flags, 0o666)
        try:
            try:
                view = memoryview(value)
                view = (view if view.c_contiguous else memoryview(view.tobytes())).cast("B")
                written = 0
                while written < len(view):
                    written += os.write(fd, view[written:written + _WRITE_PIECE])
                if self.fsync:
                    os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        if self.fsync:
            _fsync_dir(d)

    def _delete_portable(self, key: str) -> None:
        parent, _, name = key.rpartition("/")
        d = self._dir_path(parent, key, create=False)
        if d is None:
            return
        path = d + os.sep + name
        try:
            os.unlink(path)  # a link itself, never what it points to
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            pass
        except OSError as e:
            if not (isinstance(e, PermissionError) and stat.S_ISDIR(os.lstat(path).st_mode)):
                raise _failed("delete", key, self._path(key), e) from e

    def _delete_dir_portable(self, p: str) -> None:
        parent, _, name = p.rpartition("/")
        d = self._dir_path(parent, p, create=False)
        if d is None:
            return
        try:
            entries = [name] if p else os.listdir(d)
        except (FileNotFoundError, NotADirectoryError):
            return
        for entry in entries:
            path = d + os.sep + entry
            try:
                mode = os.lstat(path).st_mode
            except (FileNotFoundError, NotADirectoryError):
                continue
            try:
                if stat.S_ISDIR(mode):  # (a link is no directory here: left alone)
                    self._remove_tree(path, None, p or entry)
                elif not p:
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(path)
            except ConcurrentWriteError:
                raise
            except OSError as e:
                key = f"{p}/{entry}" if p and entry != name else (p or entry)
                raise _failed("delete", key, self._path(key), e) from e

    def delete(self, key: str) -> None:
        """Delete the file of ``key``; a missing one is no error.  See ``Store.delete``.

        A symbolic link at the key is removed itself, never what it points to; a
        directory at the key is left alone.

        Parameters
        ----------
        key : str
            The key.

        Raises
        ------
        ReadOnlyError
            When the store is read-only.
        InvalidKeyError
            When ``key`` is not a valid key, or a link on its path leads outside the root.
        zarrfast.storage.errors.StoreWriteError
            When the file system fails the delete; the message names the key.
        """
        self._check_writable(key)
        validate_key(key)
        if not self._dir_fd:
            self._delete_portable(key)
            return
        parent, _, name = key.rpartition("/")
        dirfd = self._open_dir(parent, key, create=False)
        if dirfd is None:
            return
        try:
            os.unlink(name, dir_fd=dirfd)  # a link itself, never what it points to
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            pass
        except OSError as e:
            if not (isinstance(e, PermissionError) and stat.S_ISDIR(
                    os.stat(name, dir_fd=dirfd, follow_symlinks=False).st_mode)):
                raise _failed("delete", key, self._path(key), e) from e
        finally:
            os.close(dirfd)

    def delete_dir(self, prefix: str) -> None:
        """Delete every key below ``prefix``: its directory and everything in it.

        The directory is removed relative to its open parent; a symbolic link there is
        left alone, never followed.  A file named ``prefix`` itself is kept.  Values
        written below ``prefix`` meanwhile are removed by removing the directory again,
        a bounded number of times.  See ``Store.delete_dir``.

        Parameters
        ----------
        prefix : str
            A node's path, with or without a trailing ``/``; ``""`` deletes everything
            in the root (the root directory itself stays).

        Raises
        ------
        ReadOnlyError
            When the store is read-only.
        InvalidKeyError
            When ``prefix`` is not ``""`` or a valid key.
        zarrfast.errors.ConcurrentWriteError
            When values kept being written below ``prefix`` while it was deleted.
        zarrfast.storage.errors.StoreWriteError
            When the file system fails a delete; the message names the key.
        """
        self._check_writable(prefix or "<root>")
        validate_prefix(prefix)
        p = prefix[:-1] if prefix.endswith("/") else prefix
        if not self._dir_fd:
            self._delete_dir_portable(p)
            return
        parent, _, name = p.rpartition("/")
        dirfd = self._open_dir(parent, p, create=False)
        if dirfd is None:
            return
        try:
            for entry in [name] if p else os.listdir(dirfd):
                try:
                    mode = os.stat(entry, dir_fd=dirfd, follow_symlinks=False).st_mode
                except (FileNotFoundError, NotADirectoryError):
                    continue
                try:
                    if stat.S_ISDIR(mode):
                        self._remove_tree(entry, dirfd, p or entry)
                    elif not p:
                        try:
                            os.unlink(entry, dir_fd=dirfd)
                        except FileNotFoundError:
                            pass
                    # a key (or a link) named like the prefix: left (zarr: prefix + "/")
                except ConcurrentWriteError:
                    raise
                except OSError as e:
                    key = f"{p}/{entry}" if p and entry != name else (p or entry)
                    raise _failed("delete", key, self._path(key), e) from e
        finally:
            os.close(dirfd)

    def _remove_tree(self, name: str, dirfd: int | None, prefix: str) -> None:
        """Remove the directory ``name`` of the open directory ``dirfd`` (``None``: the
        path ``name``; never following a link where ``shutil.rmtree`` can promise it);
        values written below it meanwhile are removed by removing it again, a bounded
        number of times."""
        last: OSError | None = None
        for _ in range(_DELETE_ATTEMPTS):
            try:
                shutil.rmtree(name, dir_fd=dirfd, **_RMTREE_IGNORE_MISSING)
            except OSError as e:
                if e.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                    raise
                last = e  # a value was written below it meanwhile: remove the tree again
                continue
            return
        raise ConcurrentWriteError(
            f"cannot delete {prefix!r} from {self!r}: values kept being written below it "
            f"while it was deleted ({_DELETE_ATTEMPTS} attempts; last: {last}); stop the "
            f"writers and delete it again") from last

    # -- listing ----------------------------------------------------------
    def list(self) -> Iterator[str]:
        """List every key (every file below the root), sorted; see ``Store.list``.

        Returns
        -------
        Iterator[str]
            The keys; the iterator also works with ``async for``.  Lock files and the
            temporary files of writes in progress are not keys.
        """
        return self.list_prefix("")

    def list_prefix(self, prefix: str) -> Iterator[str]:
        """List the keys that start with ``prefix``, sorted; see ``Store.list_prefix``.

        Only the deepest directory ``prefix`` names is walked; symbolic links to
        directories are not followed.

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
            by ``/``), or its directory is a link leading outside the root.
        """
        if not listing_prefix(prefix):
            return iter(())
        # walk only the deepest directory the prefix names
        base = prefix.rsplit("/", 1)[0] if "/" in prefix else ""
        start = self._path(base) if base else self._root_str
        out: list[str] = []
        if not os.path.isdir(start):
            return iter(out)
        if base:
            self._inside(base, prefix)  # never list a directory outside the root
        root_len = len(self._root_str) + 1
        for dirpath, dirnames, filenames in os.walk(start):
            dirnames.sort()
            rel_dir = dirpath[root_len:].replace(os.sep, "/") if dirpath != self._root_str else ""
            for name in filenames:
                if _hidden(name):
                    continue
                key = f"{rel_dir}/{name}" if rel_dir else name
                if key.startswith(prefix):
                    out.append(key)
        out.sort()
        return iter(out)

    def list_dir(self, prefix: str) -> Iterator[str]:
        """List the names in the directory of ``prefix``, sorted; see ``Store.list_dir``.

        Parameters
        ----------
        prefix : str
            A node's path, with or without a trailing ``/``; ``""`` is the root.

        Returns
        -------
        Iterator[str]
            The names of the files and directories in it (none when there is no such
            directory); the iterator also works with ``async for``.

        Raises
        ------
        InvalidKeyError
            When ``prefix`` is not ``""`` or a valid key, or its directory is a link
            leading outside the root.
        """
        validate_prefix(prefix)
        p = prefix.rstrip("/")
        path = self._path(p) if p else self._root_str
        try:
            names = os.listdir(path)
        except (FileNotFoundError, NotADirectoryError):
            return iter([])
        except OSError as e:  # pragma: no cover
            if e.errno == errno.ENOTDIR:
                return iter([])
            raise
        if p:
            self._inside(p, prefix)  # never list a directory outside the root
        return iter(sorted(n for n in names if not _hidden(n)))


def _contiguous(value: Any) -> Any:
    """``value``, or a copy of its bytes when it is not C-contiguous (as ``set`` does)."""
    view = memoryview(value)
    return value if view.c_contiguous else view.tobytes()


def _failed(action: str, key: str, path: str, e: OSError) -> StoreWriteError:
    """An error of the file system, named: which key, where, and what the system said."""
    cls = StorePermissionError if isinstance(e, PermissionError) else StoreWriteError
    reason = e.strerror or str(e)
    return cls(f"cannot {action} key {key!r} ({path}): {reason}"
               f"{' [errno ' + str(e.errno) + ']' if e.errno else ''}",
               e.errno, e.filename if e.filename is not None else path)


def _in_the_way(key: str, path: str) -> ZarrfastError:
    return ZarrfastError(f"cannot write key {key!r}: a parent path of it, {path!r}, is a file")


def _fsync_dir(path: str) -> None:
    """Flush a directory's entries (best effort: Windows cannot open a directory)."""
    try:
        fd = os.open(path, _O_DIR)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _makedirs(parent: str, key: str, path: str) -> None:
    """Make the directories of a key's file; a file in their way is an error naming it,
    and so is a directory the file system refuses to make (read-only, no permission, a
    virtual file system such as /proc)."""
    try:
        os.makedirs(parent, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise ZarrfastError(
            f"cannot write key {key!r}: a parent path of {path!r} is a file"
        ) from None
    except FileNotFoundError as e:
        made = e.filename if isinstance(e.filename, str) else parent
        if not os.path.isdir(os.path.dirname(made)):
            # a directory made here was removed before its child was
            raise ConcurrentWriteError(
                f"cannot write key {key!r}: the directories of {path!r} were removed while "
                f"they were made (a concurrent delete of its node?); nothing was stored"
            ) from None
        # its parent is there, yet it cannot be made: the file system makes no
        # directories there (/proc answers "No such file or directory")
        raise StoreWriteError(
            f"cannot write key {key!r}: cannot create the directory {made!r}: the file "
            f"system does not allow it there ({e.strerror}; a read-only or virtual file "
            f"system, such as /proc?); nothing was stored", e.errno, made) from None
    except OSError as e:  # permission, a read-only file system, no space
        made = e.filename if isinstance(e.filename, str) else parent
        cls = StorePermissionError if isinstance(e, PermissionError) else StoreWriteError
        raise cls(f"cannot write key {key!r}: cannot create the directory {made!r}: "
                  f"{e.strerror or e}{' [errno ' + str(e.errno) + ']' if e.errno else ''}; "
                  f"nothing was stored", e.errno, made) from None


def _removed_under(store: LocalStore, key: str, parent: str) -> ConcurrentWriteError:
    return ConcurrentWriteError(
        f"cannot write key {key!r} to {store!r}: its directory {parent!r} was removed while "
        f"the value was written (a concurrent delete of its node?); nothing was stored")


def _ignore_missing(function: Any, path: str, exc: Any) -> None:
    """For ``shutil.rmtree``: an entry already gone (removed by another deleter, or a
    temporary file renamed into place meanwhile) is no error; anything else is."""
    if isinstance(exc, tuple):  # onerror's sys.exc_info() (Python < 3.12)
        exc = exc[1]
    if not isinstance(exc, FileNotFoundError):
        raise exc


_RMTREE_IGNORE_MISSING: dict[str, Any] = (
    {"onexc": _ignore_missing} if sys.version_info >= (3, 12) else {"onerror": _ignore_missing})


def _rebuild(root: str, read_only: bool, fsync: bool) -> LocalStore:
    return LocalStore(root, read_only=read_only, fsync=fsync)


#: no byte of a file lies at or past this offset (off_t)
_MAX_FILE_OFFSET = 2**63 - 1


class _FileRanges(RangeReader):
    """A local file opened for range reads (:meth:`LocalStore.open_ranges`)."""

    def __init__(self, store: LocalStore, key: str, fd: int, st: os.stat_result) -> None:
        self.store = store
        self.key = key
        self.fd = fd
        self.size: int = st.st_size
        self.version = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)

    def read(self, byte_range: ByteRequest) -> bytes | None:
        start, stop = normalize_byte_range(byte_range, self.size)
        out = bytearray(stop - start)
        return bytes(out[:self.read_into(out, start)])

    def read_into(self, out: Any, start: int) -> int:
        view = memoryview(out).cast("B")
        got = 0
        while got < len(view):
            # (no file holds bytes at or past 2**63 - 1: a range there, as a damaged
            # index may give, reads short rather than failing in preadv)
            want = min(len(view) - got, _MAX_FILE_OFFSET - (start + got))
            if want <= 0:
                break
            k = os.preadv(self.fd, [view[got:got + want]], start + got)
            if k == 0:
                break  # the end of the file
            got += k
        return got

    def fileno(self) -> int | None:
        return self.fd if self.fd >= 0 else None

    def close(self) -> None:
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            os.close(fd)
