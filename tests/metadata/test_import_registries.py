"""No module fills a list, dict or set of ``zarrfast.metadata`` at import.

What a data type or a codec in metadata means must not depend on which modules happen to
have been imported.  A fresh interpreter snapshots every module-level list, dict and set of
each ``zarrfast.metadata`` module (and those held by its module-level objects, such as the
data type registry's ``contents``) as soon as that module has run, then imports all of
zarrfast; none of them may have changed by then.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import zarrfast
import zarrfast.dtype
from zarrfast.errors import UnsupportedDataTypeError

_SCRIPT = r'''
import copy, importlib, importlib.abc, importlib.machinery, json, pkgutil, sys

PREFIX = "zarrfast.metadata"
seen = {}  # name -> (container, its state, a copy that keeps its items alive)


def containers(module):
    for attr, value in list(vars(module).items()):
        if attr.startswith("__"):
            continue
        if isinstance(value, (list, dict, set)):
            yield f"{module.__name__}.{attr}", value
        elif (not isinstance(value, type) and hasattr(value, "__dict__")
                and type(value).__module__.startswith(PREFIX)):
            for inner_name, inner in vars(value).items():
                if isinstance(inner, (list, dict, set)):
                    yield f"{module.__name__}.{attr}.{inner_name}", inner


def state(value):
    if isinstance(value, dict):
        return [(id(k), id(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [id(v) for v in value]
    return sorted(id(v) for v in value)


class Watch(importlib.abc.MetaPathFinder):
    """Snapshot a zarrfast.metadata module's containers once the module has run."""

    def find_spec(self, name, path, target=None):
        if not name.startswith(PREFIX):
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None:
            return None
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            for key, value in containers(module):
                seen[key] = (value, state(value), copy.copy(value))

        spec.loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, Watch())
import zarrfast  # everything it imports
import zarrfast.metadata

for info in pkgutil.walk_packages(zarrfast.__path__, "zarrfast.", onerror=lambda name: None):
    if info.name.rsplit(".", 1)[-1] == "__main__":
        continue
    try:
        importlib.import_module(info.name)
    except ImportError:  # an integration whose optional package is not installed
        pass
modules = sorted(n for n in sys.modules if n.startswith(PREFIX))
changed = sorted(k for k, (value, before, _) in seen.items() if state(value) != before)
print(json.dumps({"modules": modules, "watched": sorted(seen), "changed": changed}))
'''


def _run() -> dict:
    root = Path(zarrfast.__file__).resolve().parents[1]  # the zarrfast under test
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(root), *filter(None, [os.environ.get("PYTHONPATH")])])}
    out = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True,
                         env=env, cwd=root, timeout=600, check=False)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_no_metadata_container_is_filled_by_another_module_at_import():
    result = _run()
    # the check saw the modules it is about (a watcher that saw nothing would pass)
    assert {"zarrfast.metadata.v3", "zarrfast.metadata.dtype",
            "zarrfast.metadata.zdtype"} <= set(result["modules"])
    assert any(name.startswith("zarrfast.metadata.zdtype.data_type_registry.")
               for name in result["watched"]), result["watched"]
    assert result["changed"] == [], (
        f"filled by another module at import: {', '.join(result['changed'])}")


def test_codec_objects_are_made_by_the_codecs_layer_and_keep_the_document():
    from zarrfast.codecs.metadata import with_codec_objects
    from zarrfast.metadata.v3 import ArrayV3Metadata, GroupMetadata

    doc = {"zarr_format": 3, "node_type": "array", "shape": [4], "data_type": "int16",
           "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
           "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
           "codecs": ["bytes", {"name": "zstd", "configuration": {"level": 1}},
                      {"name": "x-unknown", "must_understand": False}]}
    md = ArrayV3Metadata.from_dict(doc)
    assert md.codecs == tuple(doc["codecs"])  # the metadata layer knows no codec classes
    shown = with_codec_objects(md)
    assert [type(c).__name__ for c in shown.codecs[:2]] == ["BytesCodec", "ZstdCodec"]
    assert shown.codecs[2] == doc["codecs"][2]  # no class takes it: its JSON
    assert shown.to_dict() == md.to_dict() and shown.to_dict()["codecs"] == doc["codecs"]
    assert with_codec_objects(shown) is shown
    group = GroupMetadata.from_dict({"zarr_format": 3, "node_type": "group",
                                     "consolidated_metadata": {
                                         "kind": "inline", "must_understand": False,
                                         "metadata": {"a": doc}}})
    inner = with_codec_objects(group).consolidated_metadata.metadata["a"]
    assert type(inner.codecs[1]).__name__ == "ZstdCodec"


def test_metadata_reads_a_registered_data_type_through_the_registry():
    from zarrfast.dtype import Int16, data_type_registry
    from zarrfast.metadata.v3 import ArrayV3Metadata

    class Tenths(Int16):  # a data type of one's own (not one zarrfast knows)
        _zarr_v3_name = "x-tenths"
        _zarrfast_builtin = False

        def to_json(self, zarr_format):
            return "x-tenths" if zarr_format == 3 else super().to_json(zarr_format)

        @classmethod
        def _from_json_v3(cls, data):
            if data == "x-tenths":
                return cls()
            raise zarrfast.dtype.DataTypeValidationError(f"not x-tenths: {data!r}")

    doc = {"zarr_format": 3, "node_type": "array", "shape": [4], "data_type": "x-tenths",
           "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
           "chunk_key_encoding": {"name": "default"}, "fill_value": 7,
           "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]}
    data_type_registry.register("x-tenths", Tenths)
    try:
        md = ArrayV3Metadata.from_dict(doc)
        assert md.data_type == Tenths() and md.type_info.name == "x-tenths"
        assert md.fill_value == 7 and md.to_dict()["data_type"] == "x-tenths"
    finally:
        data_type_registry.unregister("x-tenths")
    with pytest.raises(UnsupportedDataTypeError, match="x-tenths"):
        ArrayV3Metadata.from_dict(doc)
