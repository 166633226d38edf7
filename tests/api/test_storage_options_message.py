"""``storage_options`` given with a store that takes none: the ``StorageOptionsError``
names the store briefly (a dict: its size), never with its values (chunk bytes)."""

import numpy as np
import pytest

import zarrfast
from zarrfast.errors import ZarrfastError
from zarrfast.storage import MemoryStore, StorageOptionsError, make_store


def _filled_dict():
    store = {}
    a = zarrfast.create_array(store, shape=(64,), chunks=(8,), dtype="uint8",
                              compressors=None)
    a[:] = np.full(64, ord("Q"), dtype="uint8")  # chunk bytes: b"QQQQQQQQ"
    return store


@pytest.mark.parametrize("call", [
    lambda s: make_store(s, storage_options={"anon": True}),
    lambda s: zarrfast.open_array(s, storage_options={"anon": True}),
    lambda s: zarrfast.open_group(s, storage_options={"anon": True}),
], ids=["make_store", "open_array", "open_group"])
def test_a_dict_store_is_named_by_its_size_not_its_values(call):
    store = _filled_dict()
    with pytest.raises(StorageOptionsError) as info:
        call(store)
    message = str(info.value)
    assert f"a dict of {len(store)} keys" in message
    assert "QQQQ" not in message and "zarr.json" not in message and "b'" not in message
    assert len(message) < 200


def test_a_path_or_a_store_is_still_named_by_its_repr():
    with pytest.raises(StorageOptionsError, match="'data.zarr'"):
        make_store("data.zarr", storage_options={"anon": True})
    with pytest.raises(StorageOptionsError, match=r"MemoryStore\("):
        make_store(MemoryStore(), storage_options={"anon": True})
    with pytest.raises(StorageOptionsError, match="a dict of 1 key$"):
        make_store({"k": b"v" * 10_000}, storage_options={"anon": True})


class _Bulky:
    def __repr__(self):
        return "Bulky(" + "x" * 10_000 + ")"


def test_an_unusable_object_is_named_briefly_too():
    with pytest.raises(ZarrfastError) as info:
        make_store(np.zeros(10_000))
    assert "numpy.ndarray" in str(info.value) and len(str(info.value)) < 200
    with pytest.raises(StorageOptionsError) as info:
        make_store(_Bulky(), storage_options={"anon": True})
    assert "_Bulky" in str(info.value) and "xxxx" not in str(info.value)
