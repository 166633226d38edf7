"""Batched local writes: ``LocalStore.set_many`` and the chunk pipeline that writes a
batch of chunks at a time through it (atomic writes: a temporary file, then a
rename).  The ``write_files`` kernel itself:
``tests/kernels/test_kernel_write_files.py``.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import zarrfast
from zarrfast import config
from zarrfast.errors import ConcurrentWriteError, InvalidKeyError, ReadOnlyError, ZarrfastError
from zarrfast.storage import LocalStore

from _helpers.stores import TMP_MARK


def leftovers(root) -> list[str]:
    return [f for _, _, files in os.walk(root) for f in files if TMP_MARK in f or ".tmp" in f]


# ---------------------------------------------------------------------------
# LocalStore.set_many
# ---------------------------------------------------------------------------

def test_set_many_writes_every_value_atomically(tmp_path):
    store = LocalStore(tmp_path)
    assert store.fast_set_many
    items = {f"x/{i}/{j}": bytes([i, j]) * (i + 1) for i in range(5) for j in range(7)}
    store.set_many(items)
    for k, v in items.items():
        assert store.get(k) == v
    store.set_many([(k, v + b"!") for k, v in items.items()])  # replacing
    assert all(store.get(k) == v + b"!" for k, v in items.items())
    assert leftovers(tmp_path) == []


def test_set_many_refuses_links_out_like_set(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "f").write_bytes(b"precious")
    (root / "leaf").symlink_to(outside / "f")
    (root / "dir").symlink_to(outside, target_is_directory=True)
    store = LocalStore(root)
    with pytest.raises(InvalidKeyError, match="leaf"):
        store.set_many([("ok1", b"1"), ("leaf", b"through a link"), ("ok2", b"2")])
    assert (outside / "f").read_bytes() == b"precious"
    assert store.get("ok1") == b"1" and store.get("ok2") == b"2"  # the others are written
    with pytest.raises(InvalidKeyError, match="dir/a"):
        store.set_many([("dir/a", b"a"), ("dir/b", b"b")])
    assert sorted(os.listdir(outside)) == ["f"]
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("how", ["set_many", "set_regions"])
def test_a_batch_shares_one_temporary_name_and_a_failure_frees_it(tmp_path, how):
    """The files of one batch are written under one temporary name, one after the other:
    files 3 and 6 cannot be renamed into place (a directory holding a file is where they
    go), the others of the batch, before and after, are written whole; the failures
    name their keys, and no temporary file is left."""
    store = LocalStore(tmp_path)
    keys = [f"c/{i}" for i in range(9)]
    for i in (3, 6):
        os.makedirs(tmp_path / "c" / str(i))
        (tmp_path / "c" / str(i) / "in-the-way").write_bytes(b"")
    values = np.arange(9 * 16, dtype="<u2").reshape(9, 16)
    with pytest.raises(ZarrfastError, match="c/3"):
        if how == "set_many":
            store.set_many([(k, values[i].tobytes()) for i, k in enumerate(keys)])
        else:
            store.set_regions(keys, values.reshape(-1).view(np.uint8),
                              np.arange(9, dtype=np.int64)[:, None] * 32,
                              np.array([2], dtype=np.int64), np.array([16], dtype=np.int64), 2)
    for i, k in enumerate(keys):
        if i not in (3, 6):
            assert store.get(k) == values[i].tobytes(), k
    assert sorted(os.listdir(tmp_path / "c" / "6")) == ["in-the-way"]
    assert leftovers(tmp_path) == []


def test_set_many_errors_name_the_key(tmp_path):
    store = LocalStore(tmp_path)
    store.set("file", b"x")
    with pytest.raises(ZarrfastError, match="file/a"):
        store.set_many([("file/a", b"1"), ("file/b", b"2")])
    with pytest.raises(ReadOnlyError):
        LocalStore(tmp_path, read_only=True).set_many([("a", b"1"), ("b", b"2")])
    with pytest.raises(InvalidKeyError):
        store.set_many([("a", b"1"), ("../escape", b"2")])


def test_set_many_keeps_a_subclass_set_and_fsync(tmp_path):
    calls = []

    class Logged(LocalStore):
        def set(self, key, value):
            calls.append(key)
            super().set(key, value)

    store = Logged(tmp_path)
    assert not store.fast_set_many
    store.set_many([("a", b"1"), ("b", b"2")])
    assert calls == ["a", "b"]
    assert not LocalStore(tmp_path, fsync=True).fast_set_many
    a = zarrfast.create_array(store, name="arr", shape=(40,), chunks=(10,), dtype="i4")
    calls.clear()
    a[...] = np.arange(40)
    assert sorted(k for k in calls if "/c/" in k) == [f"arr/c/{i}" for i in range(4)]


def _regions_case():
    """An array and regions of it: three files of two 8x8 blocks each."""
    a = np.random.default_rng(5).integers(1, 1000, (32, 48)).astype("<i4")
    a[8:16, :8] = 0  # a block all of the fill value
    starts = [[(0, 0), (0, 8)], [(8, 0), (16, 40)], [(24, 40), (0, 0)]]
    offsets = np.array([[r * a.strides[0] + c * a.strides[1] for r, c in row]
                        for row in starts], dtype=np.int64)
    return a, starts, offsets


def test_set_regions_writes_the_bytes_a_memory_store_holds(tmp_path):
    """``LocalStore.set_regions`` (the kernel, no copy) stores what the generic
    ``Store.set_regions`` gives ``MemoryStore``: the blocks in C order one after
    the other, then the extra bytes (or them first); a file with a block of fill
    is left out."""
    a, starts, offsets = _regions_case()
    keys = ["c/0", "c/1", "deeper/c/2"]
    flat = a.reshape(-1).view(np.uint8)
    strides = np.array(a.strides, dtype=np.int64)
    shape = np.array([8, 8], dtype=np.int64)
    fill = np.zeros(4, dtype=np.uint8)
    for extra, first in ((None, False), (b"INDEX", False), (b"INDEX", True)):
        local, memory = LocalStore(tmp_path / f"{extra}{first}"), zarrfast.MemoryStore()
        assert local.fast_set_regions and not memory.fast_set_regions
        got = [s.set_regions(keys, flat, offsets, strides, shape, 4, fill=fill, extra=extra,
                             extra_first=first).tolist() for s in (local, memory)]
        assert got == [[False, True, False]] * 2
        blocks = [b"".join(a[r:r + 8, c:c + 8].tobytes() for r, c in row) for row in starts]
        e = extra or b""
        want = {k: (e + b if first else b + e) for k, b in zip(keys, blocks, strict=True)}
        for s in (local, memory):
            assert s.get("c/1") is None
            assert s.get("c/0") == want["c/0"] and s.get("deeper/c/2") == want["deeper/c/2"]
        assert leftovers(tmp_path) == []


def test_set_regions_refuses_links_out_and_names_the_key(tmp_path):
    """A key the kernel does not write goes through ``set``: a link out of the root is
    refused naming it (the other keys are written), a file where a directory should be
    is named, and a read-only store writes nothing."""
    a, _, offsets = _regions_case()
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "f").write_bytes(b"precious")
    (root / "leaf").symlink_to(outside / "f")
    store = LocalStore(root)
    args = (a.reshape(-1).view(np.uint8), offsets, np.array(a.strides, dtype=np.int64),
            np.array([8, 8], dtype=np.int64), 4)
    with pytest.raises(InvalidKeyError, match="leaf"):
        store.set_regions(["ok1", "leaf", "ok2"], *args)
    assert (outside / "f").read_bytes() == b"precious"
    assert store.get("ok1") == a[:8, :8].tobytes() + a[:8, 8:16].tobytes()
    assert store.get("ok2") == a[24:32, 40:48].tobytes() + a[:8, :8].tobytes()
    store.set("file", b"x")
    with pytest.raises(ZarrfastError, match="file/a"):
        store.set_regions(["file/a", "file/b", "file/c"], *args)
    with pytest.raises(ReadOnlyError):
        LocalStore(root, read_only=True).set_regions(["x", "y", "z"], *args)
    assert store.get("x") is None
    assert leftovers(tmp_path) == []


# ---------------------------------------------------------------------------
# the chunk pipeline
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("compressor", [None, "zstd"])
def test_array_writes_go_through_set_many(tmp_path, threads, compressor, monkeypatch):
    """Batches of chunks go to ``set_many``; whole uncompressed chunks written from an
    array go to ``set_regions`` (written from the array itself), in batches too."""
    import zarr

    batches = []
    regions = []
    original = LocalStore.set_many
    original_regions = LocalStore.set_regions

    def spy(self, items):
        items = list(items)
        batches.append(len(items))
        return original(self, items)

    def spy_regions(self, keys, *args, **kwargs):
        regions.append(len(keys))
        return original_regions(self, keys, *args, **kwargs)

    monkeypatch.setattr(LocalStore, "set_many", spy)
    monkeypatch.setattr(LocalStore, "set_regions", spy_regions)
    comp = None if compressor is None else {"name": "zstd", "configuration": {"level": 1}}
    data = np.arange(200 * 300, dtype="<i4").reshape(200, 300)
    with config.set(threads=threads):
        a = zarrfast.create_array(str(tmp_path), shape=data.shape, chunks=(20, 30),
                                  dtype="<i4", compressors=comp, fill_value=0)
        a[...] = data
        used = regions if compressor is None else batches
        assert sum(used) == 100 and max(used) > 1
        assert not (batches if compressor is None else regions)
        a[5:95, 7:123] = -data[5:95, 7:123]  # partial chunks: old values kept
        expect = data.copy()
        expect[5:95, 7:123] *= -1
        a[100:200] = 0  # equal to the fill value: those chunk files are removed
        expect[100:200] = 0
    np.testing.assert_array_equal(a[...], expect)
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path), mode="r")[...], expect)
    assert not any(files for i in range(5, 10)
                   for _, _, files in os.walk(tmp_path / "c" / str(i)))
    assert leftovers(tmp_path) == []


def test_a_subclass_set_many_sees_whole_uncompressed_chunks(tmp_path):
    """A LocalStore subclass that changes ``set_many`` (to log or replicate writes) gets
    every chunk of a write through it: no ``set_regions`` behind its back."""
    seen = []

    class Logged(LocalStore):
        def set_many(self, items):
            items = list(items)
            seen.extend(k for k, _ in items)
            super().set_many(items)

    store = Logged(tmp_path)
    assert not store.fast_set_regions and LocalStore(tmp_path).fast_set_regions
    a = zarrfast.create_array(store, shape=(64, 64), chunks=(16, 16), dtype="<u2",
                              compressors=None)
    a[...] = np.arange(64 * 64, dtype="<u2").reshape(64, 64)
    assert sorted(k for k in seen if k.startswith("c/")) == sorted(
        f"c/{i}/{j}" for i in range(4) for j in range(4))


def test_set_many_takes_values_set_takes(tmp_path):
    store = LocalStore(tmp_path)
    strided = np.arange(10, dtype="u1")[::2]
    fortran = np.asfortranarray(np.arange(6, dtype="u1").reshape(2, 3))
    store.set_many([("a", strided), ("b", fortran), ("c", bytearray(b"xyz")),
                    ("d", np.zeros((0, 3)))])
    assert store.get("a") == strided.tobytes()
    assert store.get("b") == memoryview(fortran).tobytes()
    assert store.get("c") == b"xyz" and store.get("d") == b""


def test_write_batches_are_bounded_in_bytes(tmp_path, monkeypatch):
    from zarrfast.engine import chunked as pipeline

    sizes = []
    original = LocalStore.set_many

    def spy(self, items):
        items = list(items)
        sizes.append(sum(memoryview(v).nbytes for _, v in items))
        return original(self, items)

    monkeypatch.setattr(LocalStore, "set_many", spy)
    monkeypatch.setattr(pipeline, "WRITE_BATCH_BYTES", 4 * 2**20)
    with config.set(threads=1):
        a = zarrfast.create_array(str(tmp_path), shape=(64, 2**17), chunks=(1, 2**17),
                                  dtype="<f8", compressors=None)  # 64 chunks of 1 MiB
        a[...] = 1.5
    assert sizes and max(sizes) <= 4 * 2**20
    np.testing.assert_array_equal(a[...], 1.5)


def test_an_error_mid_batch_still_writes_what_came_before(tmp_path):
    """A chunk that cannot be decoded for a partial write fails the write, naming it;
    the chunks of its batch encoded before it are written, as chunk by chunk."""
    from zarrfast.errors import ChunkDecodeError

    a = zarrfast.create_array(str(tmp_path), shape=(100,), chunks=(10,), dtype="i4",
                              compressors={"name": "zstd", "configuration": {"level": 1}})
    a[...] = np.arange(100)
    (tmp_path / "c" / "9").write_bytes(b"not zstd")
    with config.set(threads=1), pytest.raises(ChunkDecodeError, match="c/9"):
        a[1:99] = -1  # partial first and last chunks (the last one corrupt)
    np.testing.assert_array_equal(a[0:90], np.r_[0, np.full(89, -1)])


# ---------------------------------------------------------------------------
# Directories a batch makes (LocalStore._open_dir)
# ---------------------------------------------------------------------------

def test_a_new_row_directory_is_one_mkdir_in_its_parent(tmp_path, monkeypatch):
    """A fresh write makes a directory per row of chunks (``c/3/5`` beside ``c/3/4``):
    one ``mkdir`` in the existing parent, not one per level from the root (12 system
    calls and 3 exceptions each before)."""
    store = LocalStore(tmp_path)
    store.set_many([("c/3/4/0", b"a"), ("c/3/4/1", b"b")])
    made: list[str] = []
    real_mkdir = os.mkdir

    def mkdir(path, *args, **kwargs):
        made.append(os.fsdecode(path))
        return real_mkdir(path, *args, **kwargs)

    monkeypatch.setattr(os, "mkdir", mkdir)
    store.set_many([("c/3/5/0", b"x"), ("c/3/5/1", b"y")])
    assert made == ["5"]
    store.set_many([("d/1/0", b"z"), ("d/1/1", b"w")])  # no parent yet: level by level
    assert made[1:] == ["d", "1"]
    monkeypatch.undo()
    assert [store.get(k) for k in ("c/3/5/0", "c/3/5/1", "d/1/0", "d/1/1")] == [
        b"x", b"y", b"z", b"w"]
    assert leftovers(tmp_path) == []


def _rows_in_the_way(tmp_path, how: str, first: str):
    """A store whose row ``c/3`` holds ``first``, a file at ``c/3/5`` and a link out of
    the root at ``c/3/6``; its root, the link's target and a function writing b"v" (or
    8 bytes of a region) to keys with ``how`` (``set_many`` or ``set_regions``)."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    store = LocalStore(root)
    store.set(first, b"a")
    (root / "c" / "3" / "5").write_bytes(b"a file")
    (root / "c" / "3" / "6").symlink_to(outside, target_is_directory=True)
    src = np.arange(8, dtype=np.uint8)

    def write(keys):
        if how == "set_many":
            store.set_many([(k, b"v") for k in keys])
        else:
            store.set_regions(keys, src, np.zeros(len(keys), dtype=np.int64),
                              np.array([1], dtype=np.int64), np.array([8], dtype=np.int64), 1)

    return root, outside, store, write


