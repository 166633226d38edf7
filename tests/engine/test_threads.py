"""Threads: the thread count never changes results, ``config.set`` validates and
restores, ``ZARRFAST_THREADS``, and the pool after a fork.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import zarrfast
from zarrfast.codecs import BloscCodec
from zarrfast.errors import ZarrfastError

from _helpers.arrays import random_data, same
from _helpers.threads import wait_child

# ---------------------------------------------------------------------------
# threads
# ---------------------------------------------------------------------------


def test_thread_count_gives_identical_results() -> None:
    rng = np.random.default_rng(11)
    data = random_data(np.dtype("f8"), (37, 29), rng)
    stores = {}
    results = {}
    for threads in (1, 2, 8):
        with zarrfast.config.set(threads=threads):
            assert zarrfast.config.get("threads") == threads
            s = zarrfast.MemoryStore()
            a = zarrfast.create_array(s, shape=(37, 29), chunks=(4, 5), dtype="f8",
                                      compressors=[BloscCodec(cname="lz4")])
            a[...] = data
            a[3:30:3, ::-2] = -1.0
            results[threads] = (a[...], a[::-3, 5:])
            stores[threads] = {k: s.get(k) for k in s.list()}
    for threads in (2, 8):
        same(results[threads][0], results[1][0])
        same(results[threads][1], results[1][1])
        assert stores[threads] == stores[1]  # byte-identical chunks


def test_config_set_validates_and_restores() -> None:
    before = zarrfast.config.get("threads")
    with zarrfast.config.set(threads=1):
        assert zarrfast.config.get("threads") == 1
    assert zarrfast.config.get("threads") == before
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ZarrfastError):
            zarrfast.config.set(threads=bad)
    with pytest.raises(ZarrfastError):
        zarrfast.config.set(nope=1)


def test_zarrfast_threads_environment_variable(tmp_path: Path) -> None:
    script = (
        "import numpy as np, zarrfast, sys\n"
        "assert zarrfast.config.get('threads') == 1, zarrfast.config.get('threads')\n"
        "a = zarrfast.open_array(sys.argv[1], mode='r')\n"
        "sys.stdout.write(a[...].tobytes().hex())\n"
    )
    data = random_data(np.dtype("i8"), (20, 20), np.random.default_rng(4))
    zarrfast.create_array(tmp_path / "a.zarr", data=data, chunks=(3, 7))
    env = {**os.environ, "ZARRFAST_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", script, str(tmp_path / "a.zarr")], env=env,
                         capture_output=True, text=True, check=False, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert bytes.fromhex(out.stdout) == data.tobytes()
    env["ZARRFAST_THREADS"] = "zero"
    bad = subprocess.run([sys.executable, "-c", "import zarrfast"], env=env,
                         capture_output=True, text=True, check=False, cwd=tmp_path)
    assert bad.returncode != 0 and "ZARRFAST_THREADS" in bad.stderr


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_pool_survives_fork(tmp_path) -> None:
    """A forked child (multiprocessing 'fork', dask) gets a fresh thread pool and reads."""
    # big enough (64 chunks of 8 KiB) that reads and writes go to the pool, not inline
    data = np.arange(512 * 512, dtype="u2").reshape(512, 512)
    a = zarrfast.create_array(str(tmp_path / "f.zarr"), shape=data.shape, chunks=(64, 64),
                              dtype="u2", compressors=None)
    with zarrfast.config.set(threads=2):
        a[...] = data  # the parent's pool now has worker threads
        pid = os.fork()
        if pid == 0:  # child: must not wait on the parent's (absent) workers
            try:
                ok = np.array_equal(a[...], data)
                a[0:8, 0:8] = 7
                os._exit(0 if ok else 1)
            except BaseException:  # noqa: BLE001
                os._exit(2)
        status = wait_child(pid, "reading the array")
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert (a[0:8, 0:8] == 7).all()
