"""Stores and store data shared by tests in more than one layer."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np
import pytest

from zarrfast.storage import LocalStore


class GetOnlyStore(LocalStore):
    """Overrides ``get`` only: counts calls, and serves chunk keys from ``overlay``
    (the files on disk hold garbage), so any read bypassing ``get`` fails."""

    def __init__(self, root, overlay=None):
        super().__init__(root)
        self.overlay = overlay or {}
        self.calls: list[str] = []
        self._lock = threading.Lock()

    def get(self, key, byte_range=None):
        with self._lock:
            self.calls.append(key)
        if key in self.overlay:
            value = self.overlay[key]
            return value if byte_range is None else LocalStore.get(self, key, byte_range)
        return super().get(key, byte_range)


class GetAndIntoStore(LocalStore):
    def get(self, key, byte_range=None):
        return super().get(key, byte_range)

    def get_into(self, key, out):
        return super().get_into(key, out)


class XorStore(LocalStore):
    """A LocalStore subclass whose chunk files hold their values xor 0x5A: only its own
    ``get`` reads them right (a kernel reading the files itself would not)."""

    def set(self, key, value):
        b = bytes(value)
        super().set(key, bytes(v ^ 0x5A for v in b) if key.startswith("c/") else b)

    def get(self, key, *args, **kwargs):
        v = super().get(key, *args, **kwargs)
        if v is not None and key.startswith("c/"):
            v = bytes(x ^ 0x5A for x in bytes(v))
        return v


def archive_data(seed: int = 0) -> np.ndarray:
    """The float32 values the zip archive tests store."""
    return np.random.default_rng(seed).random((30, 40)).astype("float32")


def make_symlink(target: Path, link: Path, *, is_dir: bool) -> None:
    try:
        os.symlink(target, link, target_is_directory=is_dir)
    except (OSError, NotImplementedError) as e:  # Windows without the privilege
        pytest.skip(f"cannot create symbolic links here: {e}")


#: the marker in the names of LocalStore's temporary files (written, then renamed)
TMP_MARK = ".zarrfast-tmp-"
