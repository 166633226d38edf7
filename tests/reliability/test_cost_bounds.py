"""Cost bounded by the data, not the grid (issue "Reliability II", class 7).

* Resizing an array whose chunk grid has ~10**16 positions and three stored chunks
  touches the stored chunks only (it lists the store instead of enumerating the grid),
  for every chunk key encoding and for shards;
* listing the members of a consolidated group of 20000 arrays takes time linear in the
  members (it was quadratic: every member lookup scanned every member);
* running out of memory for an output array or a chunk buffer is never a bare
  ``MemoryError``: an :class:`~zarrfast.errors.AllocationError` (also a ``MemoryError``)
  names the array, what was being allocated, its bytes, shape and dtype.

What used to hang or take minutes runs in a child Python with a timeout, so that a
regression fails instead of hanging the suite; what allocates more than the memory there
is runs in a child Python limited to 2 GiB of address space.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import zarrfast

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="needs resource.setrlimit")


def _child(code: str, cwd: Path, *, timeout: float = 20, limit_gib: int | None = None,
           what: str = "") -> str:
    """Run ``code`` in a child Python (with at most ``limit_gib`` GiB of address space);
    its standard output.  Taking longer than ``timeout`` seconds fails the test."""
    prelude = ""
    if limit_gib is not None:
        prelude = textwrap.dedent(f"""
            import resource
            resource.setrlimit(resource.RLIMIT_AS, ({limit_gib} << 30, {limit_gib} << 30))
        """)
    env = {**os.environ, "MALLOC_ARENA_MAX": "2"}  # (per-thread arenas take address space)
    try:
        proc = subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)],
                              capture_output=True, text=True, timeout=timeout, cwd=cwd,
                              env=env)
    except subprocess.TimeoutExpired:
        proc = None
    if proc is None:
        pytest.fail(f"{what} took more than {timeout} s: its cost grows with the grid (or "
                    f"the square of the members), not with the data")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


# -- (a) resizing a huge, mostly empty grid --------------------------------------------

#: keyword arguments of create_array, and the key (below the array) of the chunk at
#: grid position (10**7, 10**7) -- a shard of (20, 20) for the sharded variant
VARIANTS = {
    "v3 c/ keys": ({"zarr_format": 3}, "c/10000000/10000000"),
    "v3 c. keys": ({"zarr_format": 3, "chunk_key_encoding": {
        "name": "default", "configuration": {"separator": "."}}}, "c.10000000.10000000"),
    "v2 . keys": ({"zarr_format": 2}, "10000000.10000000"),
    "v2 / keys": ({"zarr_format": 2, "chunk_key_encoding": {
        "name": "v2", "configuration": {"separator": "/"}}}, "10000000/10000000"),
    "v3 with v2 keys": ({"zarr_format": 3, "chunk_key_encoding": {
        "name": "v2", "configuration": {"separator": "."}}}, "10000000.10000000"),
    "v3 sharded": ({"zarr_format": 3, "shards": (20, 20)}, "c/5000000/5000000"),
}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_resizing_a_huge_sparse_grid_touches_only_the_stored_chunks(tmp_path, subprocess_cwd,
                                                                    variant):
    """Shape (10**9, 10**9) in (10, 10) chunks (10**16 grid positions), three chunks
    written: shrinking it deletes the stored chunk outside the new shape in well under a
    second, keeps the others and their data, and leaves keys that are not chunks alone;
    counting the stored chunks lists them too."""
    kwargs, far_key = VARIANTS[variant]
    code = f"""
        import json
        import numpy as np
        import zarrfast
        out = {{}}
        for kind, store in (("local", zarrfast.LocalStore({str(tmp_path / "data")!r})),
                            ("memory", zarrfast.MemoryStore())):
            a = zarrfast.create_array(store, name="g/big", shape=(10**9, 10**9),
                                      chunks=(10, 10), dtype="u1", fill_value=0,
                                      **{kwargs!r})
            a[0:10, 0:10] = 1
            a[20:30, 0:10] = 2
            a[10**8:10**8 + 10, 10**8:10**8 + 10] = 3
            store.set("g/big/notes", b"not a chunk")  # a stray key below the array
            before = sorted(store.list())
            n_before = a.nchunks_initialized
            a.resize((5 * 10**8, 5))
            after_first = sorted(store.list())
            n_after = a.nchunks_initialized
            a.resize((10**9, 10**9))  # growing deletes nothing; the far chunk is gone
            far = int(a[10**8:10**8 + 10, 10**8:10**8 + 10].max())
            a.resize((15, 10**9))  # the first dimension shrinks: chunk row 2 goes
            b = zarrfast.open_array(store, path="g/big", mode="r")
            out[kind] = dict(
                before=before, after_first=after_first, after=sorted(store.list()),
                n_before=n_before, n_after=n_after, shape=list(b.shape),
                kept=b[0:10, 0:10].tolist(), gone=b[10:15, 0:10].tolist(), far=far)
        print(json.dumps(out))
    """
    result = json.loads(_child(code, subprocess_cwd, what=f"resizing ({variant})"))
    sharded = "shards" in kwargs
    for kind, r in result.items():
        removed = sorted(set(r["before"]) - set(r["after_first"]))
        assert removed == [f"g/big/{far_key}"], (kind, removed)
        assert "g/big/notes" in r["after"]
        # three chunks (shards) stored, then two; zarr-python counts a shard's inner chunks
        assert (r["n_before"], r["n_after"]) == ((12, 8) if sharded else (3, 2)), kind
        assert r["shape"] == [15, 10**9]
        assert r["kept"] == np.ones((10, 10), int).tolist()
        assert r["gone"] == np.zeros((5, 10), int).tolist()
        assert r["far"] == 0
        # chunk row 2 went with the last resize; the chunk (shard) at (0, 0) stays
        stored = [k for k in r["after"] if k.startswith("g/big/") and k.rsplit("/", 1)[-1]
                  not in ("notes", "zarr.json", ".zarray", ".zattrs")]
        assert len(stored) == 1, (kind, stored)


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_resizing_by_listing_and_by_enumerating_agree(monkeypatch, variant):
    """The two ways of finding the chunks to delete (grid positions one by one for small
    grids, a listing of the store for large ones) leave the same keys and data, as the
    grid-enumerating resize did: chunks wholly outside the new shape are deleted, partial
    edge chunks keep their data (as zarr-python)."""
    from zarrfast.engine import stored

    kwargs, _ = VARIANTS[variant]
    chunks, shards = (3, 2), ((6, 4) if "shards" in kwargs else None)
    kwargs = {k: v for k, v in kwargs.items() if k != "shards"}
    rng = random.Random(variant)
    steps = [(rng.randint(0, 40), rng.randint(0, 30)) for _ in range(6)]
    results = []
    for limit in (10**9, 0):  # enumerate always; list always
        monkeypatch.setattr(stored, "ENUMERATE_LIMIT", limit)
        store = zarrfast.MemoryStore()
        a = zarrfast.create_array(store, name="a", shape=(40, 30), chunks=chunks, shards=shards,
                                  dtype="i2", fill_value=-1, **kwargs)
        data = np.arange(1200, dtype="i2").reshape(40, 30)
        a[...] = data
        trace = []
        for shape in steps:
            a.resize(shape)
            trace.append((sorted(store.list()), a[...].tolist(), a.nchunks_initialized))
        a.resize((40, 30))
        trace.append((sorted(store.list()), a[...].tolist(), a.nchunks_initialized))
        results.append(trace)
    assert results[0] == results[1]
    # what was never cut off keeps its data; the rest reads as the fill value
    common = tuple(min(s[d] for s in steps) for d in range(2))
    final = np.array(results[1][-1][1])
    np.testing.assert_array_equal(final[:common[0], :common[1]], data[:common[0], :common[1]])


# -- (b) listing a consolidated group of many members ----------------------------------

N_MEMBERS = 20000


@pytest.mark.parametrize("zarr_format", [3, 2])
def test_listing_a_consolidated_group_of_20000_arrays_is_linear(tmp_path, subprocess_cwd,
                                                                zarr_format):
    """keys(), len(), members() (one level and all), arrays(), array_keys(), groups() and
    group_keys() of a consolidated group with 20000 arrays and a nested group: a few
    seconds (it was quadratic: minutes), with the answers the hierarchy gives."""
    code = f"""
        import itertools, json, time
        import zarrfast
        store = zarrfast.LocalStore({str(tmp_path / "data")!r})
        root = zarrfast.open_group(store, mode="w", zarr_format={zarr_format})
        root.create_array("a00000", shape=(4,), chunks=(2,), dtype="u1")
        sub = root.create_group("sub")
        sub.create_array("x", shape=(3,), dtype="f8")
        sub.create_group("deeper").create_array("y", shape=(2, 2), dtype="i4")
        zarrfast.consolidate_metadata(store)
        # the other arrays exist in the consolidated metadata only (what is listed)
        if {zarr_format} == 3:
            doc = json.loads(store.get("zarr.json"))
            entries = doc["consolidated_metadata"]["metadata"]
            for i in range(1, {N_MEMBERS}):
                entries[f"a{{i:05d}}"] = entries["a00000"]
            store.set("zarr.json", json.dumps(doc).encode())
        else:
            doc = json.loads(store.get(".zmetadata"))
            entries = doc["metadata"]
            for i in range(1, {N_MEMBERS}):
                entries[f"a{{i:05d}}/.zarray"] = entries["a00000/.zarray"]
                entries[f"a{{i:05d}}/.zattrs"] = {{}}
            store.set(".zmetadata", json.dumps(doc).encode())
        g = zarrfast.open_consolidated(store)
        keys = list(g.keys())
        n = len(g)
        top = g.members()
        everything = g.members(max_depth=None)
        arrays = list(itertools.islice(g.arrays(), 3))  # (makes three arrays, not all)
        array_keys = list(g.array_keys())
        group_keys = list(g.group_keys())
        groups = list(g.groups())
        sub = g["sub"]
        print(json.dumps(dict(
            keys=keys, n=n, top=[k for k, _ in top],
            everything=[(k, type(v).__name__) for k, v in everything],
            arrays=[(k, list(v.shape)) for k, v in arrays],
            array_keys=array_keys, group_keys=group_keys,
            groups=[(k, type(v).__name__) for k, v in groups],
            sub=[(k, type(v).__name__) for k, v in sub.members(max_depth=None)],
            sub_keys=list(sub.keys()), deeper_y=list(sub["deeper"]["y"].shape),
            contains=["sub/deeper/y" in g, "sub/x" in g, "a19999" in g, "nope" in g])))
    """
    r = json.loads(_child(code, subprocess_cwd, timeout=40,
                          what=f"listing {N_MEMBERS} consolidated members"))
    names = [f"a{i:05d}" for i in range(N_MEMBERS)]
    assert r["keys"] == [*names, "sub"] and r["n"] == N_MEMBERS + 1
    assert r["top"] == r["keys"]
    assert r["everything"] == ([[n, "Array"] for n in names]
                               + [["sub", "Group"], ["sub/deeper", "Group"],
                                  ["sub/deeper/y", "Array"], ["sub/x", "Array"]])
    assert r["arrays"] == [[n, [4]] for n in names[:3]]
    assert r["array_keys"] == names
    assert r["group_keys"] == ["sub"] and r["groups"] == [["sub", "Group"]]
    assert r["sub"] == [["deeper", "Group"], ["deeper/y", "Array"], ["x", "Array"]]
    assert r["sub_keys"] == ["deeper", "x"] and r["deeper_y"] == [2, 2]
    assert r["contains"] == [True, True, True, False]


# -- (c) out of memory: a named error, never a bare MemoryError ------------------------

_OOM = """
    import json
    import zarrfast
    from zarrfast.errors import ZarrfastError
    store = zarrfast.LocalStore({root!r})
    a = zarrfast.open_array(store, path="big", mode="r+")
    try:
        {action}
    except MemoryError as e:
        print(json.dumps(dict(type=type(e).__name__, message=str(e),
                              zarrfast=isinstance(e, ZarrfastError),
                              allocation=type(e).__name__.endswith("AllocationError"),
                              decode=isinstance(e, zarrfast.errors.ChunkDecodeError))))
    except Exception as e:
        print(json.dumps(dict(type=type(e).__name__, message=str(e), zarrfast=False,
                              allocation=False, decode=False)))
    else:
        print(json.dumps(dict(type=None, message="no error")))