@pytest.mark.parametrize("how", ["set_many", "set_regions"])
def test_a_file_or_link_where_a_row_directory_goes_is_named(tmp_path, how):
    """What is in the way of a new directory whose parent exists is still refused,
    naming the key: a file there, or a link out of the root."""
    root, outside, store, write = _rows_in_the_way(tmp_path, how, "c/3/4/0")

    with pytest.raises(ZarrfastError, match="c/3/5/0"):
        write(["c/3/5/0", "c/3/5/1"])
    assert (root / "c" / "3" / "5").read_bytes() == b"a file"
    with pytest.raises(InvalidKeyError, match="c/3/6/0"):
        write(["c/3/6/0", "c/3/6/1"])
    assert os.listdir(outside) == []
    assert leftovers(tmp_path) == []


def test_a_new_row_directory_is_fsynced_into_its_parent(tmp_path, monkeypatch):
    """With ``fsync`` the new directory's entry is made durable, as level by level."""
    store = LocalStore(tmp_path, fsync=True)
    store.set("c/3/4/0", b"a")
    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd))[1])
    fd = store._open_dir("c/3/5", "c/3/5/0", create=True)
    assert fd is not None
    os.close(fd)
    assert (tmp_path / "c" / "3" / "5").is_dir() and synced


def test_a_row_directory_removed_as_it_is_made_is_a_concurrent_delete(tmp_path, monkeypatch):
    """A new directory removed right after its ``mkdir`` (a concurrent delete of the
    node) stores nothing and says so, as the level-by-level way does."""
    store = LocalStore(tmp_path)
    store.set("c/3/4/0", b"a")
    real_mkdir = os.mkdir

    def made_then_removed(path, mode=0o777, *, dir_fd=None):
        real_mkdir(path, mode, dir_fd=dir_fd)
        os.rmdir(path, dir_fd=dir_fd)

    monkeypatch.setattr(os, "mkdir", made_then_removed)
    with pytest.raises(ConcurrentWriteError, match="c/3/5"):
        store.set_many([("c/3/5/0", b"x"), ("c/3/5/1", b"y")])
    monkeypatch.undo()
    assert not (tmp_path / "c" / "3" / "5").exists()
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("depth", ["parent there", "level by level"])
def test_a_parent_removed_before_its_row_is_made_is_a_concurrent_delete(tmp_path, monkeypatch,
                                                                        depth):
    """The directory a new row is made in removed just before the ``mkdir`` (a concurrent
    ``delete_dir`` of the node: the ``mkdir`` then fails with ENOENT in the removed
    directory) is a concurrent delete naming the key, as a row removed after it is made:
    not a ``StoreWriteError`` about a file system that cannot make directories."""
    import shutil

    store = LocalStore(tmp_path)
    if depth == "parent there":
        store.set("c/3/4/0", b"a")  # c/3 exists: its new row c/3/5 is made in it
        key = "c/3/5/0"
    else:
        key = "c/3/5/0"  # nothing yet: made level by level from the root
    real_mkdir = os.mkdir

    def parent_removed_first(path, mode=0o777, *, dir_fd=None):
        if dir_fd is not None and path != "c":
            shutil.rmtree(tmp_path / "c")  # the node deleted meanwhile
        return real_mkdir(path, mode, dir_fd=dir_fd)

    monkeypatch.setattr(os, "mkdir", parent_removed_first)
    with pytest.raises(ConcurrentWriteError, match="c/3/5/0") as info:
        store.set_many([(key, b"x"), ("c/3/5/1", b"y")])
    monkeypatch.undo()
    assert "removed" in str(info.value)
    assert not (tmp_path / "c").exists()
    assert leftovers(tmp_path) == []
    store.set_many([(key, b"x")])  # a write after the delete makes its directories again
    assert store.get(key) == b"x"


