"""Locks serialising read-modify-writes of a node's metadata.

An append (or a resize, or an attribute change) reads the node's metadata, changes it
and writes it back; two writers doing that at once lose one update.  They hold the
node's lock meanwhile (:meth:`zarrfast.storage.Store.node_lock`):

* in this process, a reentrant lock per (store, node path), shared by every store
  object of the same data (a ``LocalStore`` per root directory, a ``MemoryStore`` per
  dict) and dropped when no thread holds or waits for it (:class:`KeyedLocks`);
* across processes, where the store can: a ``LocalStore`` locks the file
  :data:`LOCK_NAME` in the array's directory with ``flock`` (:func:`flock_file`),
  created for the update and removed before the lock is released (a waiter that then
  holds the removed file sees it gone and locks the path again).  A lock held by a
  process that dies is released by the kernel; its file stays, empty and harmless.

A read-modify-write of one value (a partial write of a shard) holds the value's lock
(:meth:`zarrfast.storage.Store.value_lock`): in this process a lock per (store, key) as
above; across processes a ``LocalStore`` locks the value's own file with ``flock``
(:func:`flock_value`; only while the value is missing, its creators take turns on a lock
file next to it: a lock file made and removed for every write cost a file creation,
slow on file systems that search for free inodes).

Every wait is bounded by ``config lock_timeout``.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import threading
import time
from collections.abc import Callable, Hashable, Iterator

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: locks within one process only
    fcntl = None  # type: ignore[assignment]

__all__ = ["HAVE_FLOCK", "KeyedLocks", "LOCK_NAME", "NO_FLOCK", "flock_file", "flock_value",
           "node_locks"]

#: the lock file a LocalStore makes in an array's directory while its metadata is updated:
#: never a key (listings skip it); zarr-python and tensorstore ignore it
LOCK_NAME = ".zarrfast.lock"

HAVE_FLOCK = fcntl is not None
#: what ``flock`` says on a file system that has none (or none for a file open to read)
NO_FLOCK = frozenset({errno.EBADF, errno.ENOLCK, errno.EOPNOTSUPP, errno.EINVAL,
                      errno.ENOSYS})


class _Entry:
    __slots__ = ("lock", "users", "depth", "release")

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.users = 0  # threads holding or waiting for the lock
        self.depth = 0  # how many times the holding thread holds it
        #: how to release what the outermost hold took besides ``lock`` (a file lock)
        self.release: Callable[[], None] | None = None


class KeyedLocks:
    """Reentrant locks made on demand for hashable keys."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._entries: dict[Hashable, _Entry] = {}

    @contextlib.contextmanager
    def hold(self, key: Hashable, timeout: float,
             on_timeout: Callable[[], BaseException]) -> Iterator[_Entry]:
        """Hold the lock of ``key`` (waiting at most ``timeout`` seconds, then raising
        ``on_timeout()``); yields its entry, whose ``depth`` is 1 for the outermost hold
        of this thread."""
        with self._guard:
            entry = self._entries.get(key)
            if entry is None:
                entry = self._entries[key] = _Entry()
            entry.users += 1
        try:
            if not entry.lock.acquire(timeout=timeout):
                raise on_timeout()
            try:
                entry.depth += 1
                yield entry
            finally:
                entry.depth -= 1
                entry.lock.release()
        finally:
            with self._guard:
                entry.users -= 1
                if entry.users == 0:
                    del self._entries[key]


#: the locks of every store's nodes in this process
node_locks = KeyedLocks()
#: file descriptors of the lock files this process holds (closed in a forked child, which
#: would otherwise keep the parent's locks held)
_held_fds: set[int] = set()


def _reset_after_fork() -> None:
    global node_locks
    node_locks = KeyedLocks()  # the parent's holders do not exist in the child
    for fd in list(_held_fds):
        try:
            os.close(fd)
        except OSError:
            pass
    _held_fds.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)


def flock_file(lock_path: str, deadline: float, on_timeout: Callable[[], BaseException],
               *, dir_fd: int | None = None) -> Callable[[], None] | None:
    """Lock the file ``lock_path`` (created if missing) with ``flock``, polling until
    ``deadline`` (``time.monotonic()``), then raising ``on_timeout()``.  Returns the
    function releasing it (which removes the file), or ``None`` when its directory does
    not exist (the node is gone: nothing to protect; the caller finds no metadata).
    With ``dir_fd`` (an open directory, closed by the release or on failure)
    ``lock_path`` is a name in that directory, opened, checked and removed relative to
    it without following links."""
    if fcntl is None:  # pragma: no cover
        if dir_fd is not None:
            os.close(dir_fd)
        return None
    nofollow = getattr(os, "O_NOFOLLOW", 0) if dir_fd is not None else 0
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0) | nofollow
    if dir_fd is not None:
        _held_fds.add(dir_fd)

    def drop_dir() -> None:
        if dir_fd is not None:
            _held_fds.discard(dir_fd)
            os.close(dir_fd)

    try:
        while True:
            try:
                fd = os.open(lock_path, flags, 0o666, dir_fd=dir_fd)
            except (FileNotFoundError, NotADirectoryError):
                drop_dir()
                return None
            except PermissionError:  # a read-only directory: an existing file still locks
                try:
                    fd = os.open(lock_path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | nofollow,
                                 dir_fd=dir_fd)
                except (FileNotFoundError, NotADirectoryError):
                    raise PermissionError(f"cannot create the lock file {lock_path!r}") from None
            try:
                _flock(fd, deadline, on_timeout)
                _held_fds.add(fd)
                # a deleted node takes its lock file along: a waiter that then acquires the
                # old, unlinked file must lock the file now there (a new node's), if any
                try:
                    st = os.stat(lock_path, dir_fd=dir_fd, follow_symlinks=dir_fd is None)
                except (FileNotFoundError, NotADirectoryError):
                    st = None
                mine = os.fstat(fd)
                if st is not None and (st.st_ino, st.st_dev) == (mine.st_ino, mine.st_dev):

                    def release(fd: int = fd) -> None:
                        # removed while still locked: a waiter holding the removed file then
                        # finds it gone and locks a new one, so no lock file stays behind
                        try:
                            os.unlink(lock_path, dir_fd=dir_fd)
                        except OSError:
                            pass  # gone with its node (or not ours to remove)
                        # unlocked before it is closed: a child forked while the lock was
                        # taken may hold a copy of the descriptor, which would keep it
                        fcntl.flock(fd, fcntl.LOCK_UN)
                        _held_fds.discard(fd)
                        os.close(fd)
                        drop_dir()

                    return release
            except BaseException as e:
                _held_fds.discard(fd)
                os.close(fd)
                if isinstance(e, OSError) and e.errno in NO_FLOCK \
                        and not isinstance(e, BlockingIOError):
                    # a file system without flock: nobody holds this file; it goes
                    try:
                        os.unlink(lock_path, dir_fd=dir_fd)
                    except OSError:
                        pass
                raise
            fcntl.flock(fd, fcntl.LOCK_UN)
            _held_fds.discard(fd)
            os.close(fd)  # a stale file: try again (or find the directory gone)
    except BaseException:
        drop_dir()
        raise


