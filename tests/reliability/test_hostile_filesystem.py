"""A hostile file system (issue "Reliability II", classes 2-4): symbolic links that lead
out of a store's root, on reads and in a race with writes, and a disk that fills up.

The rule a local store keeps: no read or write resolves to a path outside the root.
Links that stay inside the root are followed; links that leave it are refused with an
error naming the key.  A full disk is an error naming the key, and every key keeps the
value it had.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import zarrfast
from zarrfast.errors import InvalidKeyError, ZarrfastError
from zarrfast.storage import LocalStore
from zarrfast.storage.errors import StoreWriteError

posix_only = pytest.mark.skipif(os.name != "posix", reason="POSIX symbolic links")

#: the array layouts whose reads take different paths: raw chunks (read straight into
#: the output), zstd chunks (read and decoded by one kernel call), and sharded
LAYOUTS = {
    "raw": dict(compressors=None),
    "zstd": dict(compressors="auto"),
    "sharded": dict(compressors="auto", shards=(8,)),
}


def _outside(tmp_path: Path) -> Path:
    out = tmp_path / "outside"
    out.mkdir(exist_ok=True)
    return out


# -- class 2: symbolic links on reads ---------------------------------------------------

@posix_only
@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("how", ["relative", "absolute"])
def test_a_chunk_linked_outside_the_root_is_not_read(tmp_path, layout, how):
    """The chunk file is a link to a file outside the root holding a valid chunk of
    other data: every read refuses it naming the key; it used to return that data."""
    root = tmp_path / "store"
    a = zarrfast.create_array(LocalStore(root), name="a", shape=(16,), chunks=(4,),
                              dtype="i4", **LAYOUTS[layout])
    a[:] = np.arange(16)
    stored = sorted(p.relative_to(root / "a").as_posix() for p in (root / "a").rglob("*")
                    if p.is_file() and p.name != "zarr.json")
    victim = root / "a" / stored[-1]
    secret = _outside(tmp_path) / "secret"
    # the secret is a valid chunk of other data (what the attacker wants us to read)
    b = zarrfast.create_array(LocalStore(tmp_path / "other"), name="a", shape=(16,),
                              chunks=(4,), dtype="i4", **LAYOUTS[layout])
    b[:] = np.arange(16) + 1000
    shutil.copyfile(tmp_path / "other" / "a" / stored[-1], secret)
    victim.unlink()
    victim.symlink_to(os.path.relpath(secret, victim.parent) if how == "relative" else secret)
    a = zarrfast.open_array(LocalStore(root), path="a", mode="r")
    key = f"a/{stored[-1]}"
    for read in (lambda: a[:], lambda: a[12:], lambda: a[[15]], lambda: a[-1]):
        with pytest.raises(InvalidKeyError, match=key.replace(".", r"\.")) as info:
            read()
        assert "outside" in str(info.value)
    store = LocalStore(root)
    for op in (lambda: store.get(key), lambda: store.get(key, (0, 4)),
               lambda: store.exists(key), lambda: store.getsize(key)):
        with pytest.raises(InvalidKeyError, match="outside"):
            op()
    np.testing.assert_array_equal(a[:12] if layout != "sharded" else a[:8],
                                  np.arange(12 if layout != "sharded" else 8))


@posix_only
def test_a_metadata_document_linked_outside_is_not_read(tmp_path):
    root = tmp_path / "store"
    g = zarrfast.open_group(LocalStore(root), mode="w")
    g.create_array("a", shape=(4,), dtype="u1")
    doc = _outside(tmp_path) / "zarr.json"
    doc.write_text('{"zarr_format": 3, "node_type": "group", "attributes": {"secret": 1}}')
    (root / "zarr.json").unlink()
    (root / "zarr.json").symlink_to(doc)
    with pytest.raises(InvalidKeyError, match="'zarr.json'.*outside"):
        zarrfast.open_group(LocalStore(root), mode="r")
    assert doc.read_text().startswith('{"zarr_format": 3')


@posix_only
def test_a_directory_linked_outside_is_not_read_or_listed(tmp_path):
    """A chunk directory inside the store is a link to a directory outside."""
    root = tmp_path / "store"
    a = zarrfast.create_array(LocalStore(root), name="a", shape=(8,), chunks=(4,),
                              dtype="u1", compressors=None)
    a[:] = 7
    outside = _outside(tmp_path)
    shutil.move(root / "a" / "c", outside / "c")
    (outside / "c" / "0").write_bytes(bytes(range(4)))  # what the link would show
    (root / "a" / "c").symlink_to(outside / "c", target_is_directory=True)
    store = LocalStore(root)
    with pytest.raises(InvalidKeyError, match="a/c/0.*outside"):
        zarrfast.open_array(store, path="a", mode="r")[:]
    for op in (lambda: list(store.list_prefix("a/c/")), lambda: list(store.list_dir("a/c"))):
        with pytest.raises(InvalidKeyError, match="outside"):
            op()


@posix_only
def test_links_that_stay_inside_the_root_work(tmp_path):
    """The chosen rule: a link whose target is inside the root is followed (relative
    or absolute), for reads, batched reads and writes."""
    root = tmp_path / "store"
    a = zarrfast.create_array(LocalStore(root), name="a", shape=(16,), chunks=(4,),
                              dtype="i4", compressors="auto")
    a[:] = np.arange(16)
    b = zarrfast.create_array(LocalStore(root), name="b", shape=(16,), chunks=(4,),
                              dtype="i4", compressors=None)
    b[:] = np.arange(16) * 2
    shutil.move(root / "a" / "c", root / "chunks-a")
    (root / "a" / "c").symlink_to("../chunks-a", target_is_directory=True)
    (root / "b" / "c" / "3").unlink()
    (root / "b" / "c" / "3").symlink_to(root / "b" / "c" / "0")  # absolute, inside
    np.testing.assert_array_equal(zarrfast.open_array(LocalStore(root), path="a")[:],
                                  np.arange(16))
    want = np.arange(16) * 2
    want[12:] = want[:4]
    np.testing.assert_array_equal(zarrfast.open_array(LocalStore(root), path="b")[:], want)
    a = zarrfast.open_array(LocalStore(root), path="a", mode="r+")
    a[:] = -np.arange(16)  # written through the link, inside the root
    np.testing.assert_array_equal(a[:], -np.arange(16))
    assert sorted(os.listdir(root / "chunks-a")) == ["0", "1", "2", "3"]


# -- class 3: symbolic-link races on writes -------------------------------------------

#: swaps until the file ``stop`` exists and it has swapped ``least`` times (making the
#: file ``reached`` then); a day's deadline only ends a hang
SWAPPER = textwrap.dedent("""
    import ctypes, os, sys, time
    root, outside, least = sys.argv[1], sys.argv[2], int(sys.argv[3])
    stop, reached = sys.argv[4], sys.argv[5]
    d, link = os.path.join(root, "d"), os.path.join(root, "d-link")
    os.symlink(outside, link)
    libc = ctypes.CDLL(None, use_errno=True)
    AT_FDCWD, RENAME_EXCHANGE = -100, 2
    def exchange():  # the directory and the link trade places in one step
        if libc.renameat2(AT_FDCWD, d.encode(), AT_FDCWD, link.encode(), RENAME_EXCHANGE):
            raise OSError(ctypes.get_errno(), "renameat2")
    exchange(); exchange()
    print("ready", flush=True)
    hang = time.monotonic() + 86400
    n = 0
    while (n < least or not os.path.exists(stop)) and time.monotonic() < hang:
        exchange()  # "d" is now a link out of the root...
        exchange()  # ...and the real directory again
        n += 1
        if n == least:
            open(reached, "w").close()
    print(n, flush=True)
