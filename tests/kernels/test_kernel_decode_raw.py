"""``ChunkDecoder("none", nbytes)``: uncompressed chunks, whose stored bytes are the
chunk, placed by ``decode_regions``, ``decode_files`` and ``decode_ranges`` -- against
the twin and NumPy.  A stored chunk of any other size is ``FAILED`` (nothing of it
placed, except that a direct row -- an uncompressed chunk placed whole, read straight
into its place -- may have written its own block), a missing one ``NO_DATA``; a direct
row's file larger than the chunk is refused unread (``EFBIG``)."""

from __future__ import annotations

import errno
import math
import os

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from _helpers.decode import (
    DECODED,
    DECODERS,
    FAILED,
    GUARD,
    ITEM_SWAPS,
    NO_DATA,
    PROPS,
    CompiledDecoder,
    TwinDecoder,
    c_strides,
    call_files,
    call_ranges,
    call_regions,
    failed_direct_mask,
    layout_args,
    numpy_place,
)
from _helpers.kernels import i64, rng_bytes


@st.composite
def raw_cases(draw):
    ndim = draw(st.integers(1, 3))
    chunk = [draw(st.integers(1, 5)) for _ in range(ndim)]
    itemsize, swap_unit = draw(st.sampled_from(ITEM_SWAPS))
    nbytes = math.prod(chunk) * itemsize
    chunk_strides = c_strides(chunk, itemsize)
    rows = []
    for _ in range(draw(st.integers(1, 6))):
        counts = [draw(st.integers(1, c)) for c in chunk]
        starts = [draw(st.integers(0, c - n)) for c, n in zip(chunk, counts, strict=True)]
        kind = draw(st.sampled_from(["ok", "ok", "ok", "short", "long", "empty", "missing"]))
        data = rng_bytes(draw(st.integers(0, 2**32 - 1)), nbytes)
        stored = {"ok": data, "short": data[:-1], "long": data + b"\x01",
                  "empty": b"", "missing": None}[kind]
        rows.append(dict(counts=counts, kind=kind, data=data, stored=stored,
                         chunk_offset=sum(s * t for s, t in zip(starts, chunk_strides,
                                                                strict=True)),
                         direct=draw(st.integers(0, 3)) == 0))
    # dst: one block per row, room for the whole chunk, guard bytes around everything
    dst_strides = c_strides(chunk, itemsize)
    for r, row in enumerate(rows):
        row["dst_offset"] = GUARD + r * nbytes
    return dict(chunk=chunk, itemsize=itemsize, swap_unit=swap_unit, nbytes=nbytes,
                chunk_strides=chunk_strides, dst_strides=dst_strides, rows=rows,
                dst_len=2 * GUARD + len(rows) * nbytes, share=draw(st.booleans()))


def _expected(case, dst0):
    out = dst0.copy()
    statuses = []
    for row in case["rows"]:
        if row["stored"] is None:
            statuses.append(NO_DATA)
            continue
        if len(row["stored"]) != case["nbytes"]:
            statuses.append(FAILED)
            continue
        statuses.append(DECODED)
        chunk = np.frombuffer(row["data"], dtype=np.uint8)
        if row["direct"]:
            out[row["dst_offset"]:row["dst_offset"] + case["nbytes"]] = chunk
        else:
            numpy_place(out, chunk, row["chunk_offset"], case["chunk_strides"],
                        row["dst_offset"], case["dst_strides"], row["counts"],
                        case["itemsize"], case["swap_unit"])
    return statuses, out


def _dst0(case):
    return np.frombuffer(rng_bytes(7, case["dst_len"]), dtype=np.uint8).copy()


def _regions(cls, case):
    src = bytearray()
    offsets, sizes = [], []
    for row in case["rows"]:
        src += b"\xaa"
        offsets.append(len(src) if row["stored"] is not None else 0)
        sizes.append(len(row["stored"]) if row["stored"] is not None else -1)
        src += row["stored"] or b""
    dst = _dst0(case)
    status = call_regions(cls("none", case["nbytes"]),
        np.frombuffer(bytes(src), dtype=np.uint8), i64(*offsets), i64(*sizes),
        *layout_args(case, dst), share=case["share"])
    return status.tolist(), dst


def _files(cls, case, tmp):
    paths = []
    for r, row in enumerate(case["rows"]):
        name = f"c{r}"
        if row["stored"] is not None:
            with open(os.path.join(tmp, name), "wb") as f:
                f.write(row["stored"])
        paths.append(name.encode())
    dst = _dst0(case)
    status, sizes, errors = call_files(cls("none", case["nbytes"]),
        paths, *layout_args(case, dst), root=os.fsencode(tmp), share=case["share"])
    want_sizes = [-1 if row["stored"] is None else len(row["stored"])
                  for row in case["rows"]]
    assert sizes.tolist() == want_sizes
    want_errors = [errno.EFBIG if row["direct"] and row["kind"] == "long" else 0
                   for row in case["rows"]]
    assert errors.tolist() == want_errors
    return status.tolist(), dst


def _ranges(cls, case, tmp):
    path = os.path.join(tmp, "blob")
    offsets, sizes = [], []
    with open(path, "wb") as f:
        for row in case["rows"]:
            f.write(b"\xaa")
            offsets.append(f.tell() if row["stored"] is not None else 0)
            sizes.append(len(row["stored"]) if row["stored"] is not None else -1)
            f.write(row["stored"] or b"")
    fd = os.open(path, os.O_RDONLY)
    try:
        dst = _dst0(case)
        status, errors = call_ranges(cls("none", case["nbytes"]),
            i64(*[fd] * len(offsets)), i64(*offsets), i64(*sizes), *layout_args(case, dst),
            share=case["share"])
    finally:
        os.close(fd)
    assert not errors.any()
    return status.tolist(), dst


@pytest.mark.parametrize("how", ["regions", "files", "ranges"])
@PROPS
@given(case=raw_cases())
def test_raw_chunks_match_twin_and_numpy(tmp_path_factory, how, case):
    want_status, want_dst = _expected(case, _dst0(case))
    for cls in [TwinDecoder] + ([CompiledDecoder] if CompiledDecoder is not None else []):
        if how == "regions":
            status, dst = _regions(cls, case)
        else:
            tmp = str(tmp_path_factory.mktemp("raw"))
            status, dst = (_files if how == "files" else _ranges)(cls, case, tmp)
        assert status == want_status, (cls, how)
        keep = ~failed_direct_mask(case, want_status)
        np.testing.assert_array_equal(dst[keep], want_dst[keep], err_msg=f"{cls} {how}")


@pytest.mark.parametrize("cls", DECODERS)
def test_raw_decoder_is_not_a_codec_name_for_anything_else(cls):
    """``"none"`` is taken whatever is bound; an unknown name is refused."""
    assert cls("none", 8).nbytes == 8
    with pytest.raises(ValueError, match="not bound"):
        cls("lz4", 8)
