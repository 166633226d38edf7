"""Writers sharing one shard (issue "Trust", class 1), with real threads, real processes,
dask and a real S3 server.

Writers on disjoint inner chunks of the same shard each read the shard, change their
inner chunks and write it back.  Unserialised, a writer that read the shard before
another one wrote it writes the other one's inner chunks back with their old bytes: an
update lost without an error.  zarrfast makes the read-modify-write of a shard atomic:

* in one process, a lock per (store, shard key), shared by every ``Array`` and store
  object of the same data;
* across processes on a ``LocalStore``, an advisory lock per shard (``flock`` on the
  shard's file; while it does not exist, on a lock file next to it, there only while
  it is held, never listed);
* on an ``ObjectStore`` (S3), a conditional write (``If-Match`` the version read, or
  ``If-None-Match`` for a new shard), the read-modify-write retried on conflict.

Every test checks every inner chunk afterwards: each writer's value is there.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import zarrfast
from zarrfast.storage import LocalStore, MemoryStore

from _helpers.locks import FLOCK_HOLDER

#: two shards of 32 inner chunks (16 x 8) each
SHAPE = (16, 512)
SHARDS = (16, 256)
INNER = (16, 8)
N_INNER = SHAPE[1] // INNER[1]
ENV = {**os.environ, "ZARRFAST_THREADS": "2"}


def _create(store, **kw) -> zarrfast.Array:
    return zarrfast.create_array(store, shape=SHAPE, chunks=INNER, shards=SHARDS,
                                 dtype="int32", fill_value=0, **kw)


def _block(j: int) -> tuple[slice, slice]:
    return slice(None), slice(j * INNER[1], (j + 1) * INNER[1])


def _value(j: int) -> np.ndarray:
    """Inner chunk ``j``'s data: distinct per chunk and per element."""
    return (np.arange(INNER[0] * INNER[1], dtype="int32").reshape(INNER) + 1000 * (j + 1))


def _expected() -> np.ndarray:
    out = np.zeros(SHAPE, dtype="int32")
    for j in range(N_INNER):
        out[_block(j)] = _value(j)
    return out


def _lost(a: zarrfast.Array) -> list[int]:
    """The inner chunks that do not hold their writer's value."""
    data = a[...]
    return [j for j in range(N_INNER) if not np.array_equal(data[_block(j)], _value(j))]


def _threads(n: int, work) -> None:
    barrier = threading.Barrier(n)
    errors: list[BaseException] = []

    def run(i: int) -> None:
        barrier.wait()
        try:
            work(i)
        except BaseException as e:  # noqa: BLE001 - asserted on below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads), "writer threads still running: a deadlock?"
    assert not errors, errors


@pytest.fixture
def fast_switching():
    """Switch threads often, so that the writers' steps interleave finely."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(old)


N_WRITERS = 8


def _mine(i: int) -> list[int]:
    """Writer ``i``'s inner chunks: every N_WRITERS-th, so all share both shards."""
    return list(range(i, N_INNER, N_WRITERS))


@pytest.mark.parametrize("kind", ["memory", "local"])
def test_threads_through_one_array_keep_every_inner_chunk(kind, tmp_path, fast_switching):
    for round_ in range(3):
        store = MemoryStore() if kind == "memory" else LocalStore(tmp_path / f"r{round_}.zarr")
        a = _create(store)

        def work(i: int, a=a) -> None:
            for j in _mine(i):
                a[_block(j)] = _value(j)

        _threads(N_WRITERS, work)
        assert _lost(a) == [], f"round {round_}: inner chunks lost"


@pytest.mark.parametrize("kind", ["memory", "local"])
def test_threads_each_with_its_own_array_keep_every_inner_chunk(kind, tmp_path,
                                                                fast_switching):
    for round_ in range(3):
        if kind == "memory":
            data: dict = {}
            _create(MemoryStore(data))

            def opener(data=data):
                return zarrfast.open_array(MemoryStore(data), mode="r+")
        else:
            root = tmp_path / f"r{round_}.zarr"
            _create(LocalStore(root))

            def opener(root=root):
                return zarrfast.open_array(str(root), mode="r+")

        def work(i: int, opener=opener) -> None:
            mine = opener()  # its own Array and its own store object
            for j in _mine(i):
                mine[_block(j)] = _value(j)

        _threads(N_WRITERS, work)
        assert _lost(opener()) == [], f"round {round_}: inner chunks lost"


