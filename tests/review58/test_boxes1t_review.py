"""Review of h58/boxes1t (5c88243): ``boxes.box_parts`` gives a box of one part (a box
read at one thread, or beside other work) as the box itself, without the cutting.

No finding: for one part the cutting gave the box itself (its one group spans every
chunk row of the first dimension), and the branch's copy of ``start``/``count`` is
int64 and not the selection's own arrays.  Guards (pass on main and on the branch):
``box_parts`` of one part is the whole box at offset 0 and its parts for more than one
partition the box (every element once, at its C-order offset); box reads of more than
``BOX_CHUNKS`` chunk files at one and two threads, and as one of many reads
(``one_of_many``: the solo path) give what NumPy gives -- edge chunks, C and F order,
little- and big-endian, zstd and uncompressed, missing chunks of a fill value -- and
an array that refuses missing chunks, or a chunk that is not a zstd frame, is refused
naming its key.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrfast
from zarrfast import config
from zarrfast.concurrency import running_one_of_many
from zarrfast.engine import boxes
from zarrfast.engine.selection import normalize_basic
from zarrfast.errors import ZarrfastError
from zarrfast.storage import LocalStore

SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.function_scoped_fixture])
SHAPE = (19, 22, 13)
CHUNKS = (4, 5, 3)


@st.composite
def _box(draw, shape=SHAPE):
    out = []
    for size in shape:
        a = draw(st.integers(0, size - 1))
        out.append(slice(a, draw(st.integers(a + 1, size))))
    return tuple(out)


@SETTINGS
@given(_box(), st.integers(1, 40))
def test_box_parts_partition_the_box(box, parts):
    sel = normalize_basic(box, SHAPE)
    shape = tuple(sel.count.tolist())
    strides = np.array(np.empty(shape, dtype="u1").strides, dtype=np.int64)
    got = boxes.box_parts(sel, CHUNKS, strides, parts)
    if parts == 1:
        assert len(got) == 1
        start, count, base = got[0]
        assert start.tolist() == sel.start.tolist() and count.tolist() == list(shape)
        assert base == 0 and start.dtype == np.int64 and count.dtype == np.int64
        assert not np.shares_memory(start, sel.start)
    seen = np.zeros(shape, dtype=np.int64)
    for start, count, base in got:
        lo = start - sel.start
        region = tuple(slice(int(a), int(a + c)) for a, c in zip(lo, count, strict=True))
        seen[region] += 1
        assert base == int(lo @ strides)
    assert (seen == 1).all()


def _make(root, name, *, order, endian, compressed, holes):
    data = (np.arange(np.prod(SHAPE), dtype=np.int64).reshape(SHAPE) * 3 - 5000
            ).astype(f"{'<' if endian == 'little' else '>'}i4")
    kw: dict = {"serializer": {"name": "bytes", "configuration": {"endian": endian}}}
    if order == "F":
        kw["filters"] = [{"name": "transpose", "configuration": {"order": [2, 1, 0]}}]
    if not compressed:
        kw["compressors"] = None
    a = zarrfast.create_array(LocalStore(root / name), shape=SHAPE, dtype=data.dtype,
                              chunks=CHUNKS, fill_value=-9, **kw)
    a[:] = data
    want = data.astype("i4")
    if holes:
        for key, region in (("c/0/0/0", np.s_[0:4, 0:5, 0:3]),
                            ("c/4/4/4", np.s_[16:19, 20:22, 12:13]),
                            ("c/2/1/2", np.s_[8:12, 5:10, 6:9])):
            (root / name / key).unlink()
            want[region] = -9
    return zarrfast.open_array(LocalStore(root / name), mode="r"), want


@pytest.fixture(scope="module")
def arrays(tmp_path_factory):
    root = tmp_path_factory.mktemp("boxes1t")
    return {(order, endian, compressed): _make(root, f"{order}{endian}{compressed}.zarr",
                                               order=order, endian=endian,
                                               compressed=compressed, holes=order == "F")
            for order, endian in (("C", "little"), ("F", "big"))
            for compressed in (True, False)}


@SETTINGS
@given(box=_box(), threads=st.sampled_from([1, 2]), many=st.booleans(),
       layout=st.sampled_from([("C", "little", True), ("C", "little", False),
                               ("F", "big", True), ("F", "big", False)]))
def test_box_reads_are_numpys(arrays, box, threads, many, layout):
    a, want = arrays[layout]
    with config.set(threads=threads):
        if many:
            with running_one_of_many():
                got = a[box]
        else:
            got = a[box]
    np.testing.assert_array_equal(got, want[box], err_msg=repr(box))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("many", [False, True])
def test_bad_chunks_named(tmp_path, threads, many):
    a = zarrfast.create_array(LocalStore(tmp_path / "b.zarr"), shape=SHAPE, dtype="i4",
                              chunks=CHUNKS, fill_value=0)
    a[:] = 1
    with config.set({"array.read_missing_chunks": False}):
        strict = zarrfast.open_array(LocalStore(tmp_path / "b.zarr"), mode="r")
    (tmp_path / "b.zarr" / "c" / "3" / "2" / "1").unlink()
    (tmp_path / "b.zarr" / "c" / "1" / "1" / "1").write_bytes(b"not a zstd frame at all")
    missing, bad = np.s_[12:19, 8:15, 2:6], np.s_[2:10, 3:12, 0:7]
    with config.set(threads=threads):
        ctx = running_one_of_many() if many else config.set(threads=threads)
        with ctx:
            with pytest.raises(ZarrfastError, match="c/3/2/1"):
                strict[missing]
            with pytest.raises(ZarrfastError, match="c/1/1/1"):
                a[bad]
            np.testing.assert_array_equal(a[missing], np.where(
                np.pad(np.ones((4, 5, 3), bool), [(12, 3), (10, 7), (3, 7)])[missing],
                0, 1))
