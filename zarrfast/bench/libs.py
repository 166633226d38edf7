"""The libraries the harness measures, behind one small interface.

Every library is a :class:`Lib` with

* ``session(threads)``: a context manager that applies a thread count the way the
  library supports it (recorded in ``threads_via``);
* ``open(path, write=False)``: an array handle (opened *inside* the session, since some
  libraries read their configuration when an array is opened);
* ``read(handle, sel)`` and ``write(handle, sel, data)``.

The module is importable on dask workers (``--scheduler``): it holds no state that
does not pickle.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
from collections.abc import Iterator
from typing import Any

import numpy as np

__all__ = ["Lib", "LIBRARIES", "get_lib", "available_libs", "import_peer",
           "NOT_INSTALLED", "INSTALL_HINT"]


#: the reason given for a library that is not installed (the report says no more)
NOT_INSTALLED = "not installed"
#: how to add the peers, printed where one of them is missing
INSTALL_HINT = ('pip install "zarrfast[bench]" (from a source checkout: '
                'pip install ".[bench]")')
#: warnings a peer's import gives about its own code or its dependencies: not the bench
#: user's to act on, so not shown (zarrfast's own are not filtered)
_PEER_IMPORT_NOISE = (DeprecationWarning, PendingDeprecationWarning, FutureWarning)


def import_peer(module: str) -> None:
    """Import a peer library without showing the deprecation warnings its import gives.

    The import runs with its warnings recorded; afterwards the others are issued again
    through the caller's filters (``-W error`` still turns them into errors), and the
    warning filters the import itself added are kept.  A module imported already is not
    imported again: whatever it warned was shown then."""
    import importlib
    import sys
    import warnings

    if sys.modules.get(module) is not None:
        return
    with warnings.catch_warnings(record=True) as caught:
        before = list(warnings.filters)
        warnings.simplefilter("always")  # every warning recorded, once each below
        mine = warnings.filters[0]
        try:
            importlib.import_module(module)
        finally:
            added = [f for f in warnings.filters if f is not mine and f not in before]
    if added:  # the peer's own filters (a noisy dependency of its silenced), in front
        warnings.filters[:0] = added
        mutated = getattr(warnings, "_filters_mutated", None)
        if callable(mutated):
            mutated()
    for w in caught:
        if issubclass(w.category, _PEER_IMPORT_NOISE):
            continue
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, source=w.source)


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


class Lib:
    """A library measured by the harness (zarrfast itself, or a peer)."""

    name = "?"
    module = "?"
    threads_via = ""

    def probe(self) -> str | None:
        """``None`` when usable, else why not: :data:`NOT_INSTALLED`, or what is wrong
        with an installed one."""
        try:
            import_peer(self.module)
        except ModuleNotFoundError as e:
            if e.name is not None and self.module.split(".")[0] == e.name.split(".")[0]:
                return NOT_INSTALLED
            return f"installed but cannot be imported ({type(e).__name__}: {e})"
        except Exception as e:  # a broken install
            return f"installed but cannot be imported ({type(e).__name__}: {e})"
        return None

    @property
    def version(self) -> str | None:
        return _version(self.module)

    @contextlib.contextmanager
    def session(self, threads: int) -> Iterator[None]:
        yield

    def open(self, path: str, *, write: bool = False) -> Any:
        raise NotImplementedError

    def read(self, h: Any, sel: Any = Ellipsis) -> np.ndarray:
        return h[sel]

    def write(self, h: Any, sel: Any, data: np.ndarray) -> None:
        h[sel] = data

    # -- the loader operation: a batch of samples; by default one read after another --

    #: how this library reads each loader workload (the report's notes)
    loader_via: dict[str, str] = {
        "tiles": "a loop of one read per tile", "rows": "a loop of one read per row",
        "regions": "a loop of one read per array"}
    #: how this library opens a group's arrays (the loader's regions with ``loader_group``)
    loader_group_via = "each from its own path"

    def open_loader(self, path: str) -> Any:
        """A handle for the loader operation's reads (a local path or an ``http://`` URL)."""
        return self.open(path)

    def open_loader_group(self, root: str, members: list[str]) -> list[Any]:
        """Handles of the arrays ``members`` of the group at ``root`` (a local path or an
        ``http://`` URL), opened as this library opens a group's arrays (by default: each
        from its own path, as :meth:`open_loader`)."""
        return [self.open_loader(f"{root}/{m}") for m in members]

    def read_batch(self, h: Any, sels: list[Any]) -> list[np.ndarray]:
        """Every selection of ``sels`` (basic selections) of one array."""
        return [self.read(h, s) for s in sels]

    def gather(self, h: Any, idx: np.ndarray) -> np.ndarray:
        """The rows ``idx`` (sorted integers) of a 2-d array: ``a.oindex[idx, :]``."""
        return np.concatenate([self.read(h, (slice(i, i + 1),)) for i in idx.tolist()])

    def read_arrays(self, hs: list[Any], sel: Any) -> list[np.ndarray]:
        """The same selection of several arrays."""
        return [self.read(h, sel) for h in hs]