"""


def _zstd_frame_of_4_gib_zeros() -> bytes:
    from _helpers.bombs import zstd_rle_frame

    return zstd_rle_frame(2**32, content_size=True)  # ~128 KiB stored


#: (create_array arguments, what to run, bytes stored at big/c/0 or None, and the
#: message's expected pieces)
OOM_CASES = {
    "reading a selection of 8 GiB": (
        {"shape": (2**33,), "chunks": (2**20,), "dtype": "u1"}, "a[...]", None,
        ["array '/big'", "the result of the selection", "8589934592 bytes", "8.0 GiB",
         "shape (8589934592,)", "dtype uint8"]),
    "an orthogonal selection of 4 GiB": (
        {"shape": (2**17, 2**17), "chunks": (2**10, 2**10), "dtype": "u1"},
        "a.oindex[list(range(2**15)), :]", None,
        ["array '/big'", "orthogonal selection", "4294967296 bytes",
         "shape (32768, 131072)", "dtype uint8"]),
    "writing into a chunk of 4 GiB": (
        {"shape": (2**32,), "chunks": (2**32,), "dtype": "u1"}, "a[0] = 1", None,
        ["array '/big'", "chunk 'big/c/0'", "a chunk buffer", "4294967296 bytes",
         "shape (4294967296,)", "dtype uint8"]),
    "decoding a stored chunk of 4 GiB": (
        {"shape": (2**31,), "chunks": (2**31,), "dtype": "<u2", "compressors": "auto"},
        "a[0:10]", "zstd",
        ["array '/big'", "chunk 'big/c/0'", "decoded chunk", "4294967296 bytes",
         "shape (2147483648,)", "dtype uint16"]),
    "reading a stored chunk file of 2 GiB": (
        {"shape": (2**31,), "chunks": (2**31,), "dtype": "u1", "compressors": None},
        "a[0:10]", "sparse",
        ["array '/big'", "key 'big/c/0'", "2147483648 bytes", "2.0 GiB"]),
}


@posix_only
@pytest.mark.parametrize("case", list(OOM_CASES))
def test_out_of_memory_names_the_array_and_the_buffer(tmp_path, subprocess_cwd, case):
    """In a child Python limited to 2 GiB of address space, an output array or a chunk
    buffer that does not fit raises an AllocationError (a ZarrfastError and a
    MemoryError) naming the array, the chunk key, the bytes, the shape and the dtype."""
    kwargs, action, stored, pieces = OOM_CASES[case]
    root = tmp_path / "data"
    zarrfast.create_array(zarrfast.LocalStore(root), name="big", fill_value=0, **kwargs)
    if stored is not None:
        (root / "big" / "c").mkdir(parents=True)
        with open(root / "big" / "c" / "0", "wb") as f:
            if stored == "zstd":
                f.write(_zstd_frame_of_4_gib_zeros())
            else:
                f.truncate(2**31)  # sparse: no disk space used
    code = _OOM.format(root=str(root), action=action)
    r = json.loads(_child(code, subprocess_cwd, timeout=60, limit_gib=2, what=case))
    assert r["type"] is not None, f"{case}: no error (the limit did not apply?)"
    assert r["zarrfast"] and r["allocation"], r
    for piece in pieces:
        assert piece in r["message"], (piece, r["message"])
    if stored == "zstd":  # still a decode error of that chunk, as before
        assert r["decode"] and r["type"] == "ChunkAllocationError", r
