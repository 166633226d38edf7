"""A store backed by a directory of the local file system.

Keys map to files below ``root`` (``"a/c/0/1"`` -> ``root/a/c/0/1``).  Writes
go to a temporary file in the target's directory and are renamed into place,
so a reader never sees a half-written value and a crash leaves the old value
(or nothing).  Byte ranges are served with ``os.pread``.  No key can leave the
root: keys are validated (see :func:`~zarrfast.storage.base.validate_key`) and
writes refuse to go through a symbolic link that points outside the root.

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

import copy
import copyreg
import errno
import itertools
import os
import shutil
import stat
import sys
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from zarrfast.errors import ConcurrentWriteError, InvalidKeyError, ZarrfastError
from zarrfast.storage import locks as _locks
from zarrfast.storage.base import (
    ByteRequest,
    Store,
    normalize_byte_range,
    validate_key,
    validate_prefix,
)
from zarrfast.storage.errors import SpecialFileError, ValueTooLargeError

__all__ = ["LocalStore"]

_TMP_MARK = ".zarrfast-tmp-"
_tmp_counter = itertools.count()
_LOCK_NAME = _locks.LOCK_NAME
#: how many times ``delete_dir`` removes a tree again when values keep appearing in it
_DELETE_ATTEMPTS = 20


def _hidden(name: str) -> bool:
    """Files of the store's own that are not keys: temporary files, lock files."""
    return name.startswith(_TMP_MARK) or name == _LOCK_NAME


def _unique() -> str:
    """A temporary-file suffix unique across processes, threads and calls (cheaper than
    a UUID): a random per-process prefix (fresh after fork), then a counter."""
    return f"{_tmp_prefix}{next(_tmp_counter)}"


def _new_tmp_prefix() -> None:
    global _tmp_prefix
    _tmp_prefix = f"{uuid.uuid4().hex[:16]}-"


_new_tmp_prefix()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_tmp_prefix)


_HAS_PREADV = hasattr(os, "preadv")


_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR,
          "a character device"), (stat.S_ISBLK, "a block device"))


def _special_file(key: str, path: str, mode: int) -> SpecialFileError:
    what = next((name for test, name in _KINDS if test(mode)), "not a regular file")
    return SpecialFileError(f"key {key!r}: {path!r} is {what}, not a file holding a value; "
                            f"not read")


