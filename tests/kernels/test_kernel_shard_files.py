"""``ShardFiles``: whole shards read, their index checked and their inner chunks placed,
one call per shard -- the compiled kernel against its twin and against NumPy."""

from __future__ import annotations

import os

import crc32c as crc32c_package
import numpy as np
import pytest
import zstandard
from hypothesis import given
from hypothesis import strategies as st

from zarrfast import kernels as _kernels
from zarrfast.kernels import reference as ref

from _helpers.decode import PROPS, CompiledDecoder, TwinDecoder, run_in_threads

try:
    from zarrfast._ext import _decode as _decode_ext
except ImportError:  # pragma: no cover - not built
    _decode_ext = None

DECODED, NO_DATA, FAILED = 0, 1, 2
EMPTY = 2**64 - 1
IMPLS = [pytest.param((ref.ShardFiles, TwinDecoder), id="reference")]
if CompiledDecoder is not None and _kernels.ShardFiles is not None:
    IMPLS.append(pytest.param((_kernels.ShardFiles, CompiledDecoder), id="compiled"))
needs_kernel = pytest.mark.skipif(CompiledDecoder is None or _kernels.ShardFiles is None,
                                  reason="the compiled zstd decoder is not bound")

CHUNK = (4, 6)  # inner chunk shape; the output is W = 6 items wide (full chunks: direct)
W = 6


@pytest.mark.skipif(_decode_ext is None, reason="not built")
@given(data=st.binary(max_size=300))
@PROPS
def test_crc32c_matches_the_package_and_the_twin(data):
    assert _decode_ext.crc32c(data) == crc32c_package.crc32c(data) == ref.crc32c(data)


def shard_bytes(chunks: dict[int, bytes | None], n_inner: int, *, at_end: bool,
                checksum: bool, order: list[int] | None = None, gap: int = 0) -> bytes:
    """A shard of the inner chunks ``chunks`` (missing or ``None``: empty), laid out in
    ``order`` with ``gap`` junk bytes between them."""
    index = np.full((n_inner, 2), EMPTY, dtype="<u8")
    size = n_inner * 16 + (4 if checksum else 0)
    pos = 0 if at_end else size
    parts = []
    for j in (order if order is not None else range(n_inner)):
        data = chunks.get(j)
        if data is None:
            continue
        parts.append(b"\xab" * gap + data)
        pos += gap
        index[j] = (pos, len(data))
        pos += len(data)
    raw = index.tobytes()
    if checksum:
        raw += crc32c_package.crc32c(raw).to_bytes(4, "little")
    body = b"".join(parts)
    return body + raw if at_end else raw + body


