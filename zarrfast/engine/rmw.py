"""Read-modify-writes of one stored value that no other writer can interleave.

A partial write of a shard reads the shard, replaces some of its inner chunks and writes
it back.  Two writers doing that at once, each on its own inner chunks, lose one of the
updates unless the read-modify-writes exclude each other.  :func:`read_modify_write`
makes them:

* under the value's lock (:meth:`zarrfast.storage.Store.value_lock`): the threads of
  this process, and other processes where the store can lock (``LocalStore``'s
  ``flock``);
* where the store cannot lock across processes but can write conditionally (S3, GCS,
  Azure: :attr:`~zarrfast.storage.Store.conditional_writes`), each write is made only
  over the version read, and the whole read-modify-write is made again when another
  writer changed the value meanwhile (the threads of this process still take turns
  under the lock, so only other processes make an attempt fail).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

from zarrfast.engine.plan import Options
from zarrfast.errors import ConcurrentWriteError
from zarrfast.storage import Store

__all__ = ["read_modify_write"]


def read_modify_write(store: Store, key: str, update: Callable[[Any], Any], *, limit: int,
                      empty: Callable[[], Any], options: Options,
                      direct: Callable[[], bool] | None = None) -> None:
    """Replace the value at ``key`` with ``update(stored)`` (``stored``: its bytes as
    stored, at most ``limit`` of them, ``None`` when missing; ``update`` returns the new
    bytes, or ``None`` for no value: the key is deleted), excluding every other writer
    of the key.  A conditional write cannot delete: there ``empty()`` gives the bytes
    that stand for no value (a shard with no inner chunk).  Conflicting writers are
    outlasted until ``options.lock_timeout``, then :class:`ConcurrentWriteError` names
    the key, with nothing written.  ``direct``: where nothing is stored at ``key`` (and
    the store locks, no conditional write), ``direct()`` may store the new value itself
    (from where its bytes lie: ``True``, then ``update`` is not called), under the
    lock."""
    caps = store.capabilities
    interprocess = caps.interprocess_locks and options.file_locks
    conditional = caps.conditional_writes and not interprocess
    with store.value_lock(key, timeout=options.lock_timeout, interprocess=interprocess):
        if not conditional:
            stored = store.get_limited(key, limit)
            if stored is None and direct is not None and direct():
                return
            new = update(stored)
            if new is None:
                store.delete(key)
            else:
                store.set(key, new)
            return
        timeout = options.lock_timeout
        deadline = time.monotonic() + timeout
        attempts = 0
        while True:
            stored, version = store.get_versioned(key, limit=limit)
            new = update(stored)
            if new is None:
                if stored is None:
                    return  # nothing stored, nothing to store
                new = empty()
            attempts += 1
            started = time.monotonic()
            if store.set_if_version(key, new, version):
                return
            now = time.monotonic()
            if now >= deadline:
                raise ConcurrentWriteError(
                    f"key {key!r} in {store!r}: changed by other writers during each of "
                    f"{attempts} attempts to write into it in {timeout:g} s (config "
                    f"lock_timeout); this write was not stored")
            # another process won this round: wait about one round trip (at random, so
            # that the losers do not all come back at once), then read it again
            time.sleep(min(random.uniform(0, 2 * (now - started)) + 0.001, deadline - now))
