"""benchmarks/layer_returns.py: the counter of returns up a layer, on call chains built
for the purpose (modules made here, each given a layer), not on the engine's numbers."""

from __future__ import annotations

import importlib.util
import os
import pkgutil
import sys
import threading
import types
import zlib

import numpy as np
import pytest

import zarrfast


def _layer_returns():
    path = os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks", "layer_returns.py")
    spec = importlib.util.spec_from_file_location("layer_returns", os.path.abspath(path))
    module = importlib.util.module_from_spec(spec)
    sys.modules["layer_returns"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


L = _layer_returns()

#: the made-up modules' layers; "fake_other" (like numpy or the standard library) has none
FAKE_LAYERS = {"fake_top": "api", "fake_mid": "engine", "fake_low": "storage",
               "fake_floor": "floor", "zlib": "codecs"}


def _module(name: str, source: str) -> types.ModuleType:
    module = types.ModuleType(name)
    exec(compile(source, f"<{name}>", "exec"), module.__dict__)
    return module


fake_floor = _module("fake_floor", "def leaf():\n    return 1\n")
fake_low = _module("fake_low", """
def leaf(x):
    return helper(x) + 1          # a return inside the layer: not counted

def helper(x):
    return x

def fail():
    raise KeyError("k")

def floor_twice():
    return floor.leaf() + floor.leaf()
""")
fake_low.floor = fake_floor
fake_other = _module("fake_other", """
def call(fn, *args):
    return inner(fn, *args)

def inner(fn, *args):
    return fn(*args)
""")
fake_mid = _module("fake_mid", """
def direct():
    return low.leaf(1)

def through_other():
    return other.call(low.leaf, 1)

def through_c():
    return list(map(low.leaf, [1, 2, 3]))

def c_codec():
    return zlib.crc32(b"abc")

def catches():
    try:
        other.call(low.fail)
    except KeyError:
        return 0

def same_layer():
    return inner()

def inner():
    return 2

def calls_config():
    return config.get("threads")
""")
fake_mid.low, fake_mid.other, fake_mid.zlib = fake_low, fake_other, zlib
fake_mid.config = zarrfast.config
fake_top = _module("fake_top", """
def run(fn):
    return fn()
""")
fake_top.mid = fake_mid


def _count(fn, layer_of=FAKE_LAYERS.get):
    counter = L.LayerReturns(layer_of=layer_of)
    with counter.installed(), counter.counting():
        fake_top.run(fn)
    return counter


@pytest.mark.parametrize("fn, expected", [
    # low.leaf -> mid, mid.direct -> top
    (fake_mid.direct, {("storage", "engine"): 1, ("engine", "api"): 1}),
    # the frames of a module in no layer between them are passed over
    (fake_mid.through_other, {("storage", "engine"): 1, ("engine", "api"): 1}),
    # a C function (map, list) between them too: three returns of low.leaf
    (fake_mid.through_c, {("storage", "engine"): 3, ("engine", "api"): 1}),
    # a C function of a library given the codecs layer, returning into the engine
    (fake_mid.c_codec, {("codecs", "engine"): 1, ("engine", "api"): 1}),
    # an exception leaving low.fail is a return up too; the frames of fake_other are not
    (fake_mid.catches, {("storage", "engine"): 1, ("engine", "api"): 1}),
    # inside one layer nothing counts; the top returning into the test (no layer) neither
    (fake_mid.same_layer, {("engine", "api"): 1}),
    # two layers down and back: each return counts once, whatever the distance
    (fake_low.floor_twice, {("floor", "storage"): 2, ("storage", "api"): 1}),
])
def test_counts_each_return_into_a_higher_layer(fn, expected):
    counter = _count(fn)
    assert dict(counter.by_layers()) == expected
    assert counter.total == sum(expected.values())


def test_names_the_function_returning_and_the_one_returned_into():
    counter = _count(fake_mid.direct)
    assert counter.crossings == {
        ("storage", "fake_low.leaf", "engine", "fake_mid.direct"): 1,
        ("engine", "fake_mid.direct", "api", "fake_top.run"): 1,
    }
    report = counter.report()
    assert "storage -> engine" in report and "fake_low.leaf  ->  fake_mid.direct" in report


def test_a_real_zarrfast_function_of_the_floor_returns_up_once():
    """zarrfast.config.get, called from a frame of the engine's layer: its own calls stay
    in the floor (and donfig's frames have no layer), so one return crosses."""
    def layer_of(module):
        return FAKE_LAYERS.get(module) or L.module_layer(module)

    counter = _count(fake_mid.calls_config, layer_of)
    assert dict(counter.by_layers()) == {("floor", "engine"): 1, ("engine", "api"): 1}
    assert ("floor", "zarrfast.config.get", "engine", "fake_mid.calls_config") in \
        counter.crossings


fake_engine = _module("fake_engine", """
def keys():
    return kernels.format_chunk_keys(np.zeros((1, 2), dtype=np.int64), "c/", "/")
""")
fake_engine.kernels, fake_engine.np = zarrfast.kernels, np


def test_compiled_kernels_are_seen_when_made_visible():
    """A Cython function's return is invisible to the profiler, unless wrapped."""
    pytest.importorskip("zarrfast._ext._indexing")

    def layer_of(module):
        return {"fake_top": "api", "fake_engine": "engine"}.get(module) or \
            L.module_layer(module)

    assert type(zarrfast.kernels.format_chunk_keys).__name__ == "cython_function_or_method"
    assert dict(_count(fake_engine.keys, layer_of).by_layers()) == {("engine", "api"): 1}
    with L.compiled_kernels_visible() as n:
        assert n > 1
        counter = _count(fake_engine.keys, layer_of)
    assert counter.crossings == {
        ("kernels", "zarrfast._ext.format_chunk_keys", "engine", "fake_engine.keys"): 1,
        ("engine", "fake_engine.keys", "api", "fake_top.run"): 1,
    }
    # put back
    assert type(zarrfast.kernels.format_chunk_keys).__name__ == "cython_function_or_method"


def test_counts_nothing_outside_the_counting_block():
    counter = L.LayerReturns(layer_of=FAKE_LAYERS.get)
    with counter.installed():
        fake_top.run(fake_mid.direct)
        with counter.counting():
            pass
        fake_top.run(fake_mid.direct)
    assert counter.total == 0
    assert sys.getprofile() is None  # taken off again


def test_counts_a_thread_started_while_installed():
    counter = L.LayerReturns(layer_of=FAKE_LAYERS.get)
    with counter.installed(), counter.counting():
        t = threading.Thread(target=fake_top.run, args=(fake_mid.through_c,))
        t.start()
        t.join()
    assert dict(counter.by_layers()) == {("storage", "engine"): 3, ("engine", "api"): 1}


@pytest.mark.parametrize("module, layer", [
    ("zarrfast", "api"), ("zarrfast.cli", "cli"), ("zarrfast.__main__", "cli"),
    ("zarrfast.xarray", "integrations"), ("zarrfast.geozarr.tms", "integrations"),
    ("zarrfast.api.synchronous", "api"), ("zarrfast.dtype", "api"),
    ("zarrfast.hierarchy.array", "hierarchy"), ("zarrfast.engine.chunked", "engine"),
    ("zarrfast.storage.local", "storage"), ("zarrfast.codecs.chain", "codecs"),
    ("numcodecs.zstd", "codecs"), ("numcodecs._shuffle", "codecs"), ("crc32c", "codecs"),
    ("zarrfast.metadata.v3", "metadata"), ("zarrfast.kernels.buffers", "kernels"),
    ("zarrfast._ext._decode", "kernels"), ("zarrfast.errors", "floor"),
    ("zarrfast.config", "floor"), ("zarrfast.concurrency", "floor"),
    ("numpy", None), ("concurrent.futures.thread", None), ("zarrfastish", None), (None, None),
])
def test_zarrfast_layer_map(module, layer):
    assert L.module_layer(module) == layer


def test_every_module_of_zarrfast_has_a_layer():
    """A package added to zarrfast must be given its layer here (as in pyproject.toml)."""
    names = [m.name for m in pkgutil.iter_modules(zarrfast.__path__)]
    assert "engine" in names
    assert [n for n in names if L.module_layer(f"zarrfast.{n}") is None] == []


def test_c_function_module():
    assert L.c_function_module(zlib.crc32) == "zlib"
    assert L.c_function_module(len) == "builtins"  # in no layer
    assert L.c_function_module(b"".join) == "builtins"  # the method of a bytes object
    assert L.c_function_module(zlib.compressobj().compress) == "zlib"