class Case:
    """Two-d uint16/uint32 inner chunks of CHUNK, rows placing regions of them into an
    output ``W`` items wide; the expected output computed with NumPy."""

    def __init__(self, rng: np.random.Generator, *, itemsize: int, swap: bool,
                 n_shards: int, n_inner: int, at_end: bool, checksum: bool) -> None:
        self.itemsize, self.swap = itemsize, swap
        self.n_inner, self.at_end, self.checksum = n_inner, at_end, checksum
        native = np.dtype(f"u{itemsize}")
        stored = native.newbyteorder(">") if swap else native.newbyteorder("<")
        self.native, self.stored = native, stored
        self.fill_value = 7
        self.nbytes = CHUNK[0] * CHUNK[1] * itemsize
        self.chunks: dict[tuple[int, int], np.ndarray] = {}
        rows, bounds, inner = [], [0], []
        self.regions = []  # per row: (chunk start, count, out start)
        out_rows = 0
        r = 0
        for g in range(n_shards):
            js = list(rng.permutation(n_inner)[:rng.integers(1, n_inner + 1)])
            for j in js:
                full = rng.random() < 0.5
                if full:
                    a, b, h, w = 0, 0, CHUNK[0], CHUNK[1]
                else:
                    a, b = int(rng.integers(0, CHUNK[0])), int(rng.integers(0, CHUNK[1]))
                    h = int(rng.integers(0, CHUNK[0] - a + 1))
                    w = int(rng.integers(1, CHUNK[1] - b + 1))
                x = 0 if full else int(rng.integers(0, W - w + 1))
                self.regions.append(((a, b), (h, w), (out_rows, x), full))
                out_rows += h
                inner.append(int(j))
                rows.append(r)
                r += 1
                self.chunks[(g, int(j))] = rng.integers(0, 2**(8 * itemsize) - 1,
                                                        size=CHUNK, dtype=native)
            bounds.append(len(rows))
        # (the rows of a shard need not be in row order)
        self.rows = np.concatenate([
            np.array(rows[bounds[g]:bounds[g + 1]], dtype=np.int64)[
                rng.permutation(bounds[g + 1] - bounds[g])] for g in range(n_shards)])
        self.bounds = np.array(bounds, dtype=np.int64)
        self.inner = np.array(inner, dtype=np.int64)
        self.out_shape = (out_rows + 1, W)
        #: the shard of each row (rows are numbered shard by shard)
        self.shard_of = np.repeat(np.arange(n_shards), np.diff(self.bounds))

    def tables(self, dst: np.ndarray, *, direct_ok: bool = True):
        k = self.itemsize
        co, do, shp, direct = [], [], [], []
        for (a, b), (h, w), (y, x), full in self.regions:
            co.append((a * CHUNK[1] + b) * k)
            do.append((y * W + x) * k)
            shp.append((h, w))
            direct.append(1 if (full and direct_ok and not self.swap) else 0)
        return (np.array(co, np.int64), np.array([CHUNK[1] * k, k], np.int64), dst,
                np.array(do, np.int64), np.array([W * k, k], np.int64),
                np.array(shp, np.int64).reshape(-1, 2), k, k if self.swap else 1,
                np.array(direct, np.uint8))

    def fill_stored(self) -> bytes:
        return np.array(self.fill_value, dtype=self.stored).tobytes()

    def expected(self, out0: np.ndarray, placed_shards: dict[int, dict[int, bool]]
                 ) -> np.ndarray:
        """``out0`` with every row of the shards in ``placed_shards`` placed: the inner
        chunks marked True decoded, the others the fill value."""
        out = out0.copy()
        for r, ((a, b), (h, w), (y, x), _full) in enumerate(self.regions):
            g = int(self.shard_of[r])
            if g not in placed_shards:
                continue
            j = int(self.inner[r])
            chunk = (self.chunks[(g, j)] if placed_shards[g].get(j, False)
                     else np.full(CHUNK, self.fill_value, self.native))
            out[y:y + h, x:x + w] = chunk[a:a + h, b:b + w]
        return out

    def frame(self, g: int, j: int) -> bytes:
        return zstandard.ZstdCompressor(level=1).compress(
            self.chunks[(g, j)].astype(self.stored).tobytes())


def placement_cls(cls):
    """The ``Placement`` that goes with ``ShardFiles`` ``cls`` (compiled or twin)."""
    return ref.Placement if cls is ref.ShardFiles else _kernels.Placement


def make_plan(cls, case: Case, paths, root, dst, **kw):
    tables = case.tables(dst, direct_ok=kw.pop("direct_ok", True))
    n_inner = case.n_inner
    return cls(paths, root, case.rows, case.bounds, case.inner, n_inner,
               16 * n_inner + (4 if case.checksum else 0), case.at_end, case.checksum,
               kw.pop("limit", 2**30), kw.pop("keep", 2**20),
               placement_cls(cls)(case.nbytes, *tables), case.fill_stored())


@given(seed=st.integers(0, 2**32 - 1), itemsize=st.sampled_from([2, 4]), swap=st.booleans(),
       at_end=st.booleans(), checksum=st.booleans(), n_inner=st.integers(1, 6),
       gap=st.integers(0, 3), shuffled=st.booleans())