class _Loop:
    """An event loop of the harness's own, for libraries whose fastest public way to read
    many selections is their asynchronous API and ``asyncio.gather``: one loop per
    session, closed with it (``executor_threads``: its default executor's size)."""

    def __init__(self, executor_threads: int | None = None) -> None:
        import asyncio

        self.loop = asyncio.new_event_loop()
        self.sessions: list[Any] = []
        self.pool = None
        if executor_threads is not None:
            from concurrent.futures import ThreadPoolExecutor

            self.pool = ThreadPoolExecutor(executor_threads)
            self.loop.set_default_executor(self.pool)

    def run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)

    def gather(self, coros: list[Any]) -> list[Any]:
        import asyncio

        async def all_of() -> list[Any]:
            return list(await asyncio.gather(*coros))
        return self.run(all_of())

    def close(self) -> None:
        for session in self.sessions:  # (fsspec's HTTP sessions opened on this loop)
            with contextlib.suppress(Exception):
                self.loop.run_until_complete(session.close())
        self.loop.run_until_complete(self.loop.shutdown_default_executor())
        self.loop.close()
        if self.pool is not None:
            self.pool.shutdown()


class Zarrfast(Lib):
    name = "zarrfast"
    module = "zarrfast"
    threads_via = "zarrfast.config.set(threads=n)"

    @contextlib.contextmanager
    def session(self, threads: int) -> Iterator[None]:
        from zarrfast import config

        with config.set(threads=threads):
            yield

    def open(self, path: str, *, write: bool = False) -> Any:
        import zarrfast

        return zarrfast.open_array(path, mode="r+" if write else "r")

    loader_via = {"tiles": "Array.get_many(tiles), one call",
                  "rows": "a.oindex[idx, :], one call",
                  "regions": "zarrfast.get_many([(array, region) ...]), one call"}
    loader_group_via = "from their group: open_group(root), group[name] (one store)"

    def open_loader_group(self, root: str, members: list[str]) -> list[Any]:
        import zarrfast

        group = zarrfast.open_group(root, mode="r")  # (its arrays share its store)
        return [group[m] for m in members]

    def read_batch(self, h: Any, sels: list[Any]) -> list[np.ndarray]:
        return h.get_many(sels)

    def gather(self, h: Any, idx: np.ndarray) -> np.ndarray:
        return h.oindex[idx, :]

    def read_arrays(self, hs: list[Any], sel: Any) -> list[np.ndarray]:
        import zarrfast

        return zarrfast.get_many([(h, sel) for h in hs])