def _transpose_outside(root: Path) -> None:
    """Rewrite a sharded array's codecs as ``[transpose, sharding_indexed]``: its chunks
    are then shards decoded whole (tensorstore and zarr-python read such arrays)."""
    import json

    meta = json.loads((root / "zarr.json").read_text())
    meta["codecs"] = [{"name": "transpose", "configuration": {"order": [1, 0]}}] + meta["codecs"]
    sharding = meta["codecs"][1]["configuration"]
    sharding["chunk_shape"] = sharding["chunk_shape"][::-1]  # the transposed inner chunks
    (root / "zarr.json").write_text(json.dumps(meta))


def _set(a: zarrfast.Array, j: int, value: np.ndarray, how: str) -> None:
    """Write inner chunk ``j`` by a basic, an orthogonal or a coordinate selection."""
    rows, cols = np.arange(INNER[0]), np.arange(j * INNER[1], (j + 1) * INNER[1])
    if how == "basic":
        a[_block(j)] = value
    elif how == "oindex":
        a.oindex[rows, cols] = value
    else:
        r, c = np.meshgrid(rows, cols, indexing="ij")
        a.vindex[r.ravel(), c.ravel()] = value.ravel()


@pytest.mark.parametrize("layout,how", [
    ("strings", "basic"), ("strings", "oindex"), ("strings", "vindex"),
    ("strings-transpose-outside", "basic"), ("strings-transpose-outside", "oindex"),
    ("transpose-outside", "basic"), ("transpose-outside", "oindex"),
    ("transpose-outside", "vindex"), ("rectilinear-transpose-outside", "basic")])
def test_threads_keep_every_inner_chunk_of_other_shard_layouts(layout, how, tmp_path,
                                                               fast_switching):
    """Shards that are not written by the sharded engine: variable-length strings (each
    shard read, changed and written whole), and chunks that are shards decoded whole
    (an array -> array codec before ``sharding_indexed``, on a regular or a rectilinear
    grid of shards), written by basic, orthogonal and coordinate selections."""
    for round_ in range(3):
        root = tmp_path / f"r{round_}.zarr"
        if layout.startswith("strings"):
            zarrfast.create_array(LocalStore(root), shape=SHAPE, chunks=INNER, shards=SHARDS,
                                  dtype=str, fill_value="")
            if layout == "strings-transpose-outside":
                _transpose_outside(root)

            def value(j: int) -> np.ndarray:
                return _value(j).astype(str)
        else:
            shards = SHARDS if layout == "transpose-outside" else [[16], [128, 384]]
            zarrfast.create_array(LocalStore(root), shape=SHAPE, chunks=INNER, shards=shards,
                                  dtype="int32", fill_value=0)
            _transpose_outside(root)
            value = _value

        def work(i: int, root=root, value=value) -> None:
            mine = zarrfast.open_array(str(root), mode="r+")
            for j in _mine(i):
                _set(mine, j, value(j), how)

        _threads(N_WRITERS, work)
        data = zarrfast.open_array(str(root), mode="r")[...]
        lost = [j for j in range(N_INNER) if not np.array_equal(data[_block(j)], value(j))]
        assert lost == [], f"round {round_}: inner chunks lost"


_WRITER = textwrap.dedent("""
    import sys, time, json
    import numpy as np
    import zarrfast
    where, chunks, start, options = (sys.argv[1], json.loads(sys.argv[2]),
                                     float(sys.argv[3]), json.loads(sys.argv[4]))
    a = zarrfast.open_array(where, mode="r+", storage_options=options or None)
    time.sleep(max(start - time.time(), 0))
    for j in chunks:
        a[:, j * 8:(j + 1) * 8] = (np.arange(128, dtype="int32").reshape(16, 8)
                                  + 1000 * (j + 1))
""")