class LocalStore(Store):
    """A directory on the local file system.

    Parameters
    ----------
    root
        The directory.  Created on the first write if it does not exist.
    read_only
        Refuse writes and deletes.
    fsync
        Flush every written file (and its directory entry) to disk before
        returning, for durability across power loss.
    """

    supports_partial_reads = True
    #: ``flock`` on a lock file in the node's directory (POSIX)
    interprocess_locks = _locks.HAVE_FLOCK

    def __init__(self, root: str | os.PathLike, *, read_only: bool = False, fsync: bool = False):
        super().__init__(read_only=read_only)
        if isinstance(root, str) and root.startswith("file://"):
            root = root[len("file://"):]
        self.root = Path(root).expanduser().absolute()
        self._root_str = os.fspath(self.root)
        self.fsync = bool(fsync)
        self._fast_get_into: bool | None = None  # set: overrides the property

    def __repr__(self) -> str:
        return f"LocalStore({self._root_str!r}{', read_only=True' if self.read_only else ''})"

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
        """A copy with the given mode (of the same class: a subclass's ``get`` stays)."""
        new = copy.copy(self)
        new._read_only = bool(read_only)
        return new

    def _lock_scope(self) -> tuple[str, str]:
        return ("local", self._root_str)

    def _lock_interprocess(self, path: str, deadline: float, timed_out: Any) -> Any:
        """``flock`` on ``.zarrfast.lock`` in the node's directory (made for the update,
        removed after it).  Nothing is locked when the directory does not exist: the node
        is gone, as the caller then finds."""
        key = f"{path}/{_LOCK_NAME}" if path else _LOCK_NAME
        lock_path = self._path(key)
        self._check_inside(lock_path, key)
        return _locks.flock_file(lock_path, deadline, timed_out)

    def _path(self, key: str) -> str:
        validate_key(key)
        return self._root_str + os.sep + (key if os.sep == "/" else key.replace("/", os.sep))

    # -- reads ------------------------------------------------------------
    def get(self, key: str, byte_range: ByteRequest | None = None) -> bytes | None:
        return self._read(key, byte_range, None)

    def get_limited(self, key: str, limit: int) -> bytes | None:
        """The value of ``key``; a file larger than ``limit`` bytes is refused, naming the
        key and its size, before any of it is read (a sparse multi-GiB file costs an
        ``fstat``).  A subclass's own ``get`` is honoured (then refused once read)."""
        if type(self).get is not LocalStore.get:
            return super().get_limited(key, limit)
        return self._read(key, None, limit)

    def _read(self, key: str, byte_range: ByteRequest | None, limit: int | None
              ) -> bytes | None:
        path = self._path(key)
        try:
            # non-blocking: a FIFO (or a device) opens at once instead of waiting for a
            # writer, and is refused below
            fd = os.open(path, os.O_RDONLY | _O_NONBLOCK | getattr(os, "O_BINARY", 0))
        except (FileNotFoundError, NotADirectoryError):
            return None
        except IsADirectoryError:
            return None
        except PermissionError:
            if os.path.isdir(path):  # Windows raises this for directories
                return None
            raise
        except OSError as e:
            if e.errno == errno.ENXIO:  # a socket (or a device without its driver)
                raise _special_file(key, path, os.stat(path).st_mode) from None
            raise
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                if stat.S_ISDIR(st.st_mode):  # a directory: a prefix, not a key
                    return None
                raise _special_file(key, path, st.st_mode)
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
        self._fast_get_into = bool(value)

    def _reads_files(self) -> bool:
        """Whether kernels may read this store's files themselves (``file_paths``,
        ``read_many_into``): only when neither ``get`` nor ``get_into`` is a
        subclass's own, since those reads call neither."""
        cls = type(self)
        return (self.fast_get_into and cls.get is LocalStore.get
                and cls.get_into is LocalStore.get_into)

    def get_into(self, key: str, out: memoryview) -> int | None:
        """Read the file of ``key`` straight into ``out`` (``preadv``, no copy)."""
        if not self.fast_get_into:  # pragma: no cover - Windows
            return super().get_into(key, out)
        path = self._path(key)
        try:
            fd = os.open(path, os.O_RDONLY | _O_NONBLOCK)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None
        except OSError as e:
            if e.errno == errno.ENXIO:  # a socket
                raise _special_file(key, path, os.stat(path).st_mode) from None
            raise
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                if stat.S_ISDIR(st.st_mode):
                    return None
                raise _special_file(key, path, st.st_mode)
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

    def file_paths(self, keys: Sequence[str]) -> list[bytes] | None:
        if not self._reads_files():
            return None
        return [os.fsencode(self._path(k)) for k in keys]

    def read_many_into(self, keys: Sequence[str], out: Any, offsets: Any,
                       nbytes: int, *, exact: bool = True) -> Any:
        """Many files straight into ``out`` in one ``nogil`` loop (open, fstat, pread,
        close per file; :func:`zarrfast.kernels.read_files_into`) -- or one by one
        through a subclass's own ``get_into`` / ``get`` (see :meth:`_reads_files`)."""
        if not self._reads_files():
            return super().read_many_into(keys, out, offsets, nbytes, exact=exact)
        from zarrfast import kernels as _kernels

        paths = [os.fsencode(self._path(k)) for k in keys]
        sizes, errors = _kernels.read_files_into(
            paths, out, np.ascontiguousarray(offsets, dtype=np.int64), nbytes, exact)
        if errors.any():
            for i in np.flatnonzero(errors).tolist():
                code = int(errors[i])
                if code not in (errno.ENOENT, errno.ENOTDIR, errno.EISDIR):
                    # not a regular file (a FIFO, a socket, a device): read again, which
                    # raises naming the key and what it is
                    self.get(keys[i])
                    raise OSError(code, f"cannot read key {keys[i]!r}: {os.strerror(code)}",
                                  os.fsdecode(paths[i]))
        return sizes

    def exists(self, key: str) -> bool:
        return os.path.isfile(self._path(key))

    def version(self, key: str) -> tuple[int, int, int, int] | None:
        # writes replace files by rename, so a new value is a new inode; size and
        # change times catch the rare reuse of an inode number
        try:
            st = os.stat(self._path(key))
        except (FileNotFoundError, NotADirectoryError):
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)

    def getsize(self, key: str) -> int:
        path = self._path(key)
        try:
            st = os.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            st = None
        if st is None or not stat.S_ISREG(st.st_mode):
            raise FileNotFoundError(f"key {key!r} not found in {self!r}")
        return st.st_size

    def get_many(
        self, keys: Sequence[str], byte_ranges: Sequence[ByteRequest | None] | None = None
    ) -> list[bytes | None]:
        if len(keys) < 4:
            return super().get_many(keys, byte_ranges)
        from zarrfast.concurrency import map_unordered_into

        if byte_ranges is None:
            byte_ranges = [None] * len(keys)
        elif len(byte_ranges) != len(keys):
            raise ZarrfastError(f"get_many: {len(keys)} keys but {len(byte_ranges)} byte ranges")
        out: list[bytes | None] = [None] * len(keys)

        def work(i: int) -> None:
            out[i] = self.get(keys[i], byte_ranges[i])

        map_unordered_into(work, range(len(keys)))
        return out

    # -- writes -----------------------------------------------------------
    def _check_inside(self, path: str, key: str, *, check_leaf: bool = True) -> None:
        """Refuse writes whose parent directory resolves outside the root
        (and, with ``check_leaf``, writes to a symbolic link pointing outside)."""
        # Fast path: no directory between the root and the key is a symbolic link
        # (one lstat per key segment; resolving whole paths costs one per component
        # of the root as well).
        d = self._root_str
        linked = False
        for segment in key.split("/")[:-1]:
            d = d + os.sep + segment
            try:
                mode = os.lstat(d).st_mode
            except OSError:
                break  # missing: makedirs creates real directories from here on
            if stat.S_ISLNK(mode):
                linked = True
                break
        if not linked:
            if check_leaf and os.path.islink(path):
                linked = True
            else:
                return
        parent = os.path.dirname(path)
        real_parent = os.path.realpath(parent)
        real_root = os.path.realpath(self._root_str)
        if real_parent != real_root and not real_parent.startswith(real_root + os.sep):
            raise InvalidKeyError(
                f"key {key!r} resolves to {real_parent!r}, outside the store root "
                f"{real_root!r} (through a symbolic link); refusing to write"
            )
        if check_leaf and os.path.islink(path):
            target = os.path.realpath(path)
            if not target.startswith(real_root + os.sep):
                raise InvalidKeyError(
                    f"key {key!r} is a symbolic link to {target!r}, outside the store root; "
                    f"refusing to write"
                )

    @property
    def fast_set_many(self) -> bool:
        """``set_many`` writes a batch of files in one ``nogil`` loop (unless a subclass
        changes ``set``, or every write is fsynced)."""
        return type(self).set is LocalStore.set and not self.fsync

    def set_many(self, items: Any) -> None:
        """Many atomic writes (temporary file, then rename), as :meth:`set` does one by
        one: directories are checked (symbolic links) and made once each, and the
        files of a batch are written by one kernel call
        (:func:`zarrfast.kernels.write_files`).  A key the kernel does not write
        (a symbolic link there, an error) goes through :meth:`set`, which applies its
        checks and raises naming the key."""
        pairs = list(items.items() if isinstance(items, Mapping) else items)
        if not self.fast_set_many or len(pairs) < 2:
            for key, value in pairs:
                self.set(key, value)
            return
        from zarrfast import kernels as _kernels

        self._check_writable(pairs[0][0])
        tmps: list[bytes] = []
        paths: list[bytes] = []
        checked: set[str] = set()
        for key, _ in pairs:
            path = self._path(key)
            parent = os.path.dirname(path)
            if parent not in checked:  # once per directory: links, then makedirs
                self._check_inside(path, key, check_leaf=False)
                if not os.path.isdir(parent):
                    _makedirs(parent, key, path)
                checked.add(parent)
            paths.append(os.fsencode(path))
            tmps.append(os.fsencode(f"{parent}{os.sep}{_TMP_MARK}{_unique()}"))
        errors = _kernels.write_files(tmps, paths, [_contiguous(v) for _, v in pairs])
        for i in np.flatnonzero(errors).tolist():
            self.set(*pairs[i])  # its checks, a retry, or the error naming the key

    def set(self, key: str, value: bytes | bytearray | memoryview) -> None:
        self._check_writable(key)
        path = self._path(key)
        parent = os.path.dirname(path)
        self._check_inside(path, key)  # before makedirs, which would follow a link out
        created: list[str] = []  # directories this write creates (their entries need fsync)
        if self.fsync:
            d = parent
            while d != self._root_str and len(d) > len(self._root_str) and not os.path.isdir(d):
                created.append(d)
                d = os.path.dirname(d)
        tmp = f"{parent}{os.sep}{_TMP_MARK}{_unique()}"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
        try:
            fd = os.open(tmp, flags, 0o666)
        except (FileNotFoundError, NotADirectoryError):  # the parent does not exist yet
            _makedirs(parent, key, path)
            try:
                fd = os.open(tmp, flags, 0o666)
            except FileNotFoundError:  # made, then removed at once
                raise _removed_under(self, key, parent) from None
        try:
            try:
                view = memoryview(value)
                view = (view if view.c_contiguous else memoryview(view.tobytes())).cast("B")
                written = 0
                n = len(view)
                while written < n:
                    written += os.write(fd, view[written:])
                if self.fsync:
                    os.fsync(fd)
            finally:
                os.close(fd)
            try:
                os.replace(tmp, path)
            except FileNotFoundError:  # the directory (and the temporary file) went away
                raise _removed_under(self, key, parent) from None
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        if self.fsync and hasattr(os, "O_DIRECTORY"):
            # the new entry in ``parent``, then the entries of the directories created for
            # it, up to the first one that existed (the root's own entry: the caller's)
            for d in [parent, *(os.path.dirname(c) for c in created)]:
                dfd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
                try:
                    os.fsync(dfd)
                finally:
                    os.close(dfd)

    def delete(self, key: str) -> None:
        self._check_writable(key)
        path = self._path(key)
        self._check_inside(path, key, check_leaf=False)
        try:
            os.unlink(path)
        except (FileNotFoundError, NotADirectoryError):
            pass
        except IsADirectoryError:
            pass
        except PermissionError:
            if not os.path.isdir(path):
                raise

    def delete_dir(self, prefix: str) -> None:
        """Delete every key below ``prefix`` (its directory).  Values written meanwhile
        by other threads or processes are deleted too, by removing the tree again (a
        bounded number of times, then :class:`~zarrfast.errors.ConcurrentWriteError`
        naming the prefix); values already gone are no error."""
        self._check_writable(prefix or "<root>")
        validate_prefix(prefix)
        p = prefix[:-1] if prefix.endswith("/") else prefix
        if p:
            path = self._path(p)
            self._check_inside(path, p, check_leaf=False)
            if os.path.isdir(path) and not os.path.islink(path):
                self._remove_tree(path, p)
            elif os.path.isfile(path) or os.path.islink(path):
                pass  # a key, not a directory: leave it (zarr semantics: prefix + "/")
        else:
            if os.path.isdir(self._root_str):
                for name in os.listdir(self._root_str):
                    full = os.path.join(self._root_str, name)
                    if os.path.isdir(full) and not os.path.islink(full):
                        self._remove_tree(full, name)
                    else:
                        try:
                            os.unlink(full)
                        except FileNotFoundError:
                            pass

    def _remove_tree(self, path: str, prefix: str) -> None:
        last: OSError | None = None
        for _ in range(_DELETE_ATTEMPTS):
            try:
                shutil.rmtree(path, **_RMTREE_IGNORE_MISSING)
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
        return self.list_prefix("")

    def list_prefix(self, prefix: str) -> Iterator[str]:
        validate_prefix(prefix)
        # walk only the deepest directory the prefix names
        base = prefix.rsplit("/", 1)[0] if "/" in prefix else ""
        start = self._path(base) if base else self._root_str
        out: list[str] = []
        if not os.path.isdir(start):
            return iter(out)
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
        return iter(sorted(n for n in names if not _hidden(n)))


def _contiguous(value: Any) -> Any:
    """``value``, or a copy of its bytes when it is not C-contiguous (as ``set`` does)."""
    view = memoryview(value)
    return value if view.c_contiguous else view.tobytes()


def _makedirs(parent: str, key: str, path: str) -> None:
    """Make the directories of a key's file; a file in their way is an error naming it."""
    try:
        os.makedirs(parent, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise ZarrfastError(
            f"cannot write key {key!r}: a parent path of {path!r} is a file"
        ) from None
    except FileNotFoundError:  # a directory made here was removed before its child was
        raise ConcurrentWriteError(
            f"cannot write key {key!r}: the directories of {path!r} were removed while "
            f"they were made (a concurrent delete of its node?); nothing was stored"
        ) from None


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