# ---------------------------------------------------------------------------
# Sibling directories one batched call makes (LocalStore._parents)
# ---------------------------------------------------------------------------

def _rows(prefix: str, rows, tag: bytes, n: int = 3) -> list[tuple[str, bytes]]:
    return [(f"{prefix}/{r}/{j}", tag + bytes([r, j])) for r in rows for j in range(n)]


@pytest.mark.parametrize("how", ["set_many", "set_regions"])
def test_one_call_making_sibling_rows_refuses_what_is_in_their_way(tmp_path, how):
    """A call that makes row ``c/3/4`` and then needs ``c/3/5`` and ``c/3/6`` (made
    beside it in the same call) refuses a file in the way and a link out of the root,
    naming the key, and writes nothing out there."""
    # (the parent c/3 exists)
    root, outside, store, write = _rows_in_the_way(tmp_path, how, "c/3/0/0")

    with pytest.raises(ZarrfastError, match="c/3/5/0"):
        write(["c/3/4/0", "c/3/4/1", "c/3/5/0", "c/3/5/1"])
    assert (root / "c" / "3" / "5").read_bytes() == b"a file"
    with pytest.raises(InvalidKeyError, match="c/3/6/0"):
        write(["c/3/7/0", "c/3/7/1", "c/3/6/0", "c/3/6/1"])
    assert os.listdir(outside) == []
    # a link inside the root beside a new row is followed, as on its own
    (root / "elsewhere").mkdir()
    (root / "c" / "3" / "8").symlink_to(root / "elsewhere", target_is_directory=True)
    write(["c/3/9/0", "c/3/8/0"])
    assert (root / "elsewhere" / "0").exists() and (root / "c" / "3" / "9" / "0").exists()
    assert leftovers(tmp_path) == []