def _processes(where: str, cwd: Path, n: int, options: dict | None = None,
               env: dict | None = None) -> None:
    import json

    start = time.time() + 2.0  # after every child has imported zarrfast
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, where,
                               json.dumps(list(range(k, N_INNER, n))), str(start),
                               json.dumps(options or {})],
                              stderr=subprocess.PIPE, env={**ENV, **(env or {})}, cwd=cwd)
             for k in range(n)]
    for p in procs:
        assert p.wait(timeout=180) == 0, p.stderr.read().decode()[-3000:]


def test_processes_on_a_local_store_keep_every_inner_chunk(tmp_path, subprocess_cwd):
    for round_ in range(2):
        root = tmp_path / f"r{round_}.zarr"
        _create(LocalStore(root))
        _processes(str(root), subprocess_cwd, 4)
        a = zarrfast.open_array(str(root), mode="r")
        assert _lost(a) == [], f"round {round_}: inner chunks lost"
        # the lock files are gone with the writes, and were never keys
        leftovers = [p.name for p in root.rglob("*") if ".zarrfast" in p.name]
        assert leftovers == []
        assert all(".zarrfast" not in k for k in LocalStore(root).list())
    # zarr-python and tensorstore read what the writers wrote
    zarr = pytest.importorskip("zarr")
    np.testing.assert_array_equal(zarr.open_array(str(root), mode="r")[...], _expected())
    ts = pytest.importorskip("tensorstore")
    t = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": str(root)}}).result()
    np.testing.assert_array_equal(t.read().result(), _expected())


@pytest.mark.parametrize("scheduler", ["threads", "processes"])
def test_dask_store_without_a_lock_keeps_every_block(scheduler, tmp_path):
    """``da.store(x, a, lock=False)`` with blocks of one inner chunk each (what
    ``dask.array.to_zarr`` does)."""
    da = pytest.importorskip("dask.array")
    import dask

    x = da.from_array(_expected(), chunks=INNER)
    rounds = 3 if scheduler == "threads" else 1
    for round_ in range(rounds):
        root = tmp_path / f"r{round_}.zarr"
        a = _create(LocalStore(root))
        with dask.config.set(scheduler=scheduler, num_workers=4 if scheduler == "processes"
                             else 8):
            da.store(x, a, lock=False)
        assert _lost(zarrfast.open_array(str(root), mode="r")) == [], \
            f"round {round_}: blocks lost"


@pytest.mark.parametrize("remote_store", ["obstore", "fsspec"])
def test_processes_on_s3_keep_every_inner_chunk(remote_store, s3_server, subprocess_cwd):
    """Processes writing one shard of an S3 bucket (through obstore or s3fs): no lock is
    shared, so each write is made conditional on the version its writer read."""
    if remote_store == "obstore":
        pytest.importorskip("obstore")
    url = f"s3://{s3_server.bucket}/shared-{remote_store}-{time.time_ns()}.zarr"
    options = s3_server.storage_options()
    with zarrfast.config.set(remote_store=remote_store):
        store = zarrfast.storage.make_store(url, storage_options=options)
    assert type(store).__name__ == {"obstore": "ObjectStore", "fsspec": "FsspecStore"}[
        remote_store]
    _create(store)
    _processes(url, subprocess_cwd, 3, options, env={"ZARRFAST_REMOTE_STORE": remote_store})
    assert _lost(zarrfast.open_array(store, mode="r")) == []
    assert store.conditional_writes


