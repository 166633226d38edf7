"""zarrfast.config: zarr-python's donfig calls and keys, zarrfast's own keys, and the keys that
change what zarrfast does (order, default format, JSON indent, empty chunks, threads)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import zarr

import zarrfast
from zarrfast import config
from zarrfast.config import BadConfigError, UnknownConfigKeyError, env_defaults
from zarrfast.errors import ZarrfastError
from zarrfast.hierarchy.create import create_array_at
from zarrfast.storage import MemoryStore


@pytest.fixture(autouse=True)
def _fresh_config():
    config.reset()
    yield
    config.reset()


def _flat(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        if isinstance(v, dict) and v:
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def test_every_zarr_python_key_is_known() -> None:
    for key in _flat(zarr.config.defaults[0]):
        if key.startswith("codecs."):
            continue  # zarr-python's class paths; zarrfast keeps its own codec table
        config.get(key)  # raises for a key zarrfast does not have


def test_set_as_call_and_as_context_manager() -> None:
    assert config.get("array.order") == "C"
    with config.set({"array.order": "F"}):
        assert config.get("array.order") == "F"
        assert config.get("array") ["order"] == "F"
    assert config.get("array.order") == "C"
    config.set({"array.order": "F"})  # for good
    assert config.get("array.order") == "F"
    config.reset()
    assert config.get("array.order") == "C"


def test_keyword_and_nested_forms() -> None:
    with config.set(array__order="F", json_indent=4):
        assert config.get("array.order") == "F"
        assert config.get("json_indent") == 4
    with config.set({"array": {"write_empty_chunks": True}}):
        # a namespace dict sets its keys, it does not drop the others
        assert config.get("array.order") == "C"
        assert config.get("write_empty_chunks") is True
    assert config.get("array.write_empty_chunks") is False


@pytest.mark.parametrize(("zarr_key", "own_key", "value"), [
    ("threading.max_workers", "threads", 3),
    ("async.concurrency", "io_concurrency", 7),
    ("array.write_empty_chunks", "write_empty_chunks", True),
])
def test_zarr_keys_and_zarrfast_keys_are_one_setting(zarr_key, own_key, value) -> None:
    before = config.get(own_key)
    with config.set({zarr_key: value}):
        assert config.get(own_key) == value
        assert config.get(zarr_key) == value
    assert config.get(own_key) == before == config.get(zarr_key)
    with config.set(**{own_key: value}):
        assert config.get(zarr_key) == value
    assert config.get(zarr_key) == before


def test_both_keys_of_one_setting_must_agree() -> None:
    with pytest.raises(BadConfigError, match="one setting"):
        config.set({"threads": 2, "threading.max_workers": 4})
    with config.set({"threads": 2, "threading.max_workers": 2}):
        assert config.get("threads") == 2


def test_max_workers_none_means_the_default_thread_count() -> None:
    default = config.get("threads")
    with config.set(threads=1), config.set({"threading.max_workers": None}):
        assert config.get("threads") == default
        assert config.get("threading.max_workers") == default


def test_zarrfast_keys_keep_their_call_forms() -> None:
    with config.set(threads=1, shard_coalesce_gap=0):
        assert config.get("threads") == 1
        assert config.get("shard_coalesce_gap") == 0
    assert config.get("threads") >= 1


@pytest.mark.parametrize(("arg", "match"), [
    ({"nope": 1}, "'nope'"),
    ({"array.ordr": "C"}, "'array.ordr'"),
    ({"threading.workers": 2}, "'threading.workers'"),
])
def test_unknown_keys_name_the_key(arg, match) -> None:
    with pytest.raises(UnknownConfigKeyError, match=match):
        config.set(arg)
    with pytest.raises(ZarrfastError):  # and stay ValueErrors like every zarrfast error
        config.set(arg)


@pytest.mark.parametrize(("key", "value"), [
    ("array.order", "X"),
    ("default_zarr_format", 4),
    ("threading.max_workers", 0),
    ("async.concurrency", 1.5),
    ("array.write_empty_chunks", "yes"),
    ("json_indent", -1),
    ("codec_pipeline.path", 3),
    ("codecs.blosc", None),
    ("remote_store", "boto"),
])
def test_bad_values_name_the_key_and_value(key, value) -> None:
    with pytest.raises(BadConfigError) as info:
        config.set({key: value})
    assert key in str(info.value) and repr(value) in str(info.value)
    assert config.get(key, "unset") != value


def test_a_failed_set_changes_nothing() -> None:
    with pytest.raises(BadConfigError):
        config.set({"array.order": "F", "threads": 0})
    assert config.get("array.order") == "C"


def test_other_namespaces_are_kept_as_given() -> None:
    with config.set({"mylib.option": [1, 2], "codecs.mycodec": "my.module.Codec"}):
        assert config.get("mylib.option") == [1, 2]
        assert config.get("codecs.mycodec") == "my.module.Codec"
    assert config.get("mylib.option", None) is None


def test_get_missing_key() -> None:
    with pytest.raises(KeyError, match="'no.such.key'"):
        config.get("no.such.key")
    assert config.get("no.such.key", 42) == 42
    assert "array.order" in config.config["array"] or "order" in config.config["array"]


def test_pprint_and_donfig_attributes(capsys) -> None:
    config.pprint()
    out = capsys.readouterr().out
    assert "'default_zarr_format': 3" in out and "'threads'" in out
    assert config.name == "zarrfast"
    assert config.defaults[0]["array"]["order"] == "C"
    assert config.to_dict()["async"]["concurrency"] == config.get("io_concurrency")


def test_refresh_reads_the_environment(monkeypatch) -> None:
    monkeypatch.setenv("ZARRFAST_ARRAY__ORDER", "F")
    monkeypatch.setenv("ZARRFAST_THREADS", "3")
    monkeypatch.setenv("ZARRFAST_ASYNC__CONCURRENCY", "5")
    config.refresh()
    assert config.get("array.order") == "F"
    assert config.get("threads") == 3 == config.get("threading.max_workers")
    assert config.get("io_concurrency") == 5
    monkeypatch.delenv("ZARRFAST_ARRAY__ORDER")
    monkeypatch.delenv("ZARRFAST_THREADS")
    monkeypatch.delenv("ZARRFAST_ASYNC__CONCURRENCY")
    config.reset()
    assert config.get("array.order") == "C"


def test_zarr_pythons_environment_variables_are_followed(monkeypatch) -> None:
    monkeypatch.setenv("ZARR_ARRAY__ORDER", "F")
    monkeypatch.setenv("ZARR_THREADING__MAX_WORKERS", "2")
    monkeypatch.setenv("ZARR_ASYNC__CONCURRENCY", "9")
    monkeypatch.setenv("ZARRFAST_ASYNC__CONCURRENCY", "11")  # zarrfast's own wins
    monkeypatch.setenv("ZARR_V3_EXPERIMENTAL_API", "1")  # not a key: left alone
    config.refresh()
    assert config.get("array.order") == "F"
    assert config.get("threads") == 2
    assert config.get("io_concurrency") == 11 == config.get("async.concurrency")
    monkeypatch.setenv("ZARR_ARRAY__ORDER", "Q")
    monkeypatch.setenv("ZARR_ARRAY__V2_DEFAULT_COMPRESSOR__NUMERIC", "zstd")
    with pytest.warns(UserWarning, match="array.order='Q'") as caught:
        config.refresh()
    assert any("v2_default_compressor" in str(w.message) for w in caught)
    assert config.get("array.order") == "C"


def test_other_zarrfast_switches_are_not_config_keys(monkeypatch) -> None:
    monkeypatch.setenv("ZARRFAST_BATCH_DECODE", "0")
    monkeypatch.setenv("ZARRFAST_PURE_PYTHON", "1")
    monkeypatch.setenv("ZARRFAST_JSON_INDENT", "4")
    config.refresh()
    assert config.get("json_indent") == 4
    assert config.get("batch_decode", None) is None
    assert config.get("pure_python", None) is None


def test_bad_environment_names_the_variable(monkeypatch) -> None:
    with pytest.raises(BadConfigError, match="ZARRFAST_THREADS='x'"):
        env_defaults({"ZARRFAST_THREADS": "x"})
    with pytest.raises(BadConfigError, match="ZARRFAST_WRITE_EMPTY"):
        env_defaults({"ZARRFAST_WRITE_EMPTY": "maybe"})
    assert env_defaults({"ZARRFAST_WRITE_EMPTY": "1", "ZARRFAST_LOCK_TIMEOUT": "2.5"}) == {
        "write_empty_chunks": True, "lock_timeout": 2.5}
    monkeypatch.setenv("ZARRFAST_ARRAY__ORDER", "Z")
    with pytest.raises(BadConfigError, match="array.order='Z'"):
        config.refresh()
    monkeypatch.delenv("ZARRFAST_ARRAY__ORDER")


def test_array_order_is_the_default_order() -> None:
    data = np.arange(12, dtype="i4").reshape(3, 4)
    with config.set({"array.order": "F"}):
        a = zarrfast.create_array(MemoryStore(), data=data, chunks=(2, 2))
        assert a.order == "F"
        v2 = zarrfast.create_array(MemoryStore(), data=data, chunks=(2, 2), zarr_format=2)
        assert json.loads(v2.store.get(".zarray"))["order"] == "F"
    assert a[...].flags.f_contiguous
    np.testing.assert_array_equal(a[...], data)
    explicit = zarrfast.create_array(MemoryStore(), data=data, chunks=(2, 2), order="C")
    assert explicit.order == "C"


def test_default_zarr_format() -> None:
    with config.set({"default_zarr_format": 2}):
        store = MemoryStore()
        a = create_array_at(store, "x", shape=(4,), dtype="i2", chunks=(2,))
        assert a.zarr_format == 2
        assert store.get("x/.zarray") is not None and store.get("x/zarr.json") is None
    b = create_array_at(MemoryStore(), "x", shape=(4,), dtype="i2", chunks=(2,))
    assert b.zarr_format == 3


@pytest.mark.parametrize("indent", [None, 0, 4])
def test_json_indent(indent) -> None:
    with config.set(json_indent=indent):
        a = zarrfast.create_array(MemoryStore(), shape=(4,), dtype="i2", chunks=(2,))
    text = a.store.get("zarr.json").decode()
    assert text == json.dumps(json.loads(text), indent=indent, allow_nan=True)


def test_write_empty_chunks_through_zarr_key() -> None:
    for value, stored in ((True, 2), (False, 0)):
        with config.set({"array.write_empty_chunks": value}):
            a = zarrfast.create_array(MemoryStore(), shape=(4,), dtype="i2", chunks=(2,))
            a[...] = 0
            assert a.nchunks_initialized == stored


def test_enable_gpu_refuses_clearly() -> None:
    with pytest.raises(BadConfigError, match="GPU"):
        config.enable_gpu()


def test_help_text_lists_every_key_plainly() -> None:
    """help(zarrfast.config), where the Configuration page sends people: every key and
    environment variable, in plain text (no Sphinx roles, no RST tables)."""
    import re

    import zarrfast.api

    doc = config.__doc__
    for name, key in config._ENV_KEYS.items():
        assert re.search(rf"^{key}: .*; {name}$", doc, re.M), (key, name)
    for key in config.values():
        assert key in doc, key
    for text in (doc, zarrfast.api.__doc__):
        assert not re.search(r":(mod|class|func|meth):`|^=====|layer \d", text, re.M)
