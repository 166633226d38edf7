"""Refusals of the module-level functions in zarr-python 3.4.2's words (the peer says
them too): a mode that writes on a read-only store, an invalid mode, ``mode='w-'`` where
data is, a ``save_group`` keyword that is not an array, a fill value that is not a number.
zarrfast still opens what exists with ``mode='a'`` or ``'r+'`` on a read-only store,
where zarr-python refuses (docs/migrating.md)."""

from __future__ import annotations

import numpy as np
import pytest

import zarrfast
from zarrfast.errors import ReadOnlyError
from zarrfast.storage import MemoryStore

pytestmark = pytest.mark.interop

CASES = {
    "open_group w": ("open_group", {"mode": "w"}, "ro"),
    "open_array w": ("open_array", {"mode": "w", "shape": (2,)}, "ro"),
    "open w": ("open", {"mode": "w", "shape": (2,)}, "ro"),
    "create w": ("create", {"mode": "w", "shape": (2,)}, "ro"),
    "open_array a creates": ("open_array", {"mode": "a", "shape": (2,), "path": "new"}, "ro"),
    "open_group a creates": ("open_group", {"mode": "a", "path": "new"}, "ro"),
    "create x": ("create", {"mode": "x", "shape": (2,)}, "rw"),
    "create w-": ("create", {"mode": "w-", "shape": (2,)}, "seeded"),
    "save_group": ("save_group", {"mode": "w"}, "rw"),
    "fill": ("create", {"shape": (2,), "dtype": "int32", "fill_value": "not a number"}, "rw"),
}
PHRASES = {
    "open_group w": "Store is read-only but mode is 'w'",
    "open_array w": "Store is read-only but mode is 'w'",
    "open w": "Store is read-only but mode is 'w'",
    "create w": "Store is read-only but mode is 'w'",
    "open_array a creates": "Store is read-only but mode is 'a'",
    "open_group a creates": "Store is read-only but mode is 'a'",
    "create x": "Invalid mode: x",
    "create w-": "with mode 'w-' because it already contains data",
    "save_group": "Keyword argument 'mode' must be a numpy or other NDArrayLike array",
    "fill": "invalid literal",
}

_PEER = """
import zarr
from zarr.storage import MemoryStore
out = {}
for name, (fn, kw, store) in ARGS.items():
    s = MemoryStore()
    zarr.create_group(s)
    if store == "seeded":
        zarr.create_array(s, shape=(2,), dtype="i1", overwrite=True)
    if store == "ro":
        s = s.with_read_only(True)
    kw = dict(kw)
    try:
        getattr(zarr, fn)(s, **kw) if fn == "save_group" else getattr(zarr, fn)(store=s, **kw)
        out[name] = None
    except Exception as e:
        out[name] = [type(e).__mro__[1].__name__ if type(e).__module__.startswith("zarr")
                     else type(e).__name__, str(e)]
emit(out)
"""


def _ours(fn, kw, store):
    s = MemoryStore()
    zarrfast.create_group(s)
    if store == "seeded":
        zarrfast.create_array(s, shape=(2,), dtype="i1", overwrite=True)
    if store == "ro":
        s = s.with_read_only(True)
    if fn == "save_group":
        return getattr(zarrfast, fn)(s, **kw)
    return getattr(zarrfast, fn)(store=s, **kw)


def test_refusals_in_zarr_pythons_words(zarr_peer) -> None:
    theirs = zarr_peer.run(_PEER, CASES)
    for name, (fn, kw, store) in CASES.items():
        assert theirs[name] is not None and PHRASES[name] in theirs[name][1], (name, theirs)
        with pytest.raises(ValueError if name != "save_group" else TypeError,
                           match=PHRASES[name]):
            _ours(fn, kw, store)


def test_read_only_store_refused_before_anything_is_read() -> None:
    s = MemoryStore()
    zarrfast.create_array(s, shape=(2,), dtype="i1")
    with pytest.raises(ReadOnlyError, match="mode is 'w-'"):
        zarrfast.open_array(store=s.with_read_only(True), mode="w-", shape=(2,))
    with pytest.raises(FileExistsError, match="mode 'w-'"):
        zarrfast.create(shape=(2,), store=s, mode="w-", overwrite=True)


def test_what_exists_still_opens_with_a_and_r_plus_on_a_read_only_store() -> None:
    s = MemoryStore()
    zarrfast.create_array(s, shape=(2,), dtype="i1", fill_value=3)
    ro = s.with_read_only(True)
    for mode in ("a", "r+"):
        assert zarrfast.open_array(store=ro, mode=mode)[:].tolist() == [3, 3]
        assert isinstance(zarrfast.open(store=ro, mode=mode), zarrfast.Array)
    with pytest.raises(ReadOnlyError):
        zarrfast.open_array(store=ro, mode="a")[0] = 1
    assert np.all(zarrfast.open_array(store=s)[:] == 3)
