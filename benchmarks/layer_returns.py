"""How many times a read or a write returns up a layer: a ``sys.setprofile`` count.

Issue 42 ("One engine") asks for at most 6 such returns for a warm ``a[0:10, 5:50]`` of a
zstd array, 8 for the same read of a sharded array and 20 for a write of 64 whole zstd
chunks.  This script counts them::

    python benchmarks/layer_returns.py [--verbose] [--kernels]

It prints the three counts beside their targets and always exits with status 0: it is a
measurement, not a test.  ``--verbose`` adds, per scenario, which function returned from
which layer into which function of which layer, and how often.  ``--kernels`` counts the
returns of compiled kernels too, as far as :func:`compiled_kernels_visible` can show them.

What is counted
---------------
zarrfast's layers, top to bottom (the import-linter contract in ``pyproject.toml``):

==========  =========================================================================
layer       modules
==========  =========================================================================
cli         ``zarrfast.cli``, ``zarrfast.__main__``
integr.     ``xarray``, ``dask``, ``convert``, ``geozarr``, ``bench``, ``testing``,
            ``zarr_python``, ``core``, ``experimental``
api         ``zarrfast.api``, ``zarrfast.dtype``, and the package ``zarrfast`` itself
            (its ``__init__`` is the public face)
hierarchy   ``zarrfast.hierarchy``
engine      ``zarrfast.engine``
storage     ``zarrfast.storage``
codecs      ``zarrfast.codecs``, and the compression and checksum libraries zarrfast
            calls (:data:`CODEC_LIBRARIES`: numcodecs, crc32c, zlib, ...)
metadata    ``zarrfast.metadata``
kernels     ``zarrfast.kernels`` and the compiled ``zarrfast._ext`` modules
floor       ``zarrfast.errors``, ``zarrfast.config``, ``zarrfast.concurrency``
==========  =========================================================================

A *return up a layer* is one profiler event

* ``return`` of a Python function (a ``return``, a ``yield``, or an exception leaving the
  frame), or
* ``c_return`` / ``c_exception`` of a C function or method (the interpreter reports
  ``builtin_function_or_method`` objects and method descriptors),

where the function that returns belongs to a *lower* layer than the frame it returns
into: the number of times control crosses a layer boundary upward.

* Frames of other code (numpy, the standard library, this script) belong to no layer
  and are transparent: the frame returned into is the nearest frame up the stack that
  has a layer.  So a return of an engine function into a hierarchy method through
  ``concurrent.futures`` or ``functools`` counts once, a return of numpy into the
  engine does not count, and a return of zarrfast into the caller's script does not
  count (the caller is in no layer).
* A codec library's functions count as the codecs layer: a numcodecs or crc32c call
  made by ``zarrfast.codecs`` stays inside the layer, the same call made straight from
  ``zarrfast.engine`` returns up one.
* Threads: the tracer is installed with ``sys.setprofile`` on the calling thread and
  with ``threading.setprofile`` for the threads started afterwards (zarrfast's pools),
  and every thread's returns are added up.  The scenarios run with ``threads=1``, as
  the issue counted, so chunk work runs on the calling thread; a pool thread already
  running when the tracer was installed cannot be traced, and the report names any.

What it cannot see: CPython 3.11's profiler reports no call of Cython 3's
``cython_function_or_method`` objects, and every function of ``zarrfast._ext`` (and
numcodecs' codec methods, e.g. ``Zstd.decode``) is one.  A return from a compiled kernel
into the engine is therefore not counted (issue 42's own counts, 8, 11 and 143, were
taken this way: this script gave 8, 11 and 144 on the code of then); a return from the
Python face in ``zarrfast.kernels`` is.  ``--kernels`` shows most of the others: the
Cython functions that are attributes of ``zarrfast.kernels`` and its modules are wrapped,
for the count, in Python functions of ``zarrfast._ext``; methods of compiled objects
(``ChunkDecoder.decode_regions``) stay unseen.  Nor does a function return up a layer when it is merely
called from a lower one (``return``/``c_return`` only, not ``call``).

The scenarios (``LocalStore`` in a temporary directory, ``uint16``, zstd level 1,
``threads=1``; "warm": the same operation once before counting):

1. ``read``: ``a[0:10, 5:50]`` of a (100, 100) array in (10, 10) chunks;
2. ``sharded read``: the same of a (100, 100) array in (50, 50) shards of (10, 10)
   inner chunks;
3. ``write``: ``a[:] = data`` of an (80, 80) array in (10, 10) chunks (64 whole chunks,
   none equal to the fill value).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

LAYERS = ("cli", "integrations", "api", "hierarchy", "engine", "storage", "codecs",
          "metadata", "kernels", "floor")

#: the first name after ``zarrfast.`` -> its layer
ZARRFAST_MODULES = {
    "cli": "cli", "__main__": "cli",
    "xarray": "integrations", "dask": "integrations", "convert": "integrations",
    "geozarr": "integrations", "bench": "integrations", "testing": "integrations",
    "zarr_python": "integrations", "core": "integrations", "experimental": "integrations",
    "abc": "integrations",
    "api": "api", "dtype": "api",
    "hierarchy": "hierarchy", "engine": "engine", "storage": "storage", "codecs": "codecs",
    "metadata": "metadata", "kernels": "kernels", "_ext": "kernels",
    "errors": "floor", "config": "floor", "concurrency": "floor",
}

#: compression and checksum libraries: their functions count as the codecs layer
CODEC_LIBRARIES = ("numcodecs", "crc32c", "google_crc32c", "zlib", "bz2", "lzma",
                   "zstandard", "blosc", "lz4", "imagecodecs")

#: the targets of issue 42's "Done when"
TARGETS = {"read": 6, "sharded read": 8, "write": 20}


def module_layer(module: str | None) -> str | None:
    """The layer of the module named ``module``, or None for code in no layer."""
    if not module:
        return None
    top, _, rest = module.partition(".")
    if top == "zarrfast":
        if not rest:
            return "api"
        return ZARRFAST_MODULES.get(rest.partition(".")[0])
    if top.lstrip("_") in CODEC_LIBRARIES:  # e.g. numcodecs' compiled _shuffle
        return "codecs"
    return None


def c_function_module(fn: Any) -> str | None:
    """The module a C function or bound C method belongs to (by its owner's type)."""
    module = getattr(fn, "__module__", None)
    if module and module != "builtins":
        return module
    owner = getattr(fn, "__self__", None)
    if owner is None:
        return None
    if isinstance(owner, type(sys)):  # a module's function
        return owner.__name__
    if isinstance(owner, type):  # a class method
        return owner.__module__
    return type(owner).__module__


@dataclass
class LayerReturns:
    """Counts returns up a layer while it is ``active``.

    ``layer_of(module_name)`` gives the layer of a module (a name of ``layers``) or None;
    the default is zarrfast's map, :func:`module_layer`.
    """

    layers: tuple[str, ...] = LAYERS
    layer_of: Callable[[str | None], str | None] = module_layer
    active: bool = False
    #: (from layer, returning function, into layer, function returned into) -> count
    crossings: collections.Counter = field(default_factory=collections.Counter)
    #: zarrfast's threads already running when the tracer was installed (not traced)
    untraced_threads: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._rank = {name: i for i, name in enumerate(self.layers)}
        self._module_rank: dict[str | None, int | None] = {}
        self._lock = threading.Lock()

    @property
    def total(self) -> int:
        return sum(self.crossings.values())

    def by_layers(self) -> collections.Counter:
        """(from layer, into layer) -> count."""
        out: collections.Counter = collections.Counter()
        for (src, _, dst, _), n in self.crossings.items():
            out[src, dst] += n
        return out

    # -- the profiler ------------------------------------------------------------------
    def _rank_of(self, module: str | None) -> int | None:
        try:
            return self._module_rank[module]
        except KeyError:
            layer = self.layer_of(module)
            rank = None if layer is None else self._rank[layer]
            self._module_rank[module] = rank
            return rank

    def _frame_rank(self, frame: FrameType) -> int | None:
        return self._rank_of(frame.f_globals.get("__name__"))

    def _into(self, frame: FrameType | None) -> tuple[int, FrameType] | None:
        """The nearest frame from ``frame`` up that has a layer, with its rank."""
        while frame is not None:
            rank = self._frame_rank(frame)
            if rank is not None:
                return rank, frame
            frame = frame.f_back
        return None

    def profile(self, frame: FrameType, event: str, arg: Any) -> None:
        if not self.active:
            return
        if event == "return":
            src = self._frame_rank(frame)
            if src is None:
                return
            name = f"{frame.f_globals.get('__name__')}.{frame.f_code.co_qualname}"
            into = self._into(frame.f_back)
        elif event in ("c_return", "c_exception"):
            module = c_function_module(arg)
            src = self._rank_of(module)
            if src is None:
                return
            name = f"{module}.{getattr(arg, '__qualname__', repr(arg))}"
            into = self._into(frame)
        else:
            return
        if into is None or into[0] >= src:
            return
        dst, dst_frame = into
        target = f"{dst_frame.f_globals.get('__name__')}.{dst_frame.f_code.co_qualname}"
        key = (self.layers[src], name, self.layers[dst], target)
        with self._lock:
            self.crossings[key] += 1

    # -- installing it -----------------------------------------------------------------
    @contextlib.contextmanager
    def installed(self) -> Iterator[LayerReturns]:
        """Profile this thread and the threads started inside the block (counting only
        while :meth:`counting` is active)."""
        self.untraced_threads = sorted(
            t.name for t in threading.enumerate()
            if t is not threading.current_thread() and t.name.startswith("zarrfast"))
        old, old_threads = sys.getprofile(), threading.getprofile()
        threading.setprofile(self.profile)
        sys.setprofile(self.profile)
        try:
            yield self
        finally:
            sys.setprofile(old)
            threading.setprofile(old_threads)

    @contextlib.contextmanager
    def counting(self) -> Iterator[LayerReturns]:
        """Count (from zero) inside the block; the tracer must be installed."""
        self.crossings.clear()
        self.active = True
        try:
            yield self
        finally:
            self.active = False

    def report(self) -> str:
        lines = []
        for (src, dst), n in sorted(self.by_layers().items(),
                                    key=lambda kv: (-kv[1], kv[0])):
            lines.append(f"    {src:>9s} -> {dst:<12s} {n:5d}")
            rows = [(k, v) for k, v in self.crossings.items() if k[0] == src and k[2] == dst]
            for (_, name, _, target), count in sorted(rows, key=lambda kv: -kv[1]):
                lines.append(f"        {count:5d}  {name}  ->  {target}")
        if self.untraced_threads:
            lines.append(f"    not traced (running before): {', '.join(self.untraced_threads)}")
        return "\n".join(lines)


_CYTHON_FUNCTIONS = ("cython_function_or_method", "fused_cython_function")


@contextlib.contextmanager
def compiled_kernels_visible() -> Iterator[int]:
    """Inside the block each Cython function that is an attribute of ``zarrfast.kernels``
    or of one of its modules is replaced by a Python function that calls it, whose frame
    belongs to ``zarrfast._ext`` (the kernels layer), so that the profiler sees its
    return.  Yields how many were replaced; they are put back after the block."""
    import importlib
    import pkgutil

    import zarrfast.kernels as kernels

    modules = [kernels] + [importlib.import_module(f"{kernels.__name__}.{m.name}")
                           for m in pkgutil.iter_modules(kernels.__path__)]
    namespace: dict[str, Any] = {"__name__": "zarrfast._ext"}
    exec("def wrap(fn):\n"
         "    def kernel(*args, **kwargs):\n"
         "        return fn(*args, **kwargs)\n"
         "    kernel.__qualname__ = fn.__qualname__\n"
         "    kernel.__code__ = kernel.__code__.replace(co_qualname=fn.__qualname__)\n"
         "    return kernel\n", namespace)
    saved = [(module, name, obj) for module in modules for name, obj in vars(module).items()
             if type(obj).__name__ in _CYTHON_FUNCTIONS]
    for module, name, obj in saved:
        setattr(module, name, namespace["wrap"](obj))
    try:
        yield len(saved)
    finally:
        for module, name, obj in saved:
            setattr(module, name, obj)


# -- the scenarios ---------------------------------------------------------------------
def _array(root: str, name: str, shape, chunks, shards=None):
    import numpy as np

    import zarrfast
    from zarrfast.codecs import ZstdCodec

    a = zarrfast.create_array(zarrfast.LocalStore(root), name=name, shape=shape,
                              chunks=chunks, shards=shards, dtype="uint16",
                              compressors=[ZstdCodec(level=1)])
    data = np.arange(1, a.size + 1, dtype="uint16").reshape(shape)
    return a, data


def scenario_read(root: str) -> Callable[[], Any]:
    """A warm ``a[0:10, 5:50]`` of a (100, 100) zstd array in (10, 10) chunks."""
    a, data = _array(root, "read", (100, 100), (10, 10))
    a[:] = data
    return lambda: a[0:10, 5:50]


def scenario_sharded_read(root: str) -> Callable[[], Any]:
    """The same read of a (100, 100) array in (50, 50) shards of (10, 10) zstd chunks."""
    a, data = _array(root, "sharded", (100, 100), (10, 10), shards=(50, 50))
    a[:] = data
    return lambda: a[0:10, 5:50]


def scenario_write(root: str) -> Callable[[], Any]:
    """``a[:] = data``: 64 whole zstd chunks of (10, 10), none equal to the fill value."""
    a, data = _array(root, "write", (80, 80), (10, 10))

    def write() -> None:
        a[:] = data

    return write


SCENARIOS = {"read": scenario_read, "sharded read": scenario_sharded_read,
             "write": scenario_write}


def count(scenario: Callable[[str], Callable[[], Any]], counter: LayerReturns,
          kernels: bool = False) -> int:
    """Set up ``scenario`` in a temporary directory, run it once, then count one run
    (with ``kernels``, inside :func:`compiled_kernels_visible`)."""
    import zarrfast

    visible = compiled_kernels_visible() if kernels else contextlib.nullcontext()
    with tempfile.TemporaryDirectory() as root, zarrfast.config.set(threads=1), visible, \
            counter.installed():
        run = scenario(root)
        run()  # warm: modules, caches, the pool
        with counter.counting():
            run()
    return counter.total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verbose", "-v", action="store_true",
                        help="which function returned into which layer, with counts")
    parser.add_argument("--kernels", action="store_true",
                        help="count the returns of compiled kernels too (wrapped for the count)")
    args = parser.parse_args(argv)
    print(f"{'scenario':14s} {'returns up':>10s} {'target':>7s}")
    for name, scenario in SCENARIOS.items():
        counter = LayerReturns()
        n = count(scenario, counter, kernels=args.kernels)
        print(f"{name:14s} {n:10d} {TARGETS[name]:7d}")
        if args.verbose:
            print(counter.report())
    return 0


if __name__ == "__main__":
    sys.exit(main())
