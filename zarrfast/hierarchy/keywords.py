"""Keyword arguments: an unknown name is an error, never ignored.

A public function that passes ``**kwargs`` on checks them first against the names it (and
what it passes them to) takes, with :func:`check_keywords`, and raises the ``TypeError``
Python would, naming the function and the keyword, with a "did you mean" hint (a
function without ``**kwargs`` gets the hint too, decorated with :func:`checked`)::

    open_group() got an unexpected keyword argument 'mdoe'; did you mean 'mode'?

zarr-python takes some keywords and ignores them, warning "<name> is not yet
implemented" (``ZarrRuntimeWarning``); zarrfast takes the same ones and warns the same
way (:data:`IGNORED`, :func:`warn_ignored`).  Its deprecated ``write_empty_chunks``
keyword is taken, and warned about in its words (:func:`warn_write_empty_chunks`).
"""

from __future__ import annotations

import difflib
import functools
import inspect
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from zarrfast.errors import ZarrRuntimeWarning

__all__ = ["IGNORED", "check_keywords", "checked", "keyword_names", "warn_ignored",
           "warn_write_empty_chunks"]

#: what zarr-python 3.4 takes and ignores (``zarr.create``, ``zarr.open_group``, ...):
#: zarrfast takes these too, ignores them, and warns as zarr-python does
IGNORED = ("synchronizer", "chunk_store", "cache_metadata", "cache_attrs", "meta_array")


def keyword_names(*functions: Callable[..., Any], exclude: Iterable[str] = ()) -> frozenset[str]:
    """The names the ``functions`` take by keyword, less ``exclude``."""
    out: set[str] = set()
    for fn in functions:
        for p in inspect.signature(fn).parameters.values():
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
                out.add(p.name)
    return frozenset(out - set(exclude))


def check_keywords(function: str, given: Iterable[str], accepted: Iterable[str]) -> None:
    """Raise ``TypeError`` for the first of ``given`` not in ``accepted``, as Python does
    for a function called ``function`` (with the closest accepted name as a hint)."""
    accepted = set(accepted)
    for name in given:
        if name not in accepted:
            close = difflib.get_close_matches(name, sorted(accepted), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise TypeError(f"{function}() got an unexpected keyword argument {name!r}{hint}")


def warn_ignored(values: Mapping[str, Any], stacklevel: int = 3) -> None:
    """zarr-python's warning for each keyword it ignores that was given a value other
    than ``None``."""
    for name, value in values.items():
        if value is not None:
            warnings.warn(f"{name} is not yet implemented", ZarrRuntimeWarning,
                          stacklevel=stacklevel)


def warn_write_empty_chunks(stacklevel: int = 3) -> None:
    """zarr-python's deprecation of the ``write_empty_chunks`` keyword, in its words (the
    value is still used)."""
    warnings.warn(
        "The `write_empty_chunks` keyword argument is deprecated and will be removed in "
        "future versions. To control whether empty chunks are written to storage, either "
        "use the `config` keyword argument, as in `config={'write_empty_chunks': True}`,"
        "or change the global 'array.write_empty_chunks' configuration variable.",
        ZarrRuntimeWarning, stacklevel=stacklevel)


def checked(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` (which takes no ``**kwargs``), refusing an unknown keyword with the hint of
    :func:`check_keywords` (Python's own ``TypeError`` gives none).  A call with only
    known keywords costs one subset test."""
    accepted = keyword_names(fn)
    name = fn.__name__

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        if not accepted.issuperset(kwargs):
            check_keywords(name, kwargs, accepted)
        return fn(*args, **kwargs)

    return call