@PROPS
def test_shard_files_match_twin_and_numpy(tmp_path_factory, seed, itemsize, swap, at_end,
                                         checksum, n_inner, gap, shuffled):
    """Shards with empty inner chunks, inner chunks laid out out of order, with gaps,
    an index at either end, with or without its checksum, a missing shard: both
    implementations place what NumPy places, and give the same statuses and index."""
    rng = np.random.default_rng(seed)
    case = Case(rng, itemsize=itemsize, swap=swap, n_shards=3, n_inner=n_inner,
                at_end=at_end, checksum=checksum)
    root = tmp_path_factory.mktemp("shards")
    stored = {}
    for g in range(2):  # shard 2 has no file
        present = {j: bool(rng.random() < 0.8) for j in range(n_inner)}
        stored[g] = present
        chunks = {j: case.frame(g, j) for j in range(n_inner)
                  if present[j] and (g, j) in case.chunks}
        order = list(rng.permutation(n_inner)) if shuffled else None
        (root / f"s{g}").write_bytes(shard_bytes(chunks, n_inner, at_end=at_end,
                                                 checksum=checksum, order=order, gap=gap))
    stored[2] = {}
    paths = [b"s0", b"s1", b"s2"]
    out0 = np.frombuffer(rng.bytes(int(np.prod(case.out_shape)) * itemsize),
                         dtype=case.native).reshape(case.out_shape).copy()
    want = case.expected(out0, {g: {j: p for j, p in stored[g].items()} for g in range(3)})
    results = []
    for impl in [ref.ShardFiles] + ([_kernels.ShardFiles] if CompiledDecoder else []):
        dec_cls = TwinDecoder if impl is ref.ShardFiles else CompiledDecoder
        out = out0.copy()
        plan = make_plan(impl, case, paths, os.fsencode(root), out.reshape(-1).view(np.uint8))
        dec = dec_cls("zstd", case.nbytes)
        statuses, indexes = [], []
        for g in range(3):
            index = np.zeros((n_inner, 2), dtype=np.uint64)
            statuses.append(plan.read(dec, g, index))
            indexes.append(index)
        assert statuses == [DECODED, DECODED, NO_DATA], impl
        np.testing.assert_array_equal(out, want, err_msg=str(impl))
        for g in range(2):
            st_ = os.stat(root / f"s{g}")
            assert plan.stamp(g) == (st_.st_ino, st_.st_size, st_.st_mtime_ns,
                                     st_.st_ctime_ns)
        results.append(indexes[:2])
    if len(results) == 2:
        for a, b in zip(*results, strict=True):
            np.testing.assert_array_equal(a, b)


def _one_shard(tmp_path, *, n_inner=4, at_end=True, checksum=True):
    rng = np.random.default_rng(5)
    case = Case(rng, itemsize=2, swap=False, n_shards=1, n_inner=n_inner, at_end=at_end,
                checksum=checksum)
    chunks = {j: case.frame(0, j) for j in range(n_inner) if (0, j) in case.chunks}
    return case, chunks


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("what", ["checksum", "truncated", "past_end", "overlap",
                                  "half_empty", "garbage_chunk", "too_large", "link",
                                  "fifo", "directory", "no_root"])