class ZarrPython(Lib):
    name = "zarr-python"
    module = "zarr"
    threads_via = ("zarr.config threading.max_workers=n (read when zarr creates its thread "
                   "pool, so the harness recreates the pool with zarr.core.sync."
                   "cleanup_resources(); async.concurrency left at its default)")

    @contextlib.contextmanager
    def session(self, threads: int) -> Iterator[None]:
        import zarr
        from zarr.core import sync

        sync.cleanup_resources()  # the next call makes a pool of max_workers threads
        try:
            with zarr.config.set({"threading.max_workers": threads}), \
                    self._loader_loop(threads):
                yield
        finally:
            sync.cleanup_resources()

    def open(self, path: str, *, write: bool = False) -> Any:
        import zarr

        return zarr.open_array(path, mode="r+" if write else "r")

    # the loader: zarr-python's asynchronous API (AsyncArray), many reads at once with
    # asyncio.gather on an event loop of the harness's own, whose default executor (where
    # zarr's LocalStore does its file reads) has the session's threads, as zarr's has
    _loop: Any = None
    loader_via = {"tiles": "asyncio.gather of AsyncArray.getitem(tile), one per tile",
                  "rows": "AsyncArray.oindex.getitem((idx, slice(None))), one call",
                  "regions": "asyncio.gather of AsyncArray.getitem(region), one per array"}
    loader_group_via = ("from their group: zarr.api.asynchronous.open_group(root), "
                        "group.getitem(name) (one store)")

    @contextlib.contextmanager
    def _loader_loop(self, threads: int) -> Iterator[None]:
        old, self._loop = self._loop, _Loop(threads)
        try:
            yield
        finally:
            self._loop.close()
            self._loop = old

    def _config(self) -> dict[str, Any]:
        return {}

    def open_loader(self, path: str) -> Any:
        import zarr
        import zarr.api.asynchronous as za

        # (an URL: fsspec's HTTP file system of this loop, not one cached from another's)
        opts: dict[str, Any] = ({"storage_options": {"skip_instance_cache": True}}
                                 if path.startswith(("http://", "https://")) else {})

        async def opened() -> Any:
            with zarr.config.set(self._config()):
                return await za.open_array(store=path, mode="r", **opts)
        h = self._loop.run(opened())
        session = getattr(getattr(h.store, "fs", None), "_session", None)
        if session is not None:
            self._loop.sessions.append(session)
        return h

    def open_loader_group(self, root: str, members: list[str]) -> list[Any]:
        import zarr
        import zarr.api.asynchronous as za

        opts: dict[str, Any] = ({"storage_options": {"skip_instance_cache": True}}
                                 if root.startswith(("http://", "https://")) else {})

        async def opened() -> list[Any]:
            with zarr.config.set(self._config()):
                group = await za.open_group(store=root, mode="r", **opts)
                return [await group.getitem(m) for m in members]
        hs = self._loop.run(opened())
        session = getattr(getattr(hs[0].store, "fs", None), "_session", None) if hs else None
        if session is not None:
            self._loop.sessions.append(session)
        return hs

    def read_batch(self, h: Any, sels: list[Any]) -> list[np.ndarray]:
        return self._loop.gather([h.getitem(s) for s in sels])

    def gather(self, h: Any, idx: np.ndarray) -> np.ndarray:
        return self._loop.run(h.oindex.getitem((idx, slice(None))))

    def read_arrays(self, hs: list[Any], sel: Any) -> list[np.ndarray]:
        return self._loop.gather([h.getitem(sel) for h in hs])


class Zarrs(ZarrPython):
    name = "zarr+zarrs"
    module = "zarrs"
    pipeline = "zarrs.ZarrsCodecPipeline"
    threads_via = ("zarr.config threading.max_workers=n, read by the zarrs pipeline when an "
                   "array is opened; the rayon pool underneath is sized once per process by "
                   "RAYON_NUM_THREADS, as for zarrista")

    def probe(self) -> str | None:
        why = super().probe()
        if why:
            return why
        import tempfile

        try:
            import zarr

            with tempfile.TemporaryDirectory() as tmp, \
                    zarr.config.set({"codec_pipeline.path": self.pipeline}):
                a = zarr.create_array(tmp, shape=(4,), chunks=(2,), dtype="uint16",
                                      overwrite=True)
                a[:] = np.arange(4, dtype="uint16")
                kind = self.pipeline.rsplit(".", 1)[1]
                if type(a._async_array.codec_pipeline).__name__ != kind:
                    return f"zarr did not select the {self.name} codec pipeline"
                if not np.array_equal(a[:], np.arange(4)):
                    return f"the {self.name} pipeline read back wrong data"
        except Exception as e:
            return f"{self.module} installed but unusable ({type(e).__name__}: {e})"
        return None

    def _config(self) -> dict[str, Any]:
        return {"codec_pipeline.path": self.pipeline}

    def open(self, path: str, *, write: bool = False) -> Any:
        import zarr

        # the pipeline is chosen (and sized from threading.max_workers) at open
        with zarr.config.set({"codec_pipeline.path": self.pipeline}):
            return zarr.open_array(path, mode="r+" if write else "r")


class ZarrWithZarrfast(Zarrs):
    name = "zarr+zarrfast"
    module = "zarr"
    pipeline = "zarrfast.zarr_python.CodecPipeline"
    threads_via = ("zarr.config threading.max_workers=n (zarr-python's pool) and "
                   "zarrfast.config.set(threads=n) (the engine's)")

    @contextlib.contextmanager
    def session(self, threads: int) -> Iterator[None]:
        from zarrfast import config

        with super().session(threads), config.set(threads=threads):
            yield