def test_the_s3_server_grants_one_of_two_racing_conditional_writes(s3_server):
    """The test server is as strict as S3: of two PUTs conditional on the same ETag, sent
    at once, one is written and the other refused (412).  moto alone grants both now and
    then (the check and the write are two steps of its request threads), which lost an
    inner chunk in ``test_processes_on_s3_keep_every_inner_chunk`` once; the fixture holds
    a lock across them (``_helpers.s3.atomic_conditional_writes``).  A fine switch
    interval makes the request threads interleave there: moto alone granted both 5 times in 300
    pairs; at that rate, 200 rounds catch it with a probability of about 0.96."""
    from botocore.exceptions import ClientError

    clients = [s3_server.boto3_client() for _ in range(2)]
    key = f"race-{time.time_ns()}"
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for round_ in range(200):
            etag = clients[0].put_object(Bucket=s3_server.bucket, Key=key, Body=b"0")["ETag"]
            won: list[int] = []
            refused: list[int] = []

            def put(i: int, etag=etag, won=won, refused=refused) -> None:
                try:
                    clients[i].put_object(Bucket=s3_server.bucket, Key=key,
                                          Body=bytes([49 + i]), IfMatch=etag)
                    won.append(i)
                except ClientError as e:
                    assert e.response["Error"]["Code"] == "PreconditionFailed"
                    refused.append(i)

            _threads(2, put)
            assert len(won) == 1 and len(refused) == 1, f"round {round_}: {won} won"
            body = clients[0].get_object(Bucket=s3_server.bucket, Key=key)["Body"].read()
            assert body == bytes([49 + won[0]])
    finally:
        sys.setswitchinterval(interval)


def test_a_conditional_write_that_loses_the_race_reads_the_shard_again():
    """Another writer (as another process would) writes the shard between this writer's
    read and its write: the conditional write fails, the read-modify-write is made again
    from the new bytes, and both writers' inner chunks are kept."""
    obstore = pytest.importorskip("obstore.store")
    from zarrfast.storage import ObjectStore

    backing = obstore.MemoryStore()
    reads: list[str] = []

    class Racing(ObjectStore):
        def get_versioned(self, key, **kw):
            got = super().get_versioned(key, **kw)
            reads.append(key)
            if len(reads) == 1:  # the other writer, between this read and this write
                other = zarrfast.open_array(ObjectStore(backing), mode="r+")
                other[_block(1)] = _value(1)
            return got

    store = Racing(backing)
    assert store.conditional_writes
    a = _create(store)
    a[_block(0)] = _value(0)
    assert reads == ["c/0/0", "c/0/0"]  # read, lost the race, read again
    data = zarrfast.open_array(ObjectStore(backing), mode="r")[...]
    for j in (0, 1):
        np.testing.assert_array_equal(data[_block(j)], _value(j))


def test_fsspec_s3_conditional_write_that_loses_the_race_reads_again(s3_server):
    """As above, through s3fs (``IfMatch`` / ``IfNoneMatch`` on ``put_object``)."""
    from zarrfast.storage import FsspecStore

    url = f"s3://{s3_server.bucket}/race-{time.time_ns()}.zarr"
    options = s3_server.storage_options()
    reads: list[str] = []

    class Racing(FsspecStore):
        def get_versioned(self, key, **kw):
            got = super().get_versioned(key, **kw)
            reads.append(key)
            if len(reads) in (1, 3):  # the other writer, before this writer's writes
                other = zarrfast.open_array(FsspecStore.from_url(url, storage_options=options),
                                            mode="r+")
                other[_block(len(reads))] = _value(len(reads))
            return got

    base = FsspecStore.from_url(url, storage_options=options)
    store = Racing(base.fs, base.path)
    assert store.conditional_writes
    a = _create(store)
    a[_block(0)] = _value(0)  # a new shard (If-None-Match), raced: read again
    a[_block(2)] = _value(2)  # an existing shard (If-Match), raced: read again
    assert reads == ["c/0/0"] * 4
    data = zarrfast.open_array(FsspecStore.from_url(url, storage_options=options))[...]
    for j in (0, 1, 2, 3):
        np.testing.assert_array_equal(data[_block(j)], _value(j))


def test_a_shard_left_empty_by_a_conditional_write_reads_as_fill():
    obstore = pytest.importorskip("obstore.store")
    from zarrfast.storage import ObjectStore

    store = ObjectStore(obstore.MemoryStore())
    a = _create(store)
    a[_block(0)] = _value(0)
    a[_block(0)] = 0  # the fill value: the shard has no inner chunk left
    assert (a[...] == 0).all()
    assert (zarrfast.open_array(store, mode="r")[...] == 0).all()