def _flock(fd: int, deadline: float, on_timeout: Callable[[], BaseException]) -> None:
    """``flock(fd, LOCK_EX)``, polling until ``deadline``, then ``on_timeout()``."""
    delay = 0.0005
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise on_timeout() from None
            time.sleep(delay)
            delay = min(delay * 2, 0.02)


class NotAFile(OSError):
    """What is at a value's key is no regular file (a directory, a FIFO, a socket, a
    device): ``mode`` says which."""

    def __init__(self, name: str, mode: int) -> None:
        super().__init__(f"{name!r} is not a regular file")
        self.mode = mode


def _open_value(dir_fd: int, name: str) -> int | None:
    """The value ``name`` in ``dir_fd`` opened to be locked (``None``: missing, or a
    link, never followed): for writing where it may be (``flock`` over NFS needs it),
    else for reading; never blocking (a FIFO).  Raises :class:`NotAFile` for anything
    but a regular file."""
    flags = (getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
             | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    fd = None
    for mode in (os.O_RDWR, os.O_RDONLY):
        try:
            fd = os.open(name, mode | flags, dir_fd=dir_fd)
            break
        except FileNotFoundError:
            return None
        except PermissionError:
            continue
        except OSError as e:
            if e.errno == errno.ELOOP:  # a link at the key: the creators' lock stands in
                return None
            if e.errno in (errno.EISDIR, errno.ENXIO, errno.EOPNOTSUPP):  # dir, socket
                st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
                raise NotAFile(name, st.st_mode) from None
            raise
    if fd is None:
        raise PermissionError(f"cannot open {name!r} to lock it")
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise NotAFile(name, st.st_mode)
    return fd


def flock_value(dir_fd: int, name: str, deadline: float,
                on_timeout: Callable[[], BaseException], *, create_lock: str
                ) -> Callable[[], None]:
    """Lock the value (a file) ``name`` in the open directory ``dir_fd`` against other
    processes for a read-modify-write of it: ``flock`` on the value's own file, the one
    at ``name`` once the lock is held (a writer replaces a value by a rename: a waiter
    that then holds the replaced file locks the new one).  While the value is missing,
    its creators take turns on the lock file ``create_lock`` in the same directory
    (:func:`flock_file`: made for the write, removed after it), looking again once they
    hold it; that lock is always taken before a value's, never after.  So only the first
    write of a value makes a file of its own.  Polls until ``deadline``, then raises
    ``on_timeout()``.  Takes ``dir_fd`` (closed by the release, or on failure).  Returns
    the function releasing it.

    Raises ``OSError`` when the file system cannot ``flock`` such a file (``ENOLCK``,
    ``EOPNOTSUPP``, ``EBADF`` over some network file systems)."""
    creating: Callable[[], None] | None = None  # the release of the creators' lock
    _held_fds.add(dir_fd)

    def release_rest() -> None:
        _held_fds.discard(dir_fd)
        os.close(dir_fd)
        if creating is not None:
            creating()

    try:
        while True:
            fd = _open_value(dir_fd, name)
            if fd is None:
                if creating is not None:  # missing, and every creator of it waits for us
                    return release_rest
                creating = flock_file(create_lock, deadline, on_timeout,
                                      dir_fd=os.dup(dir_fd))
                if creating is None:  # the directory was removed meanwhile
                    raise FileNotFoundError(f"cannot lock {name!r}: its directory is gone")
                continue  # look again, now that no other creator can make it
            _held_fds.add(fd)
            try:
                _flock(fd, deadline, on_timeout)
                mine = os.fstat(fd)
                try:
                    st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
                except FileNotFoundError:
                    st = None
            except BaseException:
                _held_fds.discard(fd)
                os.close(fd)
                raise
            if st is not None and (st.st_ino, st.st_dev) == (mine.st_ino, mine.st_dev):

                def release(fd: int = fd) -> None:
                    # unlocked before it is closed: a child forked while the lock was
                    # held may keep a copy of the descriptor
                    fcntl.flock(fd, fcntl.LOCK_UN)
                    _held_fds.discard(fd)
                    os.close(fd)
                    release_rest()

                return release
            # replaced or removed while this waited: lock what is there now
            fcntl.flock(fd, fcntl.LOCK_UN)
            _held_fds.discard(fd)
            os.close(fd)
    except BaseException:
        release_rest()
        raise