class Tensorstore(Lib):
    name = "tensorstore"
    module = "tensorstore"
    threads_via = "context data_copy_concurrency.limit=n and file_io_concurrency.limit=n"
    _context: Any = None

    @contextlib.contextmanager
    def session(self, threads: int) -> Iterator[None]:
        import tensorstore as ts

        old = self._context
        self._context = ts.Context({"data_copy_concurrency": {"limit": threads},
                                    "file_io_concurrency": {"limit": threads}})
        try:
            yield
        finally:
            self._context = old

    def open(self, path: str, *, write: bool = False) -> Any:
        import os

        import tensorstore as ts

        driver = "zarr" if os.path.exists(os.path.join(path, ".zarray")) else "zarr3"
        spec = {"driver": driver, "kvstore": {"driver": "file", "path": path}}
        kwargs = {"context": self._context} if self._context is not None else {}
        return ts.open(spec, read=True, write=write, **kwargs).result()

    def read(self, h: Any, sel: Any = Ellipsis) -> np.ndarray:
        t = h if sel is Ellipsis else h[sel]
        return t.read().result()

    loader_via = {"tiles": "one ts.Batch: a[tile].read(batch=b) per tile",
                  "rows": "a.oindex[idx, :].read(), one read",
                  "regions": "one ts.Batch: a[region].read(batch=b) per array"}
    loader_group_via = ("each by its own spec, in the session's one context (tensorstore "
                        "has no group)")

    def open_loader(self, path: str) -> Any:
        if not path.startswith(("http://", "https://")):
            return self.open(path)
        import tensorstore as ts

        spec = {"driver": "zarr3", "kvstore": {"driver": "http", "base_url": path}}
        kwargs = {"context": self._context} if self._context is not None else {}
        return ts.open(spec, read=True, **kwargs).result()

    def read_batch(self, h: Any, sels: list[Any]) -> list[np.ndarray]:
        import tensorstore as ts

        with ts.Batch() as b:
            futures = [h[s].read(batch=b) for s in sels]
        return [f.result() for f in futures]

    def gather(self, h: Any, idx: np.ndarray) -> np.ndarray:
        return h.oindex[idx, :].read().result()

    def read_arrays(self, hs: list[Any], sel: Any) -> list[np.ndarray]:
        import tensorstore as ts

        with ts.Batch() as b:
            futures = [h[sel].read(batch=b) for h in hs]
        return [f.result() for f in futures]

    def write(self, h: Any, sel: Any, data: np.ndarray) -> None:
        t = h if sel is Ellipsis else h[sel]
        t.write(data).result()