def test_shard_files_failures(tmp_path, impl, what):
    """What the kernel cannot place is FAILED (the caller's own path then says why); no
    file, a directory, or no root directory at all is NO_DATA with the fill value."""
    cls, dec_cls = impl
    case, chunks = _one_shard(tmp_path)
    n_inner = case.n_inner
    root = tmp_path / "root"
    root.mkdir()
    data = bytearray(shard_bytes(chunks, n_inner, at_end=True, checksum=True))
    isz = 16 * n_inner + 4
    index = np.frombuffer(bytes(data[-isz:-4]), dtype="<u8").reshape(n_inner, 2).copy()
    used = [j for j in range(n_inner) if index[j, 0] != EMPTY]

    def with_index(idx):
        raw = idx.astype("<u8").tobytes()
        return bytes(data[:-isz]) + raw + crc32c_package.crc32c(raw).to_bytes(4, "little")

    limit = 2**30
    expect = FAILED
    if what == "checksum":
        data[-1] ^= 1
        (root / "s").write_bytes(bytes(data))
    elif what == "truncated":
        (root / "s").write_bytes(bytes(data[-isz + 1:]))
    elif what == "past_end":
        index[used[0], 1] += 10**6
        (root / "s").write_bytes(with_index(index))
    elif what == "overlap":
        if len(used) < 2:
            pytest.skip("one inner chunk")
        index[used[1]] = index[used[0]]
        (root / "s").write_bytes(with_index(index))
    elif what == "half_empty":
        index[used[0], 1] = EMPTY
        (root / "s").write_bytes(with_index(index))
    elif what == "garbage_chunk":
        off = int(index[used[0], 0])
        data[off:off + 4] = b"nope"
        (root / "s").write_bytes(bytes(data))
    elif what == "too_large":
        (root / "s").write_bytes(bytes(data))
        limit = len(data) - 1
    elif what == "link":
        (root / "real").write_bytes(bytes(data))
        os.symlink("real", root / "s")
    elif what == "fifo":
        os.mkfifo(root / "s")
    elif what == "directory":
        (root / "s").mkdir()
        expect = NO_DATA
    elif what == "no_root":
        root.rmdir()
        expect = NO_DATA
    out0 = np.full(case.out_shape, 0xBEEF, dtype=np.uint16)
    out = out0.copy()
    plan = make_plan(cls, case, [b"s"], os.fsencode(root), out.reshape(-1).view(np.uint8),
                     limit=limit)
    assert plan.read(dec_cls("zstd", case.nbytes), 0) == expect
    if expect == NO_DATA:
        np.testing.assert_array_equal(out, case.expected(out0, {0: {}}))
    # without the root: the path as given (no link checks)
    if what == "link":
        plan = make_plan(cls, case, [os.fsencode(root / "s")], None,
                         out.reshape(-1).view(np.uint8))
        assert plan.read(dec_cls("zstd", case.nbytes), 0) == DECODED
        present = {j: True for j in used}
        np.testing.assert_array_equal(out, case.expected(out0, {0: present}))


@pytest.mark.parametrize("impl", IMPLS)
def test_shard_files_index_at_start_without_checksum(tmp_path, impl):
    cls, dec_cls = impl
    case, chunks = _one_shard(tmp_path, at_end=False, checksum=False)
    (tmp_path / "s").write_bytes(shard_bytes(chunks, case.n_inner, at_end=False,
                                             checksum=False))
    out0 = np.zeros(case.out_shape, dtype=np.uint16)
    out = out0.copy()
    plan = make_plan(cls, case, [b"s"], os.fsencode(tmp_path), out.reshape(-1).view(np.uint8))
    assert plan.read(dec_cls("zstd", case.nbytes), 0) == DECODED
    present = {j: True for j in chunks}
    np.testing.assert_array_equal(out, case.expected(out0, {0: present}))


def _bad_args(case, dst):
    """(what to change, how) -> the constructor's arguments with it changed."""
    tables = case.tables(dst)
    isz = 16 * case.n_inner + 4
    base = dict(paths=[b"s"], root=None, rows=case.rows, bounds=case.bounds, inner=case.inner,
                n_inner=case.n_inner, index_nbytes=isz, at_end=True, checksum=True,
                limit=2**20, keep=0, nbytes=case.nbytes)
    return base, tables


