"""User attributes of a node, written back to its metadata on every change."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any

from zarrfast.errors import MetadataValidationError
from zarrfast.metadata.limits import check_json_depth

Change = Callable[[dict], dict]


class Attributes(MutableMapping[str, Any]):
    """A live view of a node's ``attributes``; changes are stored immediately.

    ``put(change)`` stores a change: ``change`` maps the attributes as stored to the new
    ones.  The node applies it to the attributes it reads under its lock, so concurrent
    writers' changes to other keys are kept (last writer wins per key)."""

    def __init__(self, get: Callable[[], dict], put: Callable[[Change], None],
                 node: str) -> None:
        self._get = get
        self._put = put
        self._node = node

    def _change(self, change: Change) -> None:
        def checked(current: dict) -> dict:
            attrs = change(dict(current))
            self._check(attrs)
            return attrs

        checked(self._get())  # refuse a bad value before any lock or read
        self._put(checked)

    def _check(self, attrs: dict) -> None:
        check_json_depth(attrs, where=f"{self._node}: attributes")
        try:
            json.dumps(attrs, allow_nan=True)
        except (TypeError, ValueError) as e:
            raise MetadataValidationError(
                f"{self._node}: attributes must be JSON-serializable: {e}"
            ) from None

    def __getitem__(self, key: str) -> Any:
        return self._get()[key]

    def __setitem__(self, key: str, value: Any) -> None:
        def change(attrs: dict) -> dict:
            attrs[key] = value
            return attrs

        self._change(change)

    def __delitem__(self, key: str) -> None:
        if key not in self._get():
            raise KeyError(key)

        def change(attrs: dict) -> dict:
            attrs.pop(key, None)  # (deleted meanwhile by another writer: as well)
            return attrs

        self._change(change)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._get()))

    def __len__(self) -> int:
        return len(self._get())

    def put(self, attrs: dict[str, Any]) -> None:
        """Replace all attributes."""
        attrs = dict(attrs)
        self._change(lambda current: dict(attrs))

    def update(self, *args: Any, **kwargs: Any) -> None:  # one write, not one per key
        new = dict(*args, **kwargs)

        def change(attrs: dict) -> dict:
            attrs.update(new)
            return attrs

        self._change(change)

    def asdict(self) -> dict[str, Any]:
        return dict(self._get())

    def __repr__(self) -> str:
        return repr(self._get())
