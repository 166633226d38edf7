"""Review of h56/writes2 (103ef00, as of 06:20): ``LocalStore._open_dir`` makes a missing
directory whose parent exists with one ``mkdir`` in that parent (``_make_in_parent``),
not level by level from the root.

No finding.  Guards (pass on main and on the branch):

* threads writing at once into the same new row directories (each ``mkdir`` racing
  the others': one makes it, the others find it) store every value, leave no
  temporary file, and a fresh array written at two threads is the same files, byte for
  byte, as at one thread;
* a parent reached through a link inside the root is followed (the directory is made
  in the link's target), and a link out of the root is refused naming the key, with
  nothing made out there.
"""

from __future__ import annotations

import os
import threading

import numpy as np

import zarrfast
from zarrfast import config
from zarrfast.errors import InvalidKeyError
from zarrfast.storage import LocalStore

from _helpers.files import file_bytes


def test_threads_making_the_same_new_rows_store_every_value(tmp_path) -> None:
    store = LocalStore(tmp_path / "s")
    store.set("c/0/0/0", b"seed")  # (the parents exist: the one-mkdir way)
    errors: list[BaseException] = []
    barrier = threading.Barrier(4)

    def write(t: int) -> None:
        try:
            barrier.wait(timeout=30)
            for row in range(1, 30):
                store.set_many([(f"c/0/{row}/{t}{j}", bytes([t, row, j])) for j in range(3)])
        except BaseException as e:  # (re-raised below)
            errors.append(e)

    threads = [threading.Thread(target=write, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=120)
    assert not errors and not any(th.is_alive() for th in threads)
    for t in range(4):
        for row in range(1, 30):
            for j in range(3):
                assert store.get(f"c/0/{row}/{t}{j}") == bytes([t, row, j])
    names = [n for _, _, ns in os.walk(tmp_path) for n in ns]
    assert len(names) == 1 + 4 * 29 * 3  # (no temporary file left)


def test_a_fresh_write_at_two_threads_is_the_files_of_one(tmp_path) -> None:
    shape = (40, 24, 36)
    x = (np.arange(np.prod(shape)) % 251).astype("<u2").reshape(shape)
    got = []
    for threads in (1, 2):
        path = str(tmp_path / f"t{threads}")
        with config.set(threads=threads):
            a = zarrfast.create_array(path, shape=shape, chunks=(4, 4, 6), dtype="<u2",
                                      fill_value=0, compressors=[{"name": "zstd"}])
            a[...] = x
            a[3:37, 1:23, 5:31] = x[3:37, 1:23, 5:31] + 1
        got.append(file_bytes(path))
    assert got[0] == got[1]


def test_links_on_the_way_to_a_new_row(tmp_path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "real" / "3").mkdir(parents=True)
    outside.mkdir()
    (root / "c").symlink_to(root / "real", target_is_directory=True)
    (root / "d").symlink_to(outside, target_is_directory=True)
    store = LocalStore(root)
    store.set_many([("c/3/5/0", b"x"), ("c/3/5/1", b"y")])
    assert (root / "real" / "3" / "5" / "0").read_bytes() == b"x"
    assert store.get("c/3/5/1") == b"y"
    (outside / "3").mkdir()
    try:
        store.set_many([("d/3/5/0", b"x")])
    except InvalidKeyError as e:
        assert "d/3/5/0" in str(e)
    else:  # pragma: no cover - the test's failure
        raise AssertionError("a link out of the root was followed")
    assert os.listdir(outside / "3") == []