def test_one_call_making_many_sibling_rows_stores_them_all(tmp_path, monkeypatch):
    """A fresh call over ten new rows of one parent makes each with one ``mkdir`` in that
    parent and stores every value; the same call again (the rows there) replaces them."""
    store = LocalStore(tmp_path)
    store.set("c/0/0/0", b"seed")
    made: list[tuple[str, int | None]] = []
    real_mkdir = os.mkdir

    def mkdir(path, mode=0o777, *, dir_fd=None):
        made.append((os.fsdecode(path), dir_fd))
        return real_mkdir(path, mode, dir_fd=dir_fd)

    monkeypatch.setattr(os, "mkdir", mkdir)
    items = _rows("c/0", range(1, 11), b"x")
    store.set_many(items)
    assert [name for name, _ in made] == [str(r) for r in range(1, 11)]
    assert None not in {fd for _, fd in made}
    monkeypatch.undo()
    assert [store.get(k) for k, _ in items] == [v for _, v in items]
    store.set_many([(k, v + b"!") for k, v in items])
    assert [store.get(k) for k, _ in items] == [v + b"!" for _, v in items]
    assert leftovers(tmp_path) == []


def _write_rows_in_process(root: str, tag: int, rounds: int) -> None:
    store = LocalStore(root)
    for k in range(rounds):
        store.set_many(_rows(f"c/{k}", range(8), bytes([tag])))


