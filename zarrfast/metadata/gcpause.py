"""Pausing Python's cyclic garbage collector while many objects are made at once.

Parsing the consolidated metadata of a hierarchy of 20,000 arrays makes about a million
dicts and lists, and listing it 20,000 nodes: each few hundred of them start a collection,
and the full ones walk every object made so far (a quarter of the time, measured).  None
of these objects are garbage while they are made, so the collector is paused for the
while (as Mercurial's ``util.nogc`` does when it reads large manifests), then resumed if
it was running: threads pausing at once resume it when the last one is done.
"""

from __future__ import annotations

import contextlib
import gc
import os
import threading
from collections.abc import Iterator

__all__ = ["collector_paused"]

_lock = threading.Lock()
_pausers = 0
_resume = False


def _after_fork() -> None:
    """In a forked child no thread pauses the collector: a pause the parent's threads
    held when it forked ends here (the collector runs again if it ran before), and the
    lock is new (one they held would stay held)."""
    global _lock, _pausers, _resume
    if _pausers and _resume:
        gc.enable()
    _lock, _pausers, _resume = threading.Lock(), 0, False


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


@contextlib.contextmanager
def collector_paused(pause: bool = True) -> Iterator[None]:
    """Run the ``with`` block with the cyclic garbage collector paused (``pause``: only
    then; reference counting frees objects as ever).  A collector that was already
    disabled stays so."""
    global _pausers, _resume
    if not pause:
        yield
        return
    with _lock:
        if _pausers == 0:
            _resume = gc.isenabled()
            gc.disable()
        _pausers += 1
    try:
        yield
    finally:
        with _lock:
            _pausers -= 1
            if _pausers == 0 and _resume:
                gc.enable()