@pytest.mark.parametrize("change", [
    {"paths": [b"a", b"b"]}, {"paths": ["s"]}, {"paths": [b"a\0b"]}, {"root": "x"},
    {"index_nbytes": 17}, {"nbytes": -2}, {"limit": -1}, {"fill": b"\0"},
    {"bounds": np.array([1, 1], np.int64)}, {"bounds": np.array([0, 99], np.int64)},
    {"rows": np.array([0, 99], np.int64)}, {"inner": "big"}, {"shape": "outside"},
])
def test_shard_files_rejections_match(tmp_path, change):
    """Bad tables raise the same error in both, before any file is read."""
    rng = np.random.default_rng(1)
    case = Case(rng, itemsize=2, swap=False, n_shards=1, n_inner=4, at_end=True,
                checksum=True)
    got = []
    for impl in [ref.ShardFiles] + ([_kernels.ShardFiles] if CompiledDecoder else []):
        dst = np.zeros(int(np.prod(case.out_shape)) * 2, dtype=np.uint8)
        base, tables = _bad_args(case, dst)
        fill = case.fill_stored()
        tables = list(tables)
        for k, v in change.items():
            if k == "fill":
                fill = v
            elif k == "inner":
                base["inner"] = case.inner + case.n_inner
            elif k == "shape":
                tables[3] = tables[3] + dst.size
            else:
                base[k] = v
        try:
            nbytes = base.pop("nbytes")
            impl(*base.values(), placement_cls(impl)(nbytes, *tables), fill)
        except (ValueError, TypeError) as e:
            got.append((type(e), str(e)))
        else:
            got.append(None)
    assert got[0] is not None
    if len(got) == 2:
        assert got[0] == got[1]


@needs_kernel
def test_shard_files_read_arguments(tmp_path):
    rng = np.random.default_rng(2)
    case = Case(rng, itemsize=2, swap=False, n_shards=1, n_inner=4, at_end=True,
                checksum=True)
    dst = np.zeros(int(np.prod(case.out_shape)) * 2, dtype=np.uint8)
    for cls, dec_cls in ((ref.ShardFiles, TwinDecoder),
                         (_kernels.ShardFiles, CompiledDecoder)):
        plan = make_plan(cls, case, [b"s"], os.fsencode(tmp_path), dst)
        with pytest.raises(IndexError):
            plan.read(dec_cls("zstd", case.nbytes), 1)
        with pytest.raises(ValueError, match="decoder of"):
            plan.read(dec_cls("zstd", case.nbytes + 2), 0)
        with pytest.raises(ValueError, match="index_out"):
            plan.read(dec_cls("zstd", case.nbytes), 0, np.zeros((3, 2), np.uint64))
        assert plan.stamp(0) is None
        assert plan.read(dec_cls("zstd", case.nbytes), 0) == NO_DATA


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("threads,max_shards", [(1, 1), (1, 100), (3, 1), (3, 2)])
def test_shard_files_run_takes_turns(tmp_path, impl, threads, max_shards):
    """``run`` from several threads: every shard of ``todo`` read once, by one of them,
    with ``read``'s statuses, placements and indexes."""
    cls, dec_cls = impl
    rng = np.random.default_rng(11)
    n_shards, n_inner = 9, 4
    case = Case(rng, itemsize=2, swap=False, n_shards=n_shards, n_inner=n_inner, at_end=True,
                checksum=True)
    present = {}
    for g in range(n_shards):
        if g == 4:
            continue  # no file: NO_DATA
        chunks = {j: case.frame(g, j) for j in range(n_inner) if (g, j) in case.chunks}
        data = shard_bytes(chunks, n_inner, at_end=True, checksum=True)
        if g == 6:
            data = data[:-1] + bytes([data[-1] ^ 1])  # a bad checksum: FAILED
        (tmp_path / f"s{g}").write_bytes(data)
        present[g] = {j: True for j in chunks}
    paths = [f"s{g}".encode() for g in range(n_shards)]
    todo = np.array([8, 0, 4, 2, 6, 1, 7, 3], dtype=np.int64)  # (not 5)
    out0 = np.zeros(case.out_shape, dtype=np.uint16)
    out = out0.copy()
    plan = make_plan(cls, case, paths, os.fsencode(tmp_path), out.reshape(-1).view(np.uint8))
    status = np.full(todo.size, -1, dtype=np.int8)
    cursor = np.zeros(1, dtype=np.int64)
    indexes = np.zeros((todo.size, n_inner, 2), dtype=np.uint64)
    counts = []

    def runner():
        dec = dec_cls("zstd", case.nbytes)
        n = 0
        while k := plan.run(dec, todo, status, cursor, max_shards, indexes):
            assert k <= max_shards
            n += k
        counts.append(n)

    run_in_threads(runner, threads)
    assert sum(counts) == todo.size
    want_status = [NO_DATA if g == 4 else FAILED if g == 6 else DECODED for g in todo.tolist()]
    assert status.tolist() == want_status
    placed = {g: present[g] for g in todo.tolist() if g not in (4, 6)}
    placed[4] = {}
    want = case.expected(out0, placed)
    rows6 = case.shard_of == 6  # (a FAILED shard: its rows are the caller's to place)
    rows5 = case.shard_of == 5
    for r, (_start, (h, w), (y, x), _f) in enumerate(case.regions):
        if rows6[r] or rows5[r]:
            want[y:y + h, x:x + w] = out[y:y + h, x:x + w]
    np.testing.assert_array_equal(out, want)
    for i, g in enumerate(todo.tolist()):
        if g in (4, 6):
            continue
        raw = (tmp_path / f"s{g}").read_bytes()[-(16 * n_inner + 4):-4]
        np.testing.assert_array_equal(
            indexes[i], np.frombuffer(raw, "<u8").reshape(n_inner, 2))
    assert plan.run(dec_cls("zstd", case.nbytes), todo, status, cursor, 5) == 0
    dec = dec_cls("zstd", case.nbytes)
    with pytest.raises(ValueError, match="statuses"):
        plan.run(dec, todo, status[:-1], np.zeros(1, np.int64), 1)
    with pytest.raises(IndexError):
        plan.run(dec, np.array([9], np.int64), status[:1], np.zeros(1, np.int64), 1)
    with pytest.raises(ValueError, match="indexes"):
        plan.run(dec, todo, status, np.zeros(1, np.int64), 1, indexes[:, :2].copy())