def test_processes_making_the_same_sibling_rows_store_every_value(tmp_path):
    """Two processes and two threads make the same new rows at once (each call eight
    sibling directories under a new parent: their ``mkdir`` calls race), every value
    stored, no temporary file left."""
    import multiprocessing as mp

    root = str(tmp_path / "s")
    LocalStore(root).set("zarr.json", b"{}")
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_write_rows_in_process, args=(root, t, 20)) for t in (1, 2)]
    for p in procs:
        p.start()
    errors: list[BaseException] = []

    def thread(tag: int) -> None:
        try:
            _write_rows_in_process(root, tag, 20)
        except BaseException as e:  # (re-raised below)
            errors.append(e)

    import threading

    threads = [threading.Thread(target=thread, args=(t,)) for t in (3, 4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=120)
    for p in procs:
        p.join(timeout=120)
    assert not errors and [p.exitcode for p in procs] == [0, 0]
    store = LocalStore(root)
    # every process wrote every key; the last writer of each wins, whole
    for k in range(20):
        for key, value in _rows(f"c/{k}", range(8), b"?"):
            got = store.get(key)
            assert got is not None and got[0] in (1, 2, 3, 4) and got[1:] == value[1:]
    assert leftovers(tmp_path) == []


def test_rows_deleted_while_a_call_makes_them_are_made_again(tmp_path):
    """The node deleted (``delete_dir``) over and over while threads write new sibling
    rows into it: a write stores its values or raises ``ConcurrentWriteError`` naming a
    key (a directory removed between its ``mkdir`` and its use, or a parent removed
    before the ``mkdir``: before a3817d4 that was a ``StoreWriteError`` ENOENT); the
    writes after the last delete are all there."""
    import threading

    store = LocalStore(tmp_path / "s")
    store.set("zarr.json", b"{}")
    stop = threading.Event()
    errors: list[BaseException] = []

    def writer(tag: int) -> None:
        try:
            k = 0
            while not stop.is_set():
                try:
                    store.set_many(_rows(f"c/{k % 5}", range(6), bytes([tag])))
                except ConcurrentWriteError as e:
                    assert f"c/{k % 5}/" in str(e)
                k += 1
        except BaseException as e:  # (re-raised below)
            errors.append(e)

    def deleter() -> None:
        try:
            for _ in range(30):
                try:
                    store.delete_dir("c")
                except ConcurrentWriteError:
                    pass
        except BaseException as e:  # (re-raised below)
            errors.append(e)

    writers = [threading.Thread(target=writer, args=(t,)) for t in (1, 2)]
    d = threading.Thread(target=deleter)
    for th in writers:
        th.start()
    d.start()
    d.join(timeout=120)
    stop.set()
    for th in writers:
        th.join(timeout=120)
    assert not errors
    final = _rows("c/9", range(6), b"\x07")
    store.set_many(final)
    assert [store.get(k) for k, _ in final] == [v for _, v in final]
    assert leftovers(tmp_path) == []
