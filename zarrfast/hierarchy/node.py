"""What arrays and groups share: where they live and their metadata."""

from __future__ import annotations

from typing import Any

from zarrfast.errors import ReadOnlyError
from zarrfast.storage import Store


class Node:
    """Base of :class:`~zarrfast.Array` and :class:`~zarrfast.Group`."""

    _kind = "node"

    def __init__(self, store: Store, path: str, metadata: Any, read_only: bool | None) -> None:
        self._store = store
        self._path = path
        self._metadata = metadata
        self._read_only = store.read_only if read_only is None else bool(read_only)

    @property
    def store(self) -> Store:
        return self._store

    @property
    def path(self) -> str:
        """Path of the node in its store (``""`` for the root)."""
        return self._path

    @property
    def name(self) -> str:
        """``"/" + path``, as in zarr-python."""
        return "/" + self._path

    @property
    def basename(self) -> str:
        return self._path.rsplit("/", 1)[-1]

    @property
    def metadata(self) -> Any:
        return self._metadata

    @property
    def read_only(self) -> bool:
        return self._read_only

    @property
    def zarr_format(self) -> int:
        return self._metadata.zarr_format

    def _check_writable(self) -> None:
        if self._read_only:
            raise ReadOnlyError(f"{self._kind} {self.name!r} is read-only (opened with mode 'r')")
