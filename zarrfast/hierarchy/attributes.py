"""User attributes of a node, written back to its metadata on every change."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any

from zarrfast.errors import MetadataValidationError
from zarrfast.metadata.limits import check_json_depth


class Attributes(MutableMapping[str, Any]):
    """A live view of a node's ``attributes``; changes are stored immediately."""

    def __init__(self, get: Callable[[], dict], put: Callable[[dict], None], node: str) -> None:
        self._get = get
        self._put = put
        self._node = node

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
        attrs = dict(self._get())
        attrs[key] = value
        self._check(attrs)
        self._put(attrs)

    def __delitem__(self, key: str) -> None:
        attrs = dict(self._get())
        del attrs[key]
        self._put(attrs)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._get()))

    def __len__(self) -> int:
        return len(self._get())

    def put(self, attrs: dict[str, Any]) -> None:
        """Replace all attributes."""
        attrs = dict(attrs)
        self._check(attrs)
        self._put(attrs)

    def update(self, *args: Any, **kwargs: Any) -> None:  # one write, not one per key
        attrs = dict(self._get())
        attrs.update(*args, **kwargs)
        self._check(attrs)
        self._put(attrs)

    def asdict(self) -> dict[str, Any]:
        return dict(self._get())

    def __repr__(self) -> str:
        return repr(self._get())
