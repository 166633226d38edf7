"""The strategy table (``zarrfast.engine.strategies``): which strategy reads or writes a
selection, named in the ``zarrfast.engine`` DEBUG log, with the same values whichever it
is; and the shape of the engine the table stands for (no ``config`` below it, no function
over 80 lines)."""

from __future__ import annotations

import ast
import logging
import pathlib
import re

import numpy as np
import pytest

import zarrfast
from zarrfast import config
from zarrfast.engine import strategies
from zarrfast.engine.plan import Options
from zarrfast.storage import LocalStore, MemoryStore

ENGINE = pathlib.Path(zarrfast.__file__).parent / "engine"


class BatchedMemory(MemoryStore):
    """A memory store asking for batched reads, as remote stores do."""

    batched_reads = True


def _chosen(caplog) -> list[str]:
    """The strategies (and row strategies) the DEBUG log named, in order (one name for
    a run of the same: a rectilinear grid's chunk shapes each log theirs)."""
    names: list[str] = []
    for rec in caplog.records:
        if rec.name != "zarrfast.engine":
            continue
        m = re.search(r": ([a-z-]+) \(", rec.getMessage())
        m2 = re.search(r"rows of \S+ by ([a-z-]+):", rec.getMessage())
        name = (m2 or m).group(1)
        if not names or names[-1] != name:
            names.append(name)
    return names


def _array(store, *, shape=(64, 96), chunks=(16, 16), shards=None, dtype="uint16",
           compressors="auto", **kw):
    a = zarrfast.create_array(store, shape=shape, chunks=chunks, shards=shards, dtype=dtype,
                              compressors=compressors, **kw)
    data = np.arange(np.prod(shape), dtype=dtype).reshape(shape)
    a[...] = data
    return a, data


CASES = [
    # (store, array keywords, selection, threads, the strategies expected)
    ("local", {}, np.s_[0:10, 5:15], 1, ["box-files"]),
    ("local", {"compressors": None}, np.s_[0:16, 16:32], 1, ["single-chunk"]),
    ("local", {}, np.s_[0:10, 5:50], 1, ["box-files"]),
    ("local", {}, np.s_[...], 1, ["box-parts"]),
    ("local", {}, np.s_[::2, ::3], 1, ["chunk-rows", "file-batches"]),
    ("local", {"compressors": None}, np.s_[::2, 1::3], 1, ["chunk-rows", "file-batches"]),
    ("local", {"shards": (32, 48)}, np.s_[0:10, 5:50], 1, ["shard-box"]),
    ("local", {"shards": (32, 48)}, np.s_[...], 2, ["shard-rows"]),
    ("memory", {}, np.s_[0:10, 5:15], 1, ["single-chunk"]),
    ("memory", {}, np.s_[3:60, 5:90], 2, ["chunk-rows", "chunk-tasks"]),
    ("batched", {}, np.s_[3:60, 5:90], 2, ["chunk-rows", "batched-gets"]),
    ("batched", {"shards": (32, 48)}, np.s_[0:10, 5:50], 1, ["shard-rows"]),
    ("memory", {"dtype": str, "compressors": None}, np.s_[1:30, 2:40], 1, ["objects"]),
    ("memory", {}, np.s_[5:5, :], 1, ["empty"]),
    ("memory", {"chunks": [[10, 20, 34], [50, 46]]}, np.s_[3:60, 5:90], 1,
     ["chunk-rows", "chunk-tasks"]),
]


def _store(kind, tmp_path):
    return {"local": lambda: LocalStore(tmp_path / "a"), "memory": MemoryStore,
            "batched": BatchedMemory}[kind]()


@pytest.mark.parametrize("kind, kwargs, selection, threads, expected", CASES)
def test_the_log_names_the_strategy_and_the_values_are_right(
        tmp_path, caplog, kind, kwargs, selection, threads, expected):
    kwargs = dict(kwargs)
    dtype = kwargs.pop("dtype", "uint16")
    store = _store(kind, tmp_path)
    if dtype is str:
        a = zarrfast.create_array(store, shape=(64, 96), chunks=(16, 16), dtype=str, **kwargs)
        data = np.array([str(i) for i in range(64 * 96)], dtype=object).reshape(64, 96)
        a[...] = data
    else:
        a, data = _array(store, dtype=dtype, **kwargs)
    with config.set(threads=threads), caplog.at_level(logging.DEBUG, "zarrfast.engine"):
        caplog.clear()
        got = a[selection]
    assert _chosen(caplog) == expected
    np.testing.assert_array_equal(got, data[selection])


@pytest.mark.parametrize("kind, kwargs, expected", [
    ("local", {}, ["chunk-rows", "row-batches"]),
    ("batched", {}, ["chunk-rows", "batched-sets"]),
    ("local", {"shards": (32, 48)}, ["shard-write"]),
    ("memory", {"dtype": str, "compressors": None}, ["objects"]),
])
def test_writes_name_their_strategy(tmp_path, caplog, kind, kwargs, expected):
    kwargs = dict(kwargs)
    dtype = kwargs.pop("dtype", "uint16")
    a = zarrfast.create_array(_store(kind, tmp_path), shape=(64, 96), chunks=(16, 16),
                              dtype=dtype, **kwargs)
    value = (np.arange(40 * 50).reshape(40, 50) % 65000).astype("uint16")
    if dtype is str:
        value = value.astype(str).astype(object)
    with caplog.at_level(logging.DEBUG, "zarrfast.engine"):
        caplog.clear()
        a[3:43, 7:57] = value
    assert _chosen(caplog) == expected
    np.testing.assert_array_equal(a[3:43, 7:57], value)