class Zarrista(Lib):
    """zarrs (Rust) through its own Python binding, without zarr-python in between."""

    name = "zarrista"
    module = "zarrista"
    threads_via = ("codec option concurrent_target=n on every read and write; the rayon pool "
                   "underneath is sized once per process by RAYON_NUM_THREADS (the harness sets "
                   "it to n in a run of one thread count; unset: the core count)")
    _threads: int | None = None

    def _options(self) -> dict[str, int]:
        return {} if self._threads is None else {"concurrent_target": self._threads}

    def open(self, path: str, *, write: bool = False) -> Any:
        import zarrista

        return zarrista.Array.open(zarrista.store.FilesystemStore(path), "/")

    def read(self, h: Any, sel: Any = Ellipsis) -> np.ndarray:
        sel = h.subset_all if sel is Ellipsis else sel
        return np.asarray(h.retrieve_array_subset(sel, **self._options()))

    # the loader: zarrista has no call that reads several selections; the synchronous API
    # (local files) one call after another, which is faster here than the asynchronous
    # one's asyncio.gather; an URL needs the asynchronous API (an obstore HTTPStore):
    # asyncio.gather of its reads on an event loop of the harness's own
    loader_via = {"tiles": "a loop of retrieve_array_subset(tile) (no batch call; over HTTP: "
                           "AsyncArray, asyncio.gather)",
                  "rows": "one retrieve_array_subset per chunk the rows touch, spanning its "
                          "rows, then NumPy picks them (no gather call; over HTTP: AsyncArray, "
                          "asyncio.gather)",
                  "regions": "a loop of retrieve_array_subset(region), one per array (over "
                             "HTTP: AsyncArray, asyncio.gather)"}
    loader_group_via = "on one store, the group's: Array.open(store, '/name')"
    _loop: Any = None

    @contextlib.contextmanager
    def session(self, threads: int) -> Iterator[None]:
        old, self._threads = self._threads, threads
        old_loop, self._loop = self._loop, None
        try:
            yield
        finally:
            if self._loop is not None:
                self._loop.close()
            self._threads, self._loop = old, old_loop

    def open_loader(self, path: str) -> Any:
        if not path.startswith(("http://", "https://")):
            return self.open(path)
        import zarrista
        from obstore.store import HTTPStore

        if self._loop is None:
            self._loop = _Loop()
        store = HTTPStore.from_url(path, client_options={"allow_http": True})

        async def opened() -> Any:
            return await zarrista.AsyncArray.open(store, "/")
        return self._loop.run(opened())

    def open_loader_group(self, root: str, members: list[str]) -> list[Any]:
        import zarrista

        if not root.startswith(("http://", "https://")):
            store = zarrista.store.FilesystemStore(root)  # (one store, the group's)
            return [zarrista.Array.open(store, f"/{m}") for m in members]
        from obstore.store import HTTPStore

        if self._loop is None:
            self._loop = _Loop()
        remote = HTTPStore.from_url(root, client_options={"allow_http": True})

        async def opened() -> list[Any]:
            return [await zarrista.AsyncArray.open(remote, f"/{m}") for m in members]
        return self._loop.run(opened())

    @staticmethod
    def _remote(h: Any) -> bool:
        import zarrista

        return isinstance(h, zarrista.AsyncArray)

    def _all(self, reads: list[tuple[Any, Any]]) -> list[np.ndarray]:
        """``h.retrieve_array_subset(sel)`` of every ``(h, sel)``: one after another, or
        all at once (asynchronous handles)."""
        opts = self._options()
        if reads and self._remote(reads[0][0]):
            async def one(h: Any, sel: Any) -> Any:  # (its reads start on a running loop)
                return await h.retrieve_array_subset(sel, **opts)
            got = self._loop.gather([one(h, sel) for h, sel in reads])
            return [np.asarray(g) for g in got]
        return [np.asarray(h.retrieve_array_subset(sel, **opts)) for h, sel in reads]

    def read_batch(self, h: Any, sels: list[Any]) -> list[np.ndarray]:
        return self._all([(h, s) for s in sels])

    def gather(self, h: Any, idx: np.ndarray) -> np.ndarray:
        rows = int(h.chunk_shape([0] * h.ndim)[0])  # (a regular grid: every chunk's)
        cut = np.flatnonzero(np.diff(idx // rows)) + 1  # runs of rows in one chunk
        runs = np.split(idx, cut)
        spans = [(int(r[0]), int(r[-1]) + 1) for r in runs]
        got = self._all([(h, (slice(a, b),)) for a, b in spans])
        return np.concatenate([g[r - a] for g, r, (a, _) in zip(got, runs, spans, strict=True)])

    def read_arrays(self, hs: list[Any], sel: Any) -> list[np.ndarray]:
        return self._all([(h, sel) for h in hs])

    def write(self, h: Any, sel: Any, data: np.ndarray) -> None:
        sel = h.subset_all if sel is Ellipsis else sel
        h.store_array_subset(sel, np.ascontiguousarray(data), **self._options())


LIBRARIES: dict[str, type[Lib]] = {
    c.name: c for c in (Zarrfast, ZarrPython, Zarrs, ZarrWithZarrfast, Tensorstore, Zarrista)
}


def get_lib(name: str) -> Lib:
    try:
        return LIBRARIES[name]()
    except KeyError:
        raise ValueError(f"unknown library {name!r}; known: {', '.join(LIBRARIES)}") from None


def available_libs(names: list[str]) -> tuple[list[Lib], dict[str, dict[str, Any]]]:
    """The usable libraries among ``names`` and what was found about each."""
    usable: list[Lib] = []
    info: dict[str, dict[str, Any]] = {}
    for name in names:
        lib = get_lib(name)
        why = lib.probe()
        info[name] = {"available": why is None, "version": lib.version,
                      "threads_via": lib.threads_via}
        if why is not None:
            info[name]["reason"] = why
        else:
            usable.append(lib)
    return usable, info