""")


@posix_only
@pytest.mark.parametrize("op", ["set", "set_many", "delete", "delete_dir"])
def test_a_directory_swapped_for_a_link_cannot_redirect_a_write(tmp_path, op):
    """Another process swaps the key's directory for a link out of the root (one
    ``renameat2(RENAME_EXCHANGE)`` step each way), many thousand times, while this one
    writes or deletes there: nothing outside is ever created,
    changed or removed, and each operation either works inside the root or raises a
    zarrfast error."""
    root = tmp_path / "store"
    outside = _outside(tmp_path)
    (outside / "victim").write_bytes(b"keep")
    (outside / "sub").mkdir()
    (outside / "sub" / "deep").write_bytes(b"keep too")
    store = LocalStore(root)
    store.set("d/victim", b"inside")
    # counts, not seconds (it was: as many as fit in 2.5 s, and more than 100 swaps in 3 s
    # asserted): 500 operations at least, and until the swapper has swapped 100 times
    least_ops, least_swaps = 500, 100
    stop, reached = tmp_path / "stop", tmp_path / "reached"
    swapper = subprocess.Popen([sys.executable, "-c", SWAPPER, str(root), str(outside),
                                str(least_swaps), str(stop), str(reached)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        if swapper.stdout.readline().strip() != "ready":
            pytest.skip(f"cannot swap directories here: {swapper.communicate()[1][-500:]}")
        done = refused = 0
        i = 0
        # ... and until one operation has worked: which of them fit between two swaps
        # depends on how the system schedules the two processes (on a loaded machine, a
        # run of 500 refusals happened); 200,000 at most, to end a hang
        while (i < least_ops or not reached.exists() or done == 0) and i < 200_000:
            if swapper.poll() is not None:
                pytest.fail(f"the swapper stopped early: {swapper.communicate()[1][-500:]}")
            i += 1
            try:
                if op == "set":
                    store.set(f"d/k{i % 50}", b"x" * 64)
                elif op == "set_many":
                    store.set_many([(f"d/k{j}", b"y" * 64) for j in range(4)])
                elif op == "delete":
                    store.delete("d/victim")
                    store.set("d/victim", b"inside")  # (a write too)
                else:
                    store.delete_dir("d/sub")
                    store.set("d/sub/deep", b"inside")
                done += 1
            except (ZarrfastError, FileNotFoundError):
                refused += 1
    finally:
        stop.touch()
        out = swapper.communicate(timeout=600)[0].split()
        swaps = int(out[-1]) if out else 0
    assert swaps >= least_swaps and i >= least_ops, "the race was not run"
    assert sorted(os.listdir(outside)) == ["sub", "victim"]
    assert (outside / "victim").read_bytes() == b"keep"
    assert os.listdir(outside / "sub") == ["deep"]
    assert (outside / "sub" / "deep").read_bytes() == b"keep too"
    assert done > 0


# -- class 4: a full disk ----------------------------------------------------------------

@pytest.fixture
def small_disk(tmp_path):
    """A 1 MiB tmpfs (root only; skipped otherwise)."""
    if os.name != "posix" or os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mnt = tmp_path / "disk"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_a_full_disk_names_the_key_and_keeps_every_value(small_disk):
    store = LocalStore(small_disk / "store")
    a = zarrfast.create_array(store, name="a", shape=(64, 1024), chunks=(8, 1024),
                              dtype="u1", compressors=None)
    a[:8] = 1  # one chunk of 8 KiB
    before = a[:]
    filler = np.frombuffer(os.urandom(1 << 20), dtype=np.uint8)
    with pytest.raises(StoreWriteError) as info:
        store.set("filler", filler)  # larger than the disk
    assert "'filler'" in str(info.value) and info.value.errno == errno.ENOSPC
    assert isinstance(info.value, OSError)
    assert store.get("filler") is None
    # fill the disk almost up, then write the whole array: which chunk fails is up to
    # the disk, but the error names one, and every key keeps its previous value
    for i in range(200):
        try:
            store.set(f"pad/{i}", os.urandom(16 << 10))
        except StoreWriteError:
            break
    with pytest.raises(StoreWriteError, match=r"key 'a/c/\d+/0'.*No space") as info:
        a[:] = 2
    assert info.value.errno == errno.ENOSPC
    for i in range(8):
        store.delete(f"pad/{i}")  # room to read and check
    got = zarrfast.open_array(store, path="a", mode="r")[:]
    rows = [got[r * 8:(r + 1) * 8] for r in range(8)]
    for r, block in enumerate(rows):  # each chunk: its old value or the new one, whole
        old = before[r * 8:(r + 1) * 8]
        assert (block == old).all() or (block == 2).all(), f"chunk {r} is torn"
    with pytest.raises(StoreWriteError):  # metadata too: the old document stays
        for i in range(200):
            store.set(f"pad2/{i}", os.urandom(16 << 10))
    with pytest.raises(StoreWriteError, match="a/zarr.json"):
        a.attrs["big"] = "x" * (200 << 10)
    assert zarrfast.open_array(store, path="a", mode="r").shape == (64, 1024)
    assert not [n for n in os.listdir(small_disk / "store" / "a") if "tmp" in n]


@posix_only
def test_a_root_removed_and_made_again_is_used(tmp_path):
    """The store keeps its root open; a root removed (or replaced) since is opened
    again, so no write lands in a deleted directory."""
    root = tmp_path / "store"
    store = LocalStore(root)
    store.set("a/k", b"1")
    assert store.get("a/k") == b"1"
    shutil.rmtree(root)
    assert store.get("a/k") is None and not store.exists("a/k")
    store.set("k2", b"2")  # a key at the root itself
    store.set("a/k3", b"3")
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()) \
        == ["a/k3", "k2"]
    os.rename(root, tmp_path / "moved")
    root.mkdir()
    (root / "k2").write_bytes(b"new")
    (root / "k5").write_bytes(b"5")
    assert store.get("k5") == b"5"  # a miss in the moved root: the new one is looked at
    time.sleep(0.15)  # a hit: the root's path is checked again within 0.1 s
    assert store.get("k2") == b"new"
    store.set("k4", b"4")
    assert (root / "k4").read_bytes() == b"4" and not (tmp_path / "moved" / "k4").exists()