@pytest.mark.skipif(sys.platform == "win32", reason="flock")
def test_a_shard_locked_by_another_process_is_waited_for_then_refused(tmp_path,
                                                                       subprocess_cwd):
    """Another process holding a shard's lock (``flock`` on the shard's file, as
    zarrfast's writers do): a partial write of that shard waits ``lock_timeout``, then
    raises ``LockTimeoutError`` naming the shard's key, having written nothing; once the
    holder is killed, the write goes through."""
    from zarrfast.errors import LockTimeoutError

    root = tmp_path / "data.zarr"
    a = _create(LocalStore(root))
    a[_block(0)] = _value(0)
    before = (root / "c" / "0" / "0").read_bytes()
    holder = subprocess.Popen([sys.executable, "-c", FLOCK_HOLDER, str(root / "c" / "0" / "0")],
                              stdout=subprocess.PIPE, env=ENV, cwd=subprocess_cwd)
    try:
        assert holder.stdout.readline().strip() == b"locked"
        with zarrfast.config.set(lock_timeout=0.3), pytest.raises(LockTimeoutError) as info:
            a[_block(1)] = _value(1)
        assert "'c/0/0'" in str(info.value) and "nothing was written" in str(info.value)
        assert (root / "c" / "0" / "0").read_bytes() == before
        a[_block(40)] = _value(40)  # another shard: another lock
    finally:
        holder.kill()
        holder.wait(timeout=30)
    a[_block(1)] = _value(1)  # the kernel released the dead holder's lock
    data = a[...]
    for j in (0, 1, 40):
        np.testing.assert_array_equal(data[_block(j)], _value(j))


def test_whole_shards_and_unsharded_arrays_take_no_lock(tmp_path, monkeypatch):
    """Only a partial write of a shard is a read-modify-write that needs the lock."""
    from zarrfast.storage import Store

    taken: list[str] = []
    real = Store.value_lock

    def counting(self, key, **kw):
        taken.append(key)
        return real(self, key, **kw)

    monkeypatch.setattr(Store, "value_lock", counting)
    a = _create(LocalStore(tmp_path / "sharded.zarr"))
    a[...] = _expected()  # two whole shards
    a[:, :256] = 7  # one whole shard, a scalar
    assert taken == []
    plain = zarrfast.create_array(LocalStore(tmp_path / "plain.zarr"), shape=SHAPE,
                                  chunks=INNER, dtype="int32", fill_value=0)
    plain[:, 3:17] = 5  # partial chunks of an unsharded array
    assert taken == []
    a[:, 3:17] = 5  # partial writes of a shard: locked
    assert taken == ["c/0/0"]


def test_a_conditional_write_that_always_loses_gives_up_naming_the_shard():
    """Another writer wins every round: the write gives up after ``lock_timeout`` with
    ``ConcurrentWriteError`` naming the shard, and the other writer's bytes stay."""
    obstore = pytest.importorskip("obstore.store")
    from zarrfast.errors import ConcurrentWriteError
    from zarrfast.storage import ObjectStore

    backing = obstore.MemoryStore()
    other = ObjectStore(backing)

    class Losing(ObjectStore):
        def get_versioned(self, key, **kw):
            got = super().get_versioned(key, **kw)
            other.set(key, bytes(other.get(key)))  # a new version of the same bytes
            return got

    a = _create(Losing(backing))
    zarrfast.open_array(other, mode="r+")[_block(0)] = _value(0)
    with zarrfast.config.set(lock_timeout=0.3), pytest.raises(ConcurrentWriteError) as info:
        a[_block(1)] = _value(1)
    assert "'c/0/0'" in str(info.value) and "not stored" in str(info.value)
    data = zarrfast.open_array(other, mode="r")[...]
    np.testing.assert_array_equal(data[_block(0)], _value(0))
    assert (data[_block(1)] == 0).all()


