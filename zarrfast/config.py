"""Runtime configuration.

Values come from environment variables at import time and can be changed with
:func:`set` or temporarily with the :func:`config.set` context manager::

    with zarrfast.config.set(threads=1, write_empty_chunks=True):
        ...

=====================  =========================  ==========================
key                    environment variable       default
=====================  =========================  ==========================
``threads``            ``ZARRFAST_THREADS``       number of CPUs
``write_empty_chunks`` ``ZARRFAST_WRITE_EMPTY``   ``False``
``shard_coalesce_gap`` ``ZARRFAST_SHARD_COALESCE  65536 (bytes): inner chunks
                       _GAP``                     of a shard closer than this
                                                  are fetched in one request
``shard_index_cache``  ``ZARRFAST_SHARD_INDEX_    4096 shard indexes cached
                       CACHE``                    per array
``io_concurrency``     ``ZARRFAST_IO_CONCURRENCY`` 64 requests in flight at
                                                  once to a remote store
``vlen_bytes_per_``    ``ZARRFAST_VLEN_BYTES_PER_ 1024: a chunk of variable-
``element``            ELEMENT``                  length elements (strings,
                                                  bytes, objects) decodes to at
                                                  most this many bytes per
                                                  element (and 64 MiB at least)
``lock_timeout``       ``ZARRFAST_LOCK_TIMEOUT``  60 (seconds): longest wait
                                                  for the lock of a node's
                                                  metadata (append, resize,
                                                  attributes) before
                                                  ``LockTimeoutError``
``remote_store``       ``ZARRFAST_REMOTE_STORE``  ``"auto"``: which store a
                                                  remote URL gets: ``"auto"``
                                                  (``ObjectStore`` for s3, gs,
                                                  az, http(s) when obstore is
                                                  installed and the options
                                                  translate, else
                                                  ``FsspecStore``),
                                                  ``"obstore"`` or ``"fsspec"``
=====================  =========================  ==========================
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from typing import Any

from zarrfast.errors import ZarrfastError

__all__ = ["get", "set", "defaults"]

_lock = threading.Lock()


def _env_int(name: str, default: int, *, minimum: int = 1) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ZarrfastError(f"environment variable {name}={raw!r} is not an integer") from None
    if value < minimum:
        raise ZarrfastError(f"environment variable {name}={raw!r} must be >= {minimum}")
    return value


def _env_float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ZarrfastError(f"environment variable {name}={raw!r} is not a number") from None
    if not value > 0 or value == float("inf"):
        raise ZarrfastError(f"environment variable {name}={raw!r} must be a finite number > 0")
    return value


def _env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    low = raw.strip().lower()
    if low in ("1", "true", "yes", "on"):
        return True
    if low in ("0", "false", "no", "off"):
        return False
    raise ZarrfastError(f"environment variable {name}={raw!r} is not a boolean (use 1/0)")


#: values of the ``remote_store`` key
REMOTE_STORES = ("auto", "obstore", "fsspec")


def _env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    value = raw.strip().lower()
    if value not in choices:
        raise ZarrfastError(f"environment variable {name}={raw!r} must be one of {choices}")
    return value


def defaults() -> dict[str, Any]:
    """The configuration as the environment sets it."""
    return {
        "threads": _env_int("ZARRFAST_THREADS", os.cpu_count() or 1),
        "write_empty_chunks": _env_bool("ZARRFAST_WRITE_EMPTY", False),
        "shard_coalesce_gap": _env_int("ZARRFAST_SHARD_COALESCE_GAP", 64 * 1024, minimum=0),
        "shard_index_cache": _env_int("ZARRFAST_SHARD_INDEX_CACHE", 4096),
        "io_concurrency": _env_int("ZARRFAST_IO_CONCURRENCY", 64),
        "vlen_bytes_per_element": _env_int("ZARRFAST_VLEN_BYTES_PER_ELEMENT", 1024),
        "lock_timeout": _env_float("ZARRFAST_LOCK_TIMEOUT", 60.0),
        "remote_store": _env_choice("ZARRFAST_REMOTE_STORE", "auto", REMOTE_STORES),
    }


_values: dict[str, Any] = defaults()


def _validate(key: str, value: Any) -> Any:
    if key not in _values:
        raise ZarrfastError(f"unknown config key {key!r}; known keys: {sorted(_values)}")
    if key in ("threads", "shard_index_cache", "shard_coalesce_gap", "io_concurrency",
               "vlen_bytes_per_element"):
        minimum = 0 if key == "shard_coalesce_gap" else 1
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise ZarrfastError(f"config {key}={value!r} must be an integer >= {minimum}")
    elif key == "lock_timeout":
        if (isinstance(value, bool) or not isinstance(value, (int, float))
                or not 0 < value < float("inf")):
            raise ZarrfastError(f"config lock_timeout={value!r} must be a finite number > 0 "
                                f"(seconds)")
        value = float(value)
    elif key == "remote_store":
        if value not in REMOTE_STORES:
            raise ZarrfastError(f"config remote_store={value!r} must be one of {REMOTE_STORES}")
    elif key == "write_empty_chunks":
        if not isinstance(value, bool):
            raise ZarrfastError(f"config write_empty_chunks={value!r} must be a bool")
    return value


def get(key: str) -> Any:
    """Return the current value of ``key``."""
    try:
        return _values[key]
    except KeyError:
        raise ZarrfastError(f"unknown config key {key!r}; known keys: {sorted(_values)}") from None


class _Setter(contextlib.AbstractContextManager):
    def __init__(self, old: dict[str, Any]) -> None:
        self._old = old

    def __exit__(self, *exc: object) -> None:
        with _lock:
            _values.update(self._old)


def set(**kwargs: Any) -> contextlib.AbstractContextManager:  # noqa: A001
    """Set configuration values; usable as a context manager that restores them."""
    checked = {k: _validate(k, v) for k, v in kwargs.items()}
    with _lock:
        old = {k: _values[k] for k in checked}
        _values.update(checked)
    return _Setter(old)


def items() -> Iterator[tuple[str, Any]]:
    return iter(dict(_values).items())
