"""A key written again to a ``ZipStore`` appends a member of the same name: ``zipfile``
warns ``Duplicate name``, and zarrfast lets the warning through as zarr-python does.
The same steps warn as often with zarrfast as with zarr-python 3.4.2 (the peer)."""

from __future__ import annotations

import tempfile
import warnings

import numpy as np
import pytest

import zarrfast
from zarrfast.storage import ZipStore

_STEPS = """
def steps(zarr, ZipStore, warnings, np, tmp):
    counts = {}

    def run(step, fn):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            out = fn()
        counts[step] = sum("Duplicate name" in str(x.message) for x in w)
        return out

    with ZipStore(tmp + "/a.zip", mode="w") as st:
        g = run("group", lambda: zarr.open_group(st, mode="w"))
        a = run("array", lambda: g.create_array("x", shape=(10,), chunks=(5,), dtype="i4"))
        run("write", lambda: a.__setitem__(slice(None), np.arange(10)))
        run("rewrite chunk", lambda: a.__setitem__(slice(0, 5), 1))
        run("group attrs", lambda: g.attrs.update({"k": 1}))
        run("array attrs", lambda: a.attrs.update({"k": 1}))
        run("resize", lambda: a.resize((20,)))
        run("consolidate", lambda: zarr.consolidate_metadata(st))
    return counts
"""


def test_warns_where_zarr_python_warns(zarr_peer) -> None:
    theirs = zarr_peer.run(_STEPS + """
import tempfile, warnings
import numpy as np
import zarr
from zarr.storage import ZipStore
emit(steps(zarr, ZipStore, warnings, np, tempfile.mkdtemp()))
""")
    namespace: dict = {}
    exec(_STEPS, namespace)
    with tempfile.TemporaryDirectory() as tmp:
        ours = namespace["steps"](zarrfast, ZipStore, warnings, np, tmp)
    assert ours == theirs
    assert theirs["rewrite chunk"] == 1 and theirs["write"] == 0


def test_rewritten_key_reads_its_last_value(tmp_path) -> None:
    with ZipStore(tmp_path / "a.zip", mode="w") as store:
        store.set("k", b"old")
        with pytest.warns(UserWarning, match="Duplicate name: 'k'"):
            store.set("k", b"new")
        assert store.get("k") == b"new"
    with ZipStore(tmp_path / "a.zip") as store:
        assert store.get("k") == b"new"