@pytest.mark.skipif(CompiledDecoder is None, reason="no compiled decoder")
def test_shard_files_use_the_tables_they_checked(tmp_path):
    """The plan keeps its own copies of the rows, their places and regions: the caller's
    arrays changed after the constructor checked them (to places far outside the
    output) change nothing it writes."""
    case, chunks = _one_shard(tmp_path)
    (tmp_path / "s").write_bytes(shard_bytes(chunks, case.n_inner, at_end=True,
                                             checksum=True))
    out0 = np.zeros(case.out_shape, dtype=np.uint16)
    out = out0.copy()
    dst = out.reshape(-1).view(np.uint8)
    tables = case.tables(dst)
    rows, bounds, inner = case.rows.copy(), case.bounds.copy(), case.inner.copy()
    plan = _kernels.ShardFiles(
        [b"s"], os.fsencode(tmp_path), rows, bounds, inner, case.n_inner,
        16 * case.n_inner + 4, True, True, 2**30, 2**20,
        _kernels.Placement(case.nbytes, *tables), case.fill_stored())
    chunk_offsets, _, _, dst_offsets, _, shapes, _, _, direct = tables
    for a in (chunk_offsets, dst_offsets, rows, inner):
        a[:] = 2**40
    bounds[:] = 0
    shapes[:] = 2**20
    direct[:] = 1 - direct
    assert plan.read(CompiledDecoder("zstd", case.nbytes), 0) == DECODED
    np.testing.assert_array_equal(out, case.expected(out0, {0: {j: True for j in chunks}}))
