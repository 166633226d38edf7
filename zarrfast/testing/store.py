"""A conformance suite for :class:`zarrfast.storage.Store` implementations.

Subclass :class:`StoreTests` in a test module, name the subclass ``Test...``
so pytest collects it, and implement :meth:`StoreTests.make_store`::

    from zarrfast.storage import MemoryStore
    from zarrfast.testing import StoreTests

    class TestMemoryStore(StoreTests):
        def make_store(self, tmp_path):
            return MemoryStore()

Every ``test_*`` method of :class:`StoreTests` then runs against the new
store.  The tests check the contract stated in :mod:`zarrfast.storage.base`:

* a missing key reads as ``None``; values read back equal to ``bytes(value)``
  for every buffer type written, as ``bytes`` or another read-only
  bytes-like object;
* byte ranges are clipped like Python slices;
* invalid keys raise :class:`~zarrfast.errors.InvalidKeyError` on every
  operation, so no key can leave the store;
* a read-only view (``store.with_read_only(True)``) refuses every write with
  :class:`~zarrfast.errors.ReadOnlyError` and changes nothing;
* listings are sorted and exact;
* concurrent writers and readers on threads see whole values only.

Class attributes let a store opt out of what its platform cannot give; each
opt-out must say why where it is set.  A store whose ``supports_deletes`` is
false (a zip archive) skips the tests of deleting, and instead must refuse
deletes with an error naming the key, changing nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from zarrfast.errors import InvalidKeyError, ReadOnlyError, ZarrfastError
from zarrfast.storage.base import OffsetByteRequest, RangeByteRequest, Store, SuffixByteRequest
from zarrfast.storage.errors import ValueTooLargeError

try:  # Hypothesis is a test extra; without it the property test skips.
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st
except ImportError:  # pragma: no cover
    given = None

__all__ = ["INVALID_KEYS", "StoreTests", "assert_value"]

#: Keys every store must refuse, with why.
INVALID_KEYS: dict[str, str] = {
    "": "empty",
    "/abs": "absolute",
    "a/../b": "'..' segment",
    "..": "parent directory",
    "../x": "leading '..'",
    "a/..": "trailing '..'",
    "a//b": "empty segment",
    "a\\b": "backslash",
    "..\\x": "backslash parent",
    "./a": "'.' segment",
    "a/./b": "inner '.' segment",
    "a/": "trailing slash",
    "C:/x": "drive letter",
    "c:x": "drive-relative",
    "a\x00b": "NUL character",
}

_VALUE = bytes(range(256)) * 4  # 1 KiB, every byte value


def assert_value(got: object, expected: bytes) -> None:
    """Assert that ``got`` is a read-only bytes-like object equal to ``expected``."""
    assert got is not None, f"expected {len(expected)} bytes, got None"
    view = memoryview(got)  # raises TypeError for anything not bytes-like
    assert view.readonly, f"store returned a writable {type(got).__name__}; values must be read-only"
    assert bytes(got) == expected


def _keys(it: Iterator[str]) -> list[str]:
    out = list(it)
    assert all(isinstance(k, str) for k in out), out
    return out


def _require_deletes(store: Store) -> None:
    """Skip the calling test for stores that cannot delete (``supports_deletes`` false)."""
    if not store.supports_deletes:
        pytest.skip(f"{type(store).__name__} does not support deletes (supports_deletes=False)")


class StoreTests:
    """Base class of store conformance tests: subclass it once per store.

    A subclass implements ``make_store``; name it ``Test...`` so that pytest collects
    it, and every ``test_*`` method then runs against the store (``StoreTests`` itself
    has no ``Test`` prefix, so it is not collected).  The ``store`` fixture gives a
    new, empty, writable store per test; read-only views are made with
    ``store.with_read_only(True)``.  The tests check the store contract: a missing key
    reads as ``None``; values read back equal to ``bytes(value)`` for every buffer type
    written, as read-only bytes-like objects; byte ranges are clipped like Python
    slices; invalid keys raise ``zarrfast.errors.InvalidKeyError`` on every operation;
    a read-only view refuses every write with ``zarrfast.errors.ReadOnlyError`` and
    changes nothing; listings are sorted and exact; concurrent writers and readers on
    threads see whole values only.

    Class attributes let a store opt out of what its platform cannot give
    (``overwrite_while_reading``); each opt-out must say why where it is set.  A store
    whose ``supports_deletes`` is false (a zip archive) skips the tests of deleting,
    and must instead refuse deletes with an error naming the key, changing nothing.
    Needs pytest (and Hypothesis for the property test).

    Examples
    --------
    In a test module (``tests/test_my_store.py``):

    ```python
    from zarrfast.storage import MemoryStore
    from zarrfast.testing import StoreTests

    class TestMemoryStore(StoreTests):
        def make_store(self, tmp_path):
            return MemoryStore()
    ```

    A test method can also be called by hand, with a store as its fixture:

    >>> from zarrfast.testing import StoreTests
    >>> class TestMemoryStore(StoreTests):
    ...     def make_store(self, tmp_path):
    ...         return zarrfast.MemoryStore()
    >>> suite = TestMemoryStore()
    >>> suite.test_overwrite(suite.make_store(None))
    >>> suite.test_empty_value(suite.make_store(None))
    """

    #: Whether a value may be overwritten while other threads are reading it.
    #: ``os.replace`` over a file that is open for reading fails on Windows.
    overwrite_while_reading: bool = True

    #: Thread counts for the concurrency tests.
    n_threads: int = 8
    keys_per_thread: int = 50

    # -- hooks ------------------------------------------------------------
    def make_store(self, tmp_path: Path) -> Store:
        """Return a new, empty, writable store: the hook every subclass implements.

        Parameters
        ----------
        tmp_path : pathlib.Path
            A new empty directory, for stores that keep their data in files.

        Returns
        -------
        zarrfast.storage.Store
            The store under test.

        Raises
        ------
        NotImplementedError
            If the subclass does not implement it.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement make_store(tmp_path)")

    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[Store]:
        """Give a new store of ``make_store`` per test, closed after it.

        Parameters
        ----------
        tmp_path : pathlib.Path
            pytest's ``tmp_path`` fixture.

        Yields
        ------
        zarrfast.storage.Store
            The store.
        """
        s = self.make_store(tmp_path)
        try:
            yield s
        finally:
            s.close()

    @pytest.fixture
    def filled(self, store: Store) -> Store:
        """Fill the ``store`` fixture with the keys of ``TREE``.

        Parameters
        ----------
        store : zarrfast.storage.Store
            The ``store`` fixture.

        Returns
        -------
        zarrfast.storage.Store
            The same store, holding ``TREE``.
        """
        for k, v in self.TREE.items():
            store.set(k, v)
        return store

    #: Nested keys chosen so that sort order differs from insertion and walk
    #: order ('-' < '.' < '/' < '0').
    TREE: dict[str, bytes] = {
        "b": b"b",
        "a/c/d": b"acd",
        "a/b": b"ab",
        "a0": b"a0",
        "a.b": b"a.b",
        "a-b": b"a-b",
        "a/cc/e": b"acce",
        "a/c/f/g": b"acfg",
        "zarr.json": b"{}",
    }

    # -- basics -----------------------------------------------------------
    def test_fixture_store_is_empty_and_writable(self, store: Store) -> None:
        """Check that the ``store`` fixture is an empty, writable ``Store`` with bool flags.

        Parameters
        ----------
        store : zarrfast.storage.Store
            The ``store`` fixture: a new, empty, writable store.
        """
        assert isinstance(store, Store)
        assert store.read_only is False
        assert store.is_empty()
        assert _keys(store.list()) == []
        for flag in ("supports_writes", "supports_deletes", "supports_partial_reads",
                     "supports_listing"):
            assert isinstance(getattr(store, flag), bool), flag

    def test_get_missing(self, store: Store) -> None:
        """Check that a missing key reads as ``None``, whole or as any byte range.

        Parameters
        ----------
        store : zarrfast.storage.Store
            The ``store`` fixture: a new, empty, writable store.
        """
        assert store.get("missing") is None
        assert store.get("a/b/missing") is None
        assert store.get("missing", RangeByteRequest(0, 4)) is None
        assert store.get("missing", OffsetByteRequest(0)) is None
        assert store.get("missing", SuffixByteRequest(4)) is None
        assert store.exists("missing") is False

    def test_get_prefix_is_not_a_key(self, store: Store) -> None:
        """Check that a prefix of keys, and a path below a key, hold no value.

        Parameters
        ----------
        store : zarrfast.storage.Store
            The ``store`` fixture: a new, empty, writable store.
        """
        store.set("a/b/c", b"x")
        for prefix in ("a", "a/b"):
            assert store.get(prefix) is None
            assert store.get(prefix, RangeByteRequest(0, 0)) is None
            assert store.get(prefix, SuffixByteRequest(0)) is None
            assert store.exists(prefix) is False
            with pytest.raises(FileNotFoundError):
                store.getsize(prefix)
        assert store.get("a/b/c/d") is None  # below a key

    @pytest.mark.parametrize(
        "make",
        [
            pytest.param(bytes, id="bytes"),
            pytest.param(bytearray, id="bytearray"),
            pytest.param(memoryview, id="memoryview"),
            pytest.param(lambda b: memoryview(b"xx" + b + b"yy")[2:-2], id="memoryview-slice"),
            pytest.param(lambda b: np.frombuffer(b, dtype=np.uint8).copy(), id="numpy-u1"),
            pytest.param(lambda b: np.frombuffer(b, dtype="<f8").copy(), id="numpy-f8"),
            pytest.param(
                lambda b: np.frombuffer(b, dtype="<i2").reshape(16, -1).copy(), id="numpy-2d"
            ),
            pytest.param(
                lambda b: memoryview(np.frombuffer(b, dtype="<u4").copy()), id="memoryview-u4"
            ),
        ],
    )
    def test_set_get_buffer_types(self, store: Store, make) -> None:
        """Check that every kind of contiguous buffer is stored as its bytes.

        Parameters
        ----------
        store : zarrfast.storage.Store
            The ``store`` fixture: a new, empty, writable store.
        make : callable
            Makes the buffer written (bytes, bytearray, memoryview, NumPy arrays) from bytes.
        """
        value = make(_VALUE)
        expected = bytes(value)
        assert expected == _VALUE
        store.set("k", value)
        assert_value(store.get("k"), expected)
        store.set("a/b/k", value)
        assert_value(store.get("a/b/k"), expected)
        assert store.getsize("k") == len(expected)

    @pytest.mark.parametrize(
        "make",
        [
            pytest.param(lambda b: np.frombuffer(b, dtype=np.uint8)[::3], id="numpy-strided"),
            pytest.param(
                lambda b: np.asfortranarray(np.frombuffer(b, dtype="<u2").reshape(8, -1)),
                id="numpy-fortran",
            ),
            pytest.param(lambda b: memoryview(b)[::2], id="memoryview-strided"),
        ],
    )
    def test_set_non_contiguous_buffer(self, store: Store, make) -> None:
        """Check that a non-contiguous buffer (strided, Fortran order) is stored as its bytes.

        Parameters
        ----------
        store : zarrfast.storage.Store
            The ``store`` fixture: a new, empty, writable store.
        make : callable
            Makes the non-contiguous buffer written from bytes.
        """
        value = make(_VALUE)
        store.set("k", value)
        assert_value(store.get("k"), bytes(value))

    def test_set_does_not_keep_reference_to_mutable_buffer(self, store: Store) -> None:
        """Check that changing a buffer after ``set`` leaves the stored value unchanged.

        Parameters
        ----------
        store : zarrfast.storage.Store
            The ``store`` fixture: a new, empty, writable store.
        """
        buf = bytearray(b"abcdef")
        store.set("k", buf)
        buf[:] = b"XXXXXX"
        assert_value(store.get("k"), b"abcdef")

    def test_returned_value_is_independent(self, store: Store) -> None:
        """Check that a large value reads back whole and read-only, and again unchanged.

        Parameters
        ----------
        store : zarrfast.storage.Store
            The ``store`` fixture: a new, empty, writable store.
        """
        store.set("k", _VALUE * 8)  # big enough for any "no copy" path
        got = store.get("k")
        assert_value(got, _VALUE * 8)
        assert_value(store.get("k"), _VALUE * 8)

    @pytest.mark.parametrize("value", ["text", 5, None, [1, 2]], ids=repr)
    def test_set_rejects_non_buffers(self, store: Store, value) -> None:
        """Check that ``set`` refuses a value that is no buffer with ``TypeError``.

        Parameters
        ----------
        store : zarrfast.storage.Store
            The ``store`` fixture: a new, empty, writable store.
        value : object
            The value that is no buffer (a str, an int, ``None``, a list).
        """
        with pytest.raises(TypeError):
            store.set("k", value)
        assert store.get("k") is None
        assert _keys(store.list()) == []

    def test_overwrite(self, store: Store) -> None:
        """Check that ``set`` replaces a value, longer or shorter or empty.

        Parameters
        ----------
        store : zarrfast.storage.Store
            The ``store`` fixture: a new, empty, writable store.
        """
        store.set("k", b"long old value")
        store.set("k", b"new")
        assert_value(store.get("k"), b"new")
        store.set("k", b"")
        assert_value(store.get("k"), b"")
        store.set("k", _VALUE)
        assert_value(store.get("k"), _VALUE)
        assert _keys(store.list()) == ["k"]

    def test_empty_value(self, store: Store) -> None:
        """Check that an empty value exists, has size 0 and reads as ``b""`` in every range.

        Parameters
        ----------
        store : zarrfast.storage.Store
            The ``store`` fixture: a new, empty, writable store.
        """
        store.set("e", b"")
        assert_value(store.get("e"), b"")
        assert store.exists("e")
        assert store.getsize("e") == 0
        assert _keys(store.list()) == ["e"]
        assert_value(store.get("e", RangeByteRequest(0, 10)), b"")
        assert_value(store.get("e", OffsetByteRequest(3)), b"")
        assert_value(store.get("e", SuffixByteRequest(3)), b"")

    # -- byte ranges ------------------------------------------------------
    @pytest.mark.parametrize(
        ("byte_range", "sl"),
        [
            (RangeByteRequest(0, 1024), slice(0, 1024)),
            (RangeByteRequest(10, 20), slice(10, 20)),
            (RangeByteRequest(0, 1), slice(0, 1)),
            (RangeByteRequest(1023, 1024), slice(1023, 1024)),
            (RangeByteRequest(1000, 5000), slice(1000, None)),  # clipped
            (RangeByteRequest(1024, 2000), slice(0, 0)),  # starts at the end
            (RangeByteRequest(4000, 5000), slice(0, 0)),  # starts past the end
            (RangeByteRequest(7, 7), slice(0, 0)),  # zero length
            (RangeByteRequest(0, 0), slice(0, 0)),
            (OffsetByteRequest(0), slice(None)),
            (OffsetByteRequest(1000), slice(1000, None)),
            (OffsetByteRequest(1024), slice(0, 0)),
            (OffsetByteRequest(10_000), slice(0, 0)),
            (SuffixByteRequest(10), slice(-10, None)),
            (SuffixByteRequest(1024), slice(None)),
            (SuffixByteRequest(10_000), slice(None)),  # larger than the value
            (SuffixByteRequest(0), slice(0, 0)),
        ],
        ids=repr,
    )
    def test_byte_ranges(self, store: Store, byte_range, sl: slice) -> None:
        """Check that each kind of byte range reads what the matching slice gives.

        Parameters
        ----------
        store : zarrfast.storage.Store
            The ``store`` fixture: a new, empty, writable store.
        byte_range : ByteRequest
            The byte range read (``get`` and ``get_many``).
        sl : slice
            The slice of the value that the range must give.
        """
        store.set("a/k", _VALUE)
        assert_value(store.get("a/k", byte_range), _VALUE[sl])
        assert_value(store.get_many(["a/k"], [byte_range])[0], _VALUE[sl])

    def test_byte_range_of_large_value(self, store: Store) -> None:
        """Check byte ranges of a 3 MiB value.

        Parameters
        ----------
        store : zarrfast.storage.Store
            The ``store`` fixture: a new, empty, writable store.
        """
        value = np.random.default_rng(0).integers(0, 256, 3 << 20, dtype=np.uint8).tobytes()
        store.set("big", value)
        assert_value(store.get("big"), value)
        assert_value(store.get("big", RangeByteRequest(1 << 20, (2 << 20) + 7)),
                     value[1 << 20:(2 << 20) + 7])
        assert_value(store.get("big", SuffixByteRequest(5)), value[-5:])
        assert_value(store.get("big", OffsetByteRequest(len(value) - 3)), value[-3:])

    def test_invalid_byte_ranges(self, store: Store) -> None:
        """Check that invalid byte ranges raise ``ZarrfastError``.

        Parameters
        ----------
        store : zarrfast.storage.Store
            The ``store`` fixture: a new, empty, writable store.
        """
        store.set("k", b"abc")
        with pytest.raises(ZarrfastError):
            store.get("k", RangeByteRequest(5, 2))
        with pytest.raises(ZarrfastError):
            store.get("k", RangeByteRequest(-1, 2))
        with pytest.raises(ZarrfastError):
            store.get("k", OffsetByteRequest(-1))
        with pytest.raises(ZarrfastError):
            store.get("k", SuffixByteRequest(-1))
        with pytest.raises(ZarrfastError):
            store.get("k", (0, 2))  # type: ignore[arg-type]

    # -- get_many ---------------------------------------------------------
    @pytest.mark.parametrize("n", [0, 1, 3, 20])  # small and pooled paths
    def test_get_many(self, store: Store, n: int) -> None:
        """Check that ``get_many`` returns every value in order, ``None`` for missing keys.

        Parameters
        ----------
        store : zarrfast.storage.Store
            The ``store`` fixture: a new, empty, writable store.
        n : int
            How many stored keys (each asked with a missing one).
        """
        values = {f"g/{i}": _VALUE[i:] for i in range(n)}
        store.set_many(values)
        keys = []
        for i in range(n):
            keys += [f"g/{i}", f"missing/{i}"]
        got = store.get_many(keys)
        assert isinstance(got, list) and len(got) == 2 * n
        for i in range(n):
            assert_value(got[2 * i], values[f"g/{i}"])
            assert got[2 * i + 1] is None

    @pytest.mark.parametrize("n", [1, 3, 20])
    def test_get_many_byte_ranges(self, store: Store, n: int) -> None:
        """Check that ``get_many`` with byte ranges reads what ``get`` reads.

        Parameters
        ----------
        store : zarrfast.storage.Store
            The ``store`` fixture: a new, empty, writable store.
        n : int
            How many keys are asked.
        """
        store.set("v", _VALUE)
        kinds = [None, RangeByteRequest(3, 9), OffsetByteRequest(1020), SuffixByteRequest(2000)]
        ranges = [kinds[i % 4] for i in range(n)]
        keys = ["v" if i % 5 else "missing" for i in range(n)]
        got = store.get_many(keys, ranges)
        assert len(got) == n
        for k, r, g in zip(keys, ranges, got, strict=True):
            if k == "missing":
                assert g is None
            else:
                assert_value(g, bytes(store.get(k, r)))
        if n > 1:
            assert_value(got[1], _VALUE[3:9])

    @pytest.mark.parametrize(("n_keys", "n_ranges"), [(3, 2), (1, 0), (20, 21), (0, 1)])
    def test_get_many_length_mismatch(self, store: Store, n_keys: int, n_ranges: int) -> None:
        """Check that ``get_many`` refuses as many byte ranges as there are not keys.

        Parameters
        ----------
        store : zarrfast.storage.Store
            The ``store`` fixture: a new, empty, writable store.
        n_keys : int
            How many keys are asked.
        n_ranges : int
            How many byte ranges are given.
        """
        store.set("v", b"abc")
        with pytest.raises(ZarrfastError, match="byte ranges"):
            store.get_many(["v"] * n_keys, [None] * n_ranges)

    def test_get_many_invalid_key(self, store: Store) -> None:
        """Check that ``get_many`` refuses an invalid key among valid ones.

        Parameters
        ----------
        store : zarrfast.storage.Store
            The ``store`` fixture: a new, empty, writable store.
        """
        for n in (2, 20):
            with pytest.raises(InvalidKeyError):
                store.get_many(["ok"] * (n - 1) + ["../x"])

    @pytest.mark.parametrize("n", [2, 40])
    def test_get_many_distinct_keys_and_ranges(self, store: Store, n: int) -> None:
        """Check that many keys, each with its own kind of range, are answered in order.

        The reads of a sharded array: index suffixes and inner-chunk ranges of many shards.

        Parameters
        ----------
        store : zarrfast.storage.Store
            The ``store`` fixture: a new, empty, writable store.
        n : int
            How many keys are asked.
        """
        values = {f"s/{i}": bytes([i % 251]) * (100 + 37 * i) + _VALUE[:i] for i in range(n)}
        store.set_many(values)
        requests: list[tuple[str, object, bytes | None]] = []  # key, range, expected
        for i in range(n):
            key, v = f"s/{i}", values[f"s/{i}"]
            requests.append([
                (key, SuffixByteRequest(16), v[-16:]),
                (key, RangeByteRequest(i, i + 50), v[i:i + 50]),
                (key, OffsetByteRequest(len(v) - 3), v[-3:]),
                (f"s/missing{i}", RangeByteRequest(0, 4), None),
                (key, None, v),
            ][i % 5])
        keys = [k for k, _, _ in requests]
        ranges = [r for _, r, _ in requests]
        expected = [e for _, _, e in requests]
        got = store.get_many(keys, ranges)
        assert len(got) == n
        for k, g, e in zip(keys, got, expected, strict=True):
            if e is None:
                assert g is None, k
            else:
                assert_value(g, e)

    def test_deletes_unsupported(self, filled: Store) -> None:
        """Check that a store without deletes refuses them, naming the key, and keeps every value.

        Read-only views still say read-only first.  Skipped for stores that delete.

        Parameters
        ----------
        filled : zarrfast.storage.Store
            The ``filled`` fixture: the store holding the keys of ``TREE``.
        """
        if filled.supports_deletes:
            pytest.skip(f"{type(filled).__name__} supports deletes")
        for attempt, name in [
            (lambda: filled.delete("a/b"), "a/b"),
            (lambda: filled.delete_many(["b"]), "b"),
            (lambda: filled.delete_dir("a/c"), "a/c"),
        ]:
            with pytest.raises((NotImplementedError, ZarrfastError), match=name):
                attempt()
        assert _keys(filled.list()) == sorted(self.TREE)
        assert_value(filled.get("a/b"), b"ab")
        with pytest.raises(ReadOnlyError):
            filled.with_read_only(True).delete("a/b")

    # -- exists / getsize -------------------------------------------------
    def test_exists(self, store: Store) -> None:
        """Check that ``exists`` is true for keys only (not prefixes, not deleted keys).

        Parameters
        ----------
        store : zarrfast.storage.Store
            The ``store`` fixture: a new, empty, writable store.
        """
        assert not store.exists("a/b")
        store.set("a/b", b"1")
        assert store.exists("a/b")
        assert not store.exists("a")
        assert not store.exists("a/b/c")
        if store.supports_deletes:
            store.delete("a/b")
            assert not store.exists("a/b")

    def test_getsize(self, store: Store) -> None:
        """Check that ``getsize`` gives a value's size and raises ``FileNotFoundError`` otherwise.

        Parameters
        ----------
        store : zarrfast.storage.Store
            The ``store`` fixture: a new, empty, writable store.
        """
        store.set("a/b", _VALUE)
        store.set("e", b"")
        assert store.getsize("a/b") == len(_VALUE)
        assert store.getsize("e") == 0
        with pytest.raises(FileNotFoundError):
            store.getsize("missing")
        with pytest.raises(FileNotFoundError):
            store.getsize("a")  # a prefix, not a key

    def test_conditional_writes(self, store: Store) -> None:
        """Check ``get_versioned`` and ``set_if_version`` of a store with ``conditional_writes``.

        ``set_if_version`` writes only over the version ``get_versioned`` gave (``None``:
        only where the key is missing), and returns ``False``, writing nothing, otherwise.
        Skipped for stores that make no conditional writes.

        Parameters
        ----------
        store : zarrfast.storage.Store
            The ``store`` fixture: a new, empty, writable store.
        """
        if not store.conditional_writes:
            pytest.skip(f"{type(store).__name__} makes no conditional writes")
        assert store.get_versioned("cw") == (None, None)
        assert store.set_if_version("cw", b"one", None)
        assert not store.set_if_version("cw", b"two", None)  # not missing any more
        value, first = store.get_versioned("cw")
        assert bytes(value) == b"one"
        assert store.set_if_version("cw", b"two", first)
        assert not store.set_if_version("cw", b"three", first)  # replaced meanwhile
        value, second = store.get_versioned("cw")
        assert bytes(value) == b"two" and bytes(store.get("cw")) == b"two"
        assert store.set_if_version("cw", b"four", second)
        assert bytes(store.get("cw")) == b"four"
        # a value larger than the limit is refused, naming the key
        with pytest.raises(ValueTooLargeError, match="'cw'"):
            store.get_versioned("cw", limit=3)
        assert bytes(store.get_versioned("cw", limit=4)[0]) == b"four"
        # deleted meanwhile: the write over the old version is refused, nothing written
        _, third = store.get_versioned("cw")
        store.delete("cw")
        assert not store.set_if_version("cw", b"five", third)
        assert store.get("cw") is None

    def test_version_tokens(self, store: Store) -> None:
        """Check that ``version`` tokens change with every replacement of a value.

        ``None`` for a missing key, stable while a value is unchanged, different after
        every replacement (even by an equal value).  Skipped for stores that give no tokens.

        Parameters
        ----------
        store : zarrfast.storage.Store
            The ``store`` fixture: a new, empty, writable store.
        """
        assert store.version("v") is None
        store.set("v", b"first")
        token = store.version("v")
        if token is None:
            pytest.skip(f"{type(store).__name__} gives no version tokens")
        assert store.version("v") == token
        assert store.get("v") == b"first" and store.version("v") == token  # reads change nothing
        seen = {token}
        for value in (b"other", b"other", b"first"):
            store.set("v", value)
            new = store.version("v")
            assert new is not None and new not in seen
            seen.add(new)
        _require_deletes(store)
        store.delete("v")
        assert store.version("v") is None
        with pytest.raises(InvalidKeyError):
            store.version("../v")

    # -- delete -----------------------------------------------------------
    def test_delete(self, filled: Store) -> None:
        """Check that ``delete`` removes a key and that deleting a missing key is no error.

        Parameters
        ----------
        filled : zarrfast.storage.Store
            The ``filled`` fixture: the store holding the keys of ``TREE``.
        """
        _require_deletes(filled)
        store = filled
        store.delete("a/b")
        assert store.get("a/b") is None
        assert not store.exists("a/b")
        remaining = sorted(set(self.TREE) - {"a/b"})
        assert _keys(store.list()) == remaining
        store.delete("a/b")  # already gone: no error
        store.delete("never/was")
        store.delete("b/below/a/key")
        assert _keys(store.list()) == remaining

    def test_delete_prefix_is_noop(self, filled: Store) -> None:
        # "a" names a prefix, not a key: delete leaves the keys below it alone
        """Check that ``delete`` of a prefix leaves the keys below it alone.

        Parameters
        ----------
        filled : zarrfast.storage.Store
            The ``filled`` fixture: the store holding the keys of ``TREE``.
        """
        _require_deletes(filled)
        filled.delete("a")
        filled.delete("a/c")
        assert _keys(filled.list()) == sorted(self.TREE)

    def test_delete_many(self, filled: Store) -> None:
        """Check that ``delete_many`` removes those keys, missing ones no error.

        Parameters
        ----------
        filled : zarrfast.storage.Store
            The ``filled`` fixture: the store holding the keys of ``TREE``.
        """
        _require_deletes(filled)
        filled.delete_many(["a/b", "b", "missing"])
        assert _keys(filled.list()) == sorted(set(self.TREE) - {"a/b", "b"})

    @pytest.mark.parametrize("prefix", ["a", "a/"])
    def test_delete_dir(self, filled: Store, prefix: str) -> None:
        """Check that ``delete_dir`` removes every key below a prefix, and no other.

        Parameters
        ----------
        filled : zarrfast.storage.Store
            The ``filled`` fixture: the store holding the keys of ``TREE``.
        prefix : str
            The prefix, with or without a trailing slash.
        """
        _require_deletes(filled)
        filled.delete_dir(prefix)
        assert _keys(filled.list()) == sorted(k for k in self.TREE if not k.startswith("a/"))
        assert filled.is_empty("a/")
        assert _keys(filled.list_prefix("a/")) == []
        assert filled.get("a0") == b"a0"

    def test_delete_dir_nested_and_missing(self, filled: Store) -> None:
        """Check ``delete_dir`` of a nested prefix, a missing one, and a key (left alone).

        Parameters
        ----------
        filled : zarrfast.storage.Store
            The ``filled`` fixture: the store holding the keys of ``TREE``.
        """
        _require_deletes(filled)
        filled.delete_dir("a/c")
        assert _keys(filled.list_prefix("a/")) == ["a/b", "a/cc/e"]
        filled.delete_dir("missing")
        filled.delete_dir("a/b")  # a key, not a prefix: left alone
        filled.delete_dir("b/x")
        assert filled.get("a/b") == b"ab"
        assert filled.get("b") == b"b"

    def test_delete_dir_invalid(self, filled: Store) -> None:
        """Check that ``delete_dir`` refuses invalid prefixes, deleting nothing.

        Parameters
        ----------
        filled : zarrfast.storage.Store
            The ``filled`` fixture: the store holding the keys of ``TREE``.
        """
        for bad in ("..", "../a", "a/../a", "a\\b", "/", "//", "/a", "a//", "a//b"):
            with pytest.raises(InvalidKeyError):
                filled.delete_dir(bad)
        assert _keys(filled.list()) == sorted(self.TREE)

    def test_clear(self, filled: Store) -> None:
        """Check that ``clear`` empties the store, which stays usable.

        Parameters
        ----------
        filled : zarrfast.storage.Store
            The ``filled`` fixture: the store holding the keys of ``TREE``.
        """
        _require_deletes(filled)
        filled.clear()
        assert filled.is_empty()
        assert _keys(filled.list()) == []
        assert _keys(filled.list_dir("")) == []
        for k in self.TREE:
            assert filled.get(k) is None
        filled.set("a/b", b"again")  # still usable
        assert _keys(filled.list()) == ["a/b"]
        filled.clear()
        filled.clear()  # clearing an empty store is fine
        assert filled.is_empty()

    def test_set_many(self, store: Store) -> None:
        """Check that ``set_many`` takes a mapping or pairs of keys and buffers.

        Parameters
        ----------
        store : zarrfast.storage.Store
            The ``store`` fixture: a new, empty, writable store.
        """
        store.set_many({"x/1": b"1", "x/2": bytearray(b"2")})
        store.set_many([("x/3", memoryview(b"3"))])
        assert _keys(store.list()) == ["x/1", "x/2", "x/3"]
        assert_value(store.get("x/2"), b"2")

    def test_set_if_not_exists(self, store: Store) -> None:
        """Check that ``set_if_not_exists`` leaves an existing value alone.

        Parameters
        ----------
        store : zarrfast.storage.Store
            The ``store`` fixture: a new, empty, writable store.
        """
        store.set_if_not_exists("k", b"first")
        store.set_if_not_exists("k", b"second")
        assert_value(store.get("k"), b"first")

    # -- listing ----------------------------------------------------------
    def test_list(self, filled: Store) -> None:
        """Check that ``list`` gives every key once, sorted.

        Parameters
        ----------
        filled : zarrfast.storage.Store
            The ``filled`` fixture: the store holding the keys of ``TREE``.
        """
        keys = _keys(filled.list())
        assert keys == sorted(self.TREE)
        assert len(set(keys)) == len(keys)

    @pytest.mark.parametrize(
        "prefix",
        ["", "a", "a/", "a/c", "a/c/", "a/c/f/", "a.", "b", "b/", "zarr.json", "missing/", "a/cc"],
    )
    def test_list_prefix(self, filled: Store, prefix: str) -> None:
        # plain string-prefix semantics
        """Check that ``list_prefix`` gives the keys that start with a string prefix, sorted.

        Parameters
        ----------
        filled : zarrfast.storage.Store
            The ``filled`` fixture: the store holding the keys of ``TREE``.
        prefix : str
            The prefix.
        """
        expected = sorted(k for k in self.TREE if k.startswith(prefix))
        assert _keys(filled.list_prefix(prefix)) == expected

    @pytest.mark.parametrize(
        ("prefix", "expected"),
        [
            ("", ["a", "a-b", "a.b", "a0", "b", "zarr.json"]),
            ("a", ["b", "c", "cc"]),
            ("a/", ["b", "c", "cc"]),
            ("a/c", ["d", "f"]),
            ("a/c/", ["d", "f"]),
            ("a/c/f", ["g"]),
            ("a/cc/e", []),  # a key
            ("b", []),  # a key
            ("missing", []),
            ("missing/deeper/", []),
        ],
    )
    def test_list_dir(self, filled: Store, prefix: str, expected: list[str]) -> None:
        """Check that ``list_dir`` gives the names of a prefix's immediate children, sorted.

        Parameters
        ----------
        filled : zarrfast.storage.Store
            The ``filled`` fixture: the store holding the keys of ``TREE``.
        prefix : str
            The prefix.
        expected : list[str]
            The names ``list_dir`` must give.
        """
        assert _keys(filled.list_dir(prefix)) == expected

    def test_list_empty_store(self, store: Store) -> None:
        """Check that listings of an empty store are empty.

        Parameters
        ----------
        store : zarrfast.storage.Store
            The ``store`` fixture: a new, empty, writable store.
        """
        assert _keys(store.list()) == []
        assert _keys(store.list_prefix("")) == []
        assert _keys(store.list_prefix("a/")) == []
        assert _keys(store.list_dir("")) == []
        assert _keys(store.list_dir("a")) == []

    @pytest.mark.parametrize("prefix", ["..", "../", "/", "/a", "a//", "a/../", "./", "a\\"])
    def test_list_invalid_prefix(self, filled: Store, prefix: str) -> None:
        """Check that ``list_prefix`` and ``list_dir`` refuse invalid prefixes.

        Parameters
        ----------
        filled : zarrfast.storage.Store
            The ``filled`` fixture: the store holding the keys of ``TREE``.
        prefix : str
            The invalid prefix.
        """
        if prefix != "/":  # (accepted by list_prefix: see test_list_prefix_slash)
            with pytest.raises(InvalidKeyError):
                _keys(filled.list_prefix(prefix))
        with pytest.raises(InvalidKeyError):
            _keys(filled.list_dir(prefix))

    def test_list_prefix_slash(self, filled: Store) -> None:
        """Check that ``list_prefix("/")`` lists nothing, as zarr-python's stores do.

        No key starts with a slash; ``""`` lists everything.

        Parameters
        ----------
        filled : zarrfast.storage.Store
            The ``filled`` fixture: the store holding the keys of ``TREE``.
        """
        assert _keys(filled.list_prefix("/")) == []
        assert _keys(filled.list_prefix("")) == _keys(filled.list())
        assert _keys(filled.list())

    def test_is_empty(self, store: Store) -> None:
        """Check ``is_empty`` of the store and of prefixes, before and after writes.

        Parameters
        ----------
        store : zarrfast.storage.Store
            The ``store`` fixture: a new, empty, writable store.
        """
        assert store.is_empty()
        assert store.is_empty("a/")
        store.set("a/b/c", b"x")
        assert not store.is_empty()
        assert not store.is_empty("a/")
        assert not store.is_empty("a/b/")
        assert store.is_empty("b/")
        _require_deletes(store)
        store.delete("a/b/c")
        assert store.is_empty()
        assert store.is_empty("a/")

    # -- keys -------------------------------------------------------------
    @pytest.mark.parametrize("key", list(INVALID_KEYS), ids=list(INVALID_KEYS.values()))
    def test_invalid_keys(self, store: Store, key: str) -> None:
        """Check that every operation refuses an invalid key with ``InvalidKeyError``.

        Parameters
        ----------
        store : zarrfast.storage.Store
            The ``store`` fixture: a new, empty, writable store.
        key : str
            A key of ``INVALID_KEYS``.
        """
        store.set("ok", b"ok")
        with pytest.raises(InvalidKeyError):
            store.get(key)
        with pytest.raises(InvalidKeyError):
            store.get(key, RangeByteRequest(0, 1))
        with pytest.raises(InvalidKeyError):
            store.set(key, b"x")
        with pytest.raises(InvalidKeyError):
            store.delete(key)
        with pytest.raises(InvalidKeyError):
            store.exists(key)
        with pytest.raises(InvalidKeyError):
            store.getsize(key)
        with pytest.raises(InvalidKeyError):
            store.get_many(["ok", key])
        with pytest.raises(InvalidKeyError):
            store.set_many({key: b"x"})
        assert _keys(store.list()) == ["ok"]

    @pytest.mark.parametrize("key", [b"bytes", 1, None, ("a",)], ids=repr)
    def test_non_str_keys(self, store: Store, key) -> None:
        """Check that keys that are not str are refused with ``InvalidKeyError``.

        Parameters
        ----------
        store : zarrfast.storage.Store
            The ``store`` fixture: a new, empty, writable store.
        key : object
            The key (bytes, an int, ``None``, a tuple).
        """
        with pytest.raises(InvalidKeyError):
            store.get(key)
        with pytest.raises(InvalidKeyError):
            store.set(key, b"x")
        assert _keys(store.list()) == []

    @pytest.mark.parametrize(
        "key",
        ["zarr.json", ".zattrs", "c/0/0/0", "a/b.c/d-e_f", "..a", "a.b/...x", "ünï/cödé",
         "x" * 100, "/".join("abcdefghij"), "c.0.0", "a b"],
    )
    def test_valid_unusual_keys(self, store: Store, key: str) -> None:
        """Check that unusual but valid keys are stored, listed and deleted.

        Parameters
        ----------
        store : zarrfast.storage.Store
            The ``store`` fixture: a new, empty, writable store.
        key : str
            The key (dots, spaces, non-ASCII, long, deep).
        """
        store.set(key, key.encode())
        assert_value(store.get(key), key.encode())
        assert store.exists(key)
        assert _keys(store.list()) == [key]
        if store.supports_deletes:
            store.delete(key)
            assert store.get(key) is None

    def test_invalid_key_errors_are_keyerrors(self) -> None:
        """Check that the key and read-only errors are also the builtins users catch.

        ``InvalidKeyError`` is a ``KeyError``, ``ReadOnlyError`` a ``PermissionError``, and
        both are ``ZarrfastError``.
        """
        assert issubclass(InvalidKeyError, KeyError)
        assert issubclass(InvalidKeyError, ZarrfastError)
        assert issubclass(ReadOnlyError, PermissionError)
        assert issubclass(ReadOnlyError, ZarrfastError)

    # -- read-only --------------------------------------------------------
    def test_read_only_view(self, filled: Store) -> None:
        """Check that ``with_read_only(True)`` is a view of the same data, not a snapshot.

        Parameters
        ----------
        filled : zarrfast.storage.Store
            The ``filled`` fixture: the store holding the keys of ``TREE``.
        """
        ro = filled.with_read_only(True)
        assert ro.read_only is True
        assert filled.read_only is False
        assert_value(ro.get("a/b"), b"ab")
        assert _keys(ro.list()) == sorted(self.TREE)
        assert _keys(ro.list_dir("a")) == ["b", "c", "cc"]
        # a view, not a snapshot
        filled.set("new", b"n")
        assert_value(ro.get("new"), b"n")
        rw = ro.with_read_only(False)
        assert rw.read_only is False
        rw.set("new2", b"m")
        assert_value(filled.get("new2"), b"m")

    def test_read_only_refuses_writes(self, filled: Store) -> None:
        """Check that a read-only view refuses every write and delete, changing nothing.

        Parameters
        ----------
        filled : zarrfast.storage.Store
            The ``filled`` fixture: the store holding the keys of ``TREE``.
        """
        ro = filled.with_read_only(True)
        before = {k: bytes(filled.get(k)) for k in filled.list()}
        attempts = [
            lambda: ro.set("a/b", b"changed"),
            lambda: ro.set("brand/new", b"x"),
            lambda: ro.set_many({"x": b"1"}),
            lambda: ro.set_if_not_exists("y", b"1"),
            lambda: ro.delete("a/b"),
            lambda: ro.delete("missing"),
            lambda: ro.delete_many(["b"]),
            lambda: ro.delete_dir("a"),
            lambda: ro.delete_dir(""),
            lambda: ro.clear(),
        ]
        for attempt in attempts:
            with pytest.raises(ReadOnlyError):
                attempt()
            with pytest.raises(PermissionError):
                attempt()
        after = {k: bytes(filled.get(k)) for k in filled.list()}
        assert after == before

    def test_read_only_error_message_names_key(self, store: Store) -> None:
        """Check that the ``ReadOnlyError`` of a refused write names the key.

        Parameters
        ----------
        store : zarrfast.storage.Store
            The ``store`` fixture: a new, empty, writable store.
        """
        ro = store.with_read_only(True)
        with pytest.raises(ReadOnlyError, match="some/key"):
            ro.set("some/key", b"x")

    # -- threads ----------------------------------------------------------
    def test_threads_disjoint_keys(self, store: Store) -> None:
        """Check writers and readers on threads, each writing keys of its own.

        Every thread reads back whole values (and, with ``overwrite_while_reading``,
        the keys another thread is writing).

        Parameters
        ----------
        store : zarrfast.storage.Store
            The ``store`` fixture: a new, empty, writable store.
        """
        n, m = self.n_threads, self.keys_per_thread
        barrier = threading.Barrier(n)

        def value(t: int, j: int) -> bytes:
            return f"{t}:{j}:".encode() * (1 + (t * 7 + j) % 40)

        def work(t: int) -> None:
            barrier.wait()
            for j in range(m):
                store.set(f"t{t}/k{j:03d}", value(t, j))
                assert_value(store.get(f"t{t}/k{j:03d}"), value(t, j))
                if self.overwrite_while_reading:
                    other = (t + 1) % n
                    got = store.get(f"t{other}/k{j:03d}")  # another thread is writing it
                    assert got is None or bytes(got) in (value(other, j), value(other, j) + b"!")
            for j in range(0, m, 2):
                store.set(f"t{t}/k{j:03d}", value(t, j) + b"!")

        with ThreadPoolExecutor(n) as pool:
            list(pool.map(work, range(n)))

        expected = {}
        for t in range(n):
            for j in range(m):
                expected[f"t{t}/k{j:03d}"] = value(t, j) + (b"!" if j % 2 == 0 else b"")
        assert _keys(store.list()) == sorted(expected)
        keys = sorted(expected)
        for k, got in zip(keys, store.get_many(keys), strict=True):
            assert_value(got, expected[k])

    def test_threads_same_key(self, store: Store) -> None:
        """Check that readers of a key many threads write see whole values, never torn ones.

        Parameters
        ----------
        store : zarrfast.storage.Store
            The ``store`` fixture: a new, empty, writable store.
        """
        n = self.n_threads
        values = [bytes([i]) * (1000 + 997 * i) for i in range(n)]
        allowed = set(values)
        store.set("hot", values[0])
        stop = threading.Event()
        errors: list[BaseException] = []

        def writer(i: int) -> None:
            try:
                for _ in range(20):
                    store.set("hot", values[i])
            except BaseException as e:  # noqa: BLE001
                errors.append(e)

        def reader() -> None:
            try:
                while not stop.is_set():
                    got = store.get("hot")
                    assert got is not None and bytes(got) in allowed
                    got = store.get("hot", SuffixByteRequest(3))
                    assert got is not None and len(got) == 3 and len(set(bytes(got))) == 1
            except BaseException as e:  # noqa: BLE001
                errors.append(e)

        readers = []
        if self.overwrite_while_reading:
            readers = [threading.Thread(target=reader) for _ in range(max(1, n // 2))]
        writers = [threading.Thread(target=writer, args=(i,)) for i in range(n)]
        for t in readers + writers:
            t.start()
        for t in writers:
            t.join()
        stop.set()
        for t in readers:
            t.join()
        assert not errors, errors[0]
        assert bytes(store.get("hot")) in allowed
        assert _keys(store.list()) == ["hot"]

    # -- properties -------------------------------------------------------
    if given is not None:
        _segment = st.from_regex(r"[a-z0-9_.-]{0,11}[a-z0-9_-]", fullmatch=True).filter(
            # names Windows reserves for devices
            lambda s: s.split(".")[0] not in {"con", "prn", "aux", "nul"}
            and not (len(s.split(".")[0]) == 4 and s[:3] in ("com", "lpt"))
        )
        _key = st.lists(_segment, min_size=1, max_size=4).map("/".join)

        @settings(
            max_examples=40,
            deadline=None,
            # every subclass runs this one function; each run makes its own store
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.differing_executors],
        )
        @given(
            items=st.dictionaries(_key, st.binary(max_size=300), max_size=6),
            start=st.integers(0, 320),
            length=st.integers(0, 320),
            data=st.data(),
        )
        def test_property_round_trip(
            self, tmp_path_factory: pytest.TempPathFactory, items, start, length, data
        ) -> None:
            # A key cannot also be a prefix of another key on a file system.
            """Check random keys, values and byte ranges against Python's slices (Hypothesis).

            Hypothesis draws up to 6 keys with values of up to 300 bytes, each written as bytes,
            bytearray or memoryview, and a byte range (``start``, ``length``); each example
            makes its own store with ``make_store``, then checks listings, reads, sizes, the
            three kinds of byte range, ``list_dir``, ``get_many``, deletes and ``clear``.

            Parameters
            ----------
            tmp_path_factory : pytest.TempPathFactory
                pytest's fixture: a new directory per example.
            """
            items = {
                k: v for k, v in items.items() if not any(o.startswith(k + "/") for o in items)
            }
            store = self.make_store(tmp_path_factory.mktemp("prop"))
            try:
                for k, v in items.items():
                    wrap = data.draw(st.sampled_from([bytes, bytearray, memoryview]))
                    store.set(k, wrap(v))
                assert _keys(store.list()) == sorted(items)
                for k, v in items.items():
                    assert_value(store.get(k), v)
                    assert store.getsize(k) == len(v)
                    assert store.exists(k)
                    assert_value(store.get(k, RangeByteRequest(start, start + length)),
                                 v[start:start + length])
                    assert_value(store.get(k, OffsetByteRequest(start)), v[start:])
                    assert_value(store.get(k, SuffixByteRequest(length)),
                                 v[len(v) - min(length, len(v)):])
                    parent = k.rsplit("/", 1)[0] + "/" if "/" in k else ""
                    name = k[len(parent):]
                    assert name in _keys(store.list_dir(parent))
                keys = sorted(items)
                got = store.get_many(keys)
                assert [bytes(g) for g in got] == [items[k] for k in keys]
                if not store.supports_deletes:
                    return
                for k in keys[::2]:
                    store.delete(k)
                assert _keys(store.list()) == keys[1::2]
                store.clear()
                assert store.is_empty()
            finally:
                store.close()

        del _segment, _key

    else:  # pragma: no cover

        def test_property_round_trip(self) -> None:
            """Skip the property test: Hypothesis is not installed."""
            pytest.skip("hypothesis is not installed")