def test_the_logged_reason_gives_numbers_not_constant_names(tmp_path, caplog):
    """The reason in the DEBUG line is for users: ``at most 8``, not ``at most BOX_CHUNKS``."""
    from zarrfast.engine.boxes import BOX_CHUNKS

    for table in (strategies.READS, strategies.WRITES, strategies.READ_ROWS,
                  strategies.WRITE_ROWS):
        for s in table:
            assert not re.search(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b", s.when), (s.name, s.when)
    a, data = _array(LocalStore(tmp_path / "a"))
    with config.set(threads=1), caplog.at_level(logging.DEBUG, "zarrfast.engine"):
        caplog.clear()
        np.testing.assert_array_equal(a[0:10, 5:15], data[0:10, 5:15])
        np.testing.assert_array_equal(a[...], data)
    lines = [r.getMessage() for r in caplog.records if r.name == "zarrfast.engine"]
    assert any(f"box-files (a step-1 box of at most {BOX_CHUNKS} zstd" in m for m in lines), lines
    assert any(f"box-parts (a step-1 box of more than {BOX_CHUNKS} such" in m for m in lines), lines


def test_the_tables_end_with_a_strategy_that_always_applies():
    for table in (strategies.READS, strategies.WRITES):
        names = [s.name for s in table]
        assert len(set(names)) == len(names), names
        assert all(s.when for s in table)
    for rows in (strategies.READ_ROWS, strategies.WRITE_ROWS):
        assert rows[-1].applies(None, None) is True  # (asks nothing of the plan)
    last_read, last_write = strategies.READS[-1], strategies.WRITES[-1]
    assert last_read.name == last_write.name == "chunk-rows"


def test_options_are_read_once_per_call(tmp_path, monkeypatch):
    """The engine reads the configuration through ``Options.resolve`` once per read and
    write; nothing below the table reads ``config`` (see the scan below)."""
    a, data = _array(LocalStore(tmp_path / "a"))
    calls = []
    real = Options.resolve.__func__

    def counted(cls):
        calls.append(1)
        return real(cls)

    monkeypatch.setattr(Options, "resolve", classmethod(counted))
    np.testing.assert_array_equal(a[::3, 1::2], data[::3, 1::2])
    assert len(calls) == 1
    a[1:40, 2:50] = 7
    assert len(calls) == 2


def _engine_modules():
    return sorted(ENGINE.rglob("*.py"))


def test_nothing_below_the_table_reads_config():
    """``zarrfast.config`` is imported in the engine by ``plan.py`` alone (which resolves
    the options of a call) and the fancy selections' entry (through ``Options``)."""
    readers = []
    for path in _engine_modules():
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "zarrfast" and any(
                    a.name == "config" for a in node.names):
                readers.append(path.relative_to(ENGINE).as_posix())
            if isinstance(node, ast.ImportFrom) and node.module == "zarrfast.config":
                readers.append(path.relative_to(ENGINE).as_posix())
    assert readers == ["plan.py"]


def test_no_engine_function_is_over_80_lines():
    long = []
    for path in _engine_modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > 80:
                    long.append(f"{path.relative_to(ENGINE)}:{node.lineno} {node.name} ({n})")
    assert not long, long


def test_every_chain_kind_is_named():
    from zarrfast.engine.chunked import PreparedChain
    from zarrfast.engine.objects import ObjectChain
    from zarrfast.engine.rectilinear import RectilinearChain
    from zarrfast.engine.sharded import RectilinearShardedChain, ShardedChain

    kinds = {c.kind for c in (PreparedChain, ObjectChain, RectilinearChain, ShardedChain,
                              RectilinearShardedChain)}
    assert kinds == {"regular", "object", "rectilinear", "sharded", "rectilinear-sharded"}
    for c in (PreparedChain, ObjectChain, RectilinearChain, ShardedChain):
        assert isinstance(getattr(c, "fill_scalar", None), property), c


def test_the_engine_gives_the_pool_its_resolved_threads():
    """Every call the engine makes to the pool passes the thread (and request) counts its
    call resolved: the pool's own default would read ``config``."""
    wants = {"map_unordered_into": {"threads"}, "map_dynamic_into": {"threads"},
             "map_weighted_into": {"threads"}, "batch_count": {"threads"},
             "map_io": {"io"}, "map_io_then": {"io", "threads"}}
    missing, seen = [], 0
    for path in _engine_modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and (
                    node.func.id in wants):
                seen += 1
                given = {k.arg for k in node.keywords}
                if not wants[node.func.id] <= given:
                    missing.append(f"{path.relative_to(ENGINE)}:{node.lineno} {node.func.id}")
    assert seen > 10 and not missing, missing


def test_a_0d_array_is_read_as_its_one_chunk(tmp_path, caplog):
    a = zarrfast.create_array(MemoryStore(), shape=(), dtype="i4", fill_value=3)
    a[...] = 7
    with caplog.at_level(logging.DEBUG, "zarrfast.engine"):
        caplog.clear()
        assert a[()] == 7
    assert _chosen(caplog) == ["single-chunk"]