def test_a_shard_lock_is_never_made_outside_the_root(tmp_path):
    """A shard's directory that is a link leading outside the root: the partial write is
    refused naming the key, and no lock file (nor directory) is made out there."""
    from zarrfast.errors import InvalidKeyError

    root = tmp_path / "data.zarr"
    a = _create(LocalStore(root))
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "c").symlink_to(outside)
    with pytest.raises(InvalidKeyError, match="c/0/0"):
        a[_block(1)] = _value(1)
    assert list(outside.rglob("*")) == []


@pytest.mark.parametrize("existing", [True, False])
def test_a_file_system_without_flock_is_refused_naming_the_shard(existing, tmp_path,
                                                                monkeypatch):
    """A file system that refuses ``flock`` (NFS mounted ``nolock``): a partial write of
    a shard raises ``LockUnavailableError`` naming the key and what to do, with nothing
    written; with ``config file_locks=False`` it writes, excluding this process's
    threads only (and the store says it cannot exclude other processes)."""
    import errno

    from zarrfast.errors import LockUnavailableError
    from zarrfast.storage import locks

    def no_flock(fd, op):
        raise OSError(errno.ENOLCK, "No locks available")

    root = tmp_path / "data.zarr"
    a = _create(LocalStore(root))
    if existing:
        a[_block(0)] = _value(0)
    before = {p.name: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    monkeypatch.setattr(locks.fcntl, "flock", no_flock)
    with pytest.raises(LockUnavailableError) as info:
        a[_block(1)] = _value(1)
    text = str(info.value)
    assert "'c/0/0'" in text and "file_locks=False" in text and "nothing was written" in text
    assert {p.name: p.read_bytes() for p in root.rglob("*") if p.is_file()} == before
    with zarrfast.config.set(file_locks=False):
        assert not LocalStore(root).interprocess_locks
        a[_block(1)] = _value(1)
    np.testing.assert_array_equal(a[_block(1)], _value(1))


def test_a_directory_at_a_shard_key_is_refused_naming_the_key(tmp_path):
    root = tmp_path / "data.zarr"
    a = _create(LocalStore(root))
    (root / "c" / "0" / "0").mkdir(parents=True)
    with pytest.raises(zarrfast.errors.ZarrfastError, match="'c/0/0'"):
        a[_block(1)] = _value(1)


@pytest.fixture
def tmp_path_open_to_all():
    """A directory every user can reach, outside pytest's ``pytest-of-<user>``: pytest
    sets that one back to 0o700 whenever another pytest session of the same user starts,
    which cut an unprivileged child off from ``tmp_path`` midway (EACCES on its store)."""
    path = Path(tempfile.mkdtemp(prefix="zarrfast-open-"))
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_a_fifo_at_a_shard_key_is_refused_without_blocking(tmp_path_open_to_all,
                                                           subprocess_cwd):
    """Run in a child as an unprivileged user where the test runs as root: opening a FIFO
    that one cannot write, without ``O_NONBLOCK``, waited for a writer forever."""
    tmp_path = tmp_path_open_to_all
    root = tmp_path / "data.zarr"
    _create(LocalStore(root))
    (root / "c" / "0").mkdir(parents=True)
    os.mkfifo(root / "c" / "0" / "0", 0o444)
    script = textwrap.dedent("""
        import os, sys
        import numpy as np, zarrfast
        a = zarrfast.open_array(sys.argv[1], mode="r+")
        warm = zarrfast.open_array(sys.argv[2], mode="r+")  # every lazy import, as root
        warm[:, 8:16] = np.ones((16, 8), dtype="int32")
        if os.getuid() == 0:  # a user who cannot write the FIFO
            for dirpath, dirs, files in os.walk(sys.argv[1]):
                os.chmod(dirpath, 0o777)
            os.setgid(65534)
            os.setuid(65534)
        try:
            a[:, 8:16] = np.ones((16, 8), dtype="int32")
        except zarrfast.errors.ZarrfastError as e:
            print(type(e).__name__, e)
    """)
    _create(LocalStore(tmp_path / "warm.zarr"))
    out = subprocess.run([sys.executable, "-c", script, str(root), str(tmp_path / "warm.zarr")],
                         capture_output=True, text=True, timeout=120, env=ENV,
                         cwd=subprocess_cwd)
    assert "SpecialFileError" in out.stdout and "'c/0/0'" in out.stdout, (out.stdout,
                                                                           out.stderr[-2000:])


@pytest.mark.parametrize("cache", ["CacheStore", "experimental CacheStore"])
def test_a_cache_in_front_reads_the_stored_shard_under_the_lock(cache, tmp_path):
    """A cache that read a shard earlier (zarrfast's ``CacheStore``, zarr-python's
    experimental dual-store ``CacheStore``): a partial write under the shard's lock
    starts from the stored shard, not the cached one (which another process may have
    replaced meanwhile: here a second store object)."""
    from zarrfast.experimental.cache_store import CacheStore as DualCache
    from zarrfast.storage import CacheStore

    root = tmp_path / "data.zarr"
    _create(LocalStore(root))
    front = (CacheStore(LocalStore(root), max_bytes=2**26) if cache == "CacheStore"
             else DualCache(LocalStore(root), cache_store=MemoryStore()))
    cached = zarrfast.open_array(front, mode="r+")
    cached[_block(0)] = _value(0)
    cached[...]  # the shard is in the cache now
    zarrfast.open_array(LocalStore(root), mode="r+")[_block(1)] = _value(1)  # "elsewhere"
    cached[_block(2)] = _value(2)
    data = zarrfast.open_array(LocalStore(root), mode="r")[...]
    for j in (0, 1, 2):
        np.testing.assert_array_equal(data[_block(j)], _value(j))


def test_every_spelling_of_a_root_shares_the_threads_locks(tmp_path, fast_switching):
    """Without file locks (as on Windows), the threads' lock of a shard is keyed by the
    root resolved: arrays opened through ``x/../x`` and a link exclude each other too."""
    root = tmp_path / "data.zarr"
    _create(LocalStore(root))
    (tmp_path / "link.zarr").symlink_to(root)
    spellings = [str(root), str(tmp_path / "data.zarr" / ".." / "data.zarr"),
                 str(tmp_path / "link.zarr"), os.path.relpath(root)]
    assert len({LocalStore(p)._lock_scope() for p in spellings}) == 1
    with zarrfast.config.set(file_locks=False):
        _rounds_of_writers(root, lambda i: zarrfast.open_array(spellings[i % len(spellings)],
                                                                mode="r+"))


def _rounds_of_writers(root: Path, opener) -> None:
    """Three rounds of N_WRITERS threads, writer ``i`` through ``opener(i)``, each round
    new values in every inner chunk; none may be lost."""
    for round_ in range(3):
        def work(i: int, round_: int = round_) -> None:
            mine = opener(i)
            for j in _mine(i):
                mine[_block(j)] = _value(j) + round_

        _threads(N_WRITERS, work)
        data = zarrfast.open_array(str(root), mode="r")[...]
        lost = [j for j in range(N_INNER)
                if not np.array_equal(data[_block(j)], _value(j) + round_)]
        assert lost == [], f"round {round_}: inner chunks lost"


@pytest.mark.parametrize("layout", ["int32", "strings", "transpose-outside"])
def test_a_writer_with_an_older_shape_keeps_what_was_appended_past_its_edge(layout,
                                                                           tmp_path):
    """Two writers (as two processes or dask workers would) opened the array when it was
    300 columns wide; one appends 212 columns, the other then writes the 44 columns it
    knows of the last shard (the shard's edge, for it, halfway through an inner chunk).
    That shard is read, changed and written back under its lock, not written as if it
    were whole: the appended columns stay (the write lost them)."""
    root = tmp_path / "data.zarr"
    dtype, fill = (str, "") if layout == "strings" else ("int32", 0)
    zarrfast.create_array(LocalStore(root), shape=(16, 300), chunks=INNER, shards=SHARDS,
                          dtype=dtype, fill_value=fill)
    if layout == "transpose-outside":
        _transpose_outside(root)
    seven, five = (("7", "5") if layout == "strings" else (7, 5))
    early = zarrfast.open_array(str(root), mode="r+")
    other = zarrfast.open_array(str(root), mode="r+")
    other.append(np.full((16, 212), seven, dtype=early.dtype), axis=1)
    early[:, 256:300] = five
    data = zarrfast.open_array(str(root), mode="r")[...]
    assert data.shape == (16, 512)
    assert (data[:, 256:300] == five).all()
    assert (data[:, 300:] == seven).all(), "the appended columns were lost"


def test_a_conditional_write_through_a_dual_cache_reads_back_what_it_wrote():
    """zarr-python's dual-store ``CacheStore`` over a store that writes conditionally:
    the shard written is not served stale from the cache afterwards."""
    obstore = pytest.importorskip("obstore.store")
    from zarrfast.experimental.cache_store import CacheStore as DualCache
    from zarrfast.storage import ObjectStore

    store = DualCache(ObjectStore(obstore.MemoryStore()), cache_store=MemoryStore())
    a = _create(store)
    a[_block(0)] = _value(0)
    a[...]  # cached
    a[_block(1)] = _value(1)
    np.testing.assert_array_equal(a[_block(1)], _value(1))
    np.testing.assert_array_equal(a[_block(0)], _value(0))


@pytest.mark.parametrize("existing", [True, False])
def test_a_node_deleted_while_a_writer_waits_for_its_shard_is_a_concurrent_write_error(
        existing, tmp_path, subprocess_cwd):
    """Another process waits for a shard's lock while this one deletes the array: it gets
    ``ConcurrentWriteError`` naming the key (it got a bare ``FileNotFoundError``)."""
    root = tmp_path / "data.zarr"
    g = zarrfast.open_group(str(root), mode="w")
    g.create_array("x", shape=SHAPE, chunks=INNER, shards=SHARDS, dtype="int32",
                   fill_value=0)
    if existing:
        zarrfast.open_array(str(root), path="x", mode="r+")[_block(0)] = _value(0)
    script = textwrap.dedent("""
        import fcntl, sys
        import numpy as np, zarrfast
        from zarrfast.storage import locks

        polled = locks._flock

        def flock(fd, deadline, on_timeout):  # says when it first finds the lock held
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                print("waiting", flush=True)
            polled(fd, deadline, on_timeout)

        locks._flock = flock
        a = zarrfast.open_array(sys.argv[1], path="x", mode="r+")
        try:
            a[:, 8:16] = np.ones((16, 8), dtype="int32")
        except zarrfast.errors.ZarrfastError as e:
            print(type(e).__name__, e, flush=True)
    """)
    with LocalStore(root).value_lock("x/c/0/0"):
        child = subprocess.Popen([sys.executable, "-c", script, str(root)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 env=ENV, cwd=subprocess_cwd)
        # the child waits for the lock this process holds: the creators' lock file next
        # to the shard (missing) or the shard's own file (existing)
        assert child.stdout.readline().strip() == "waiting"
        del g["x"]
    out, err = child.communicate(timeout=120)
    assert child.returncode == 0, err[-2000:]
    assert out.startswith("ConcurrentWriteError") and "'x/c/0/0'" in out, (out, err[-2000:])


def test_zarr_python_stores_of_one_root_share_the_threads_locks(tmp_path, fast_switching):
    """Threads each with their own zarr-python ``LocalStore`` (or ``MemoryStore`` over one
    dict) of the same data: their shard writes exclude each other (a lock per store
    object lost 52-55 of 64 inner chunks)."""
    zarr = pytest.importorskip("zarr")
    from zarrfast.storage import ZarrPythonStore

    root = tmp_path / "data.zarr"
    _create(LocalStore(root))
    assert (ZarrPythonStore(zarr.storage.LocalStore(str(root)))._lock_scope()
            == LocalStore(root)._lock_scope())
    _rounds_of_writers(root, lambda i: zarrfast.open_array(
        ZarrPythonStore(zarr.storage.LocalStore(str(root))), mode="r+"))
