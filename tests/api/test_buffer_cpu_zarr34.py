"""``zarr.buffer.cpu`` (zarr-python 3.4's release post, block ``codec-errors``): a store of
``buffer_prototype`` buffers opened through ``install_as_zarr``.  The module was missing, so the
block stopped at its import; the error's own wording differs on purpose (every zarrfast error
names the node first: docs/migrating.md)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

METADATA = {
    "zarr_format": 3, "node_type": "array", "shape": [4, 4], "data_type": "uint8",
    "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4, 4]}},
    "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
    "codecs": [{"name": "bytes"}, {"name": "imagecodecs_jpeg"}], "attributes": {},
}


def test_buffer_prototype_store_and_unknown_codec_as_the_release_post(tmp_path) -> None:
    code = textwrap.dedent(f"""
        import json
        import zarrfast
        zarrfast.install_as_zarr()
        import zarr
        from zarr.buffer.cpu import buffer_prototype
        from zarr.core.buffer.cpu import buffer_prototype as same
        assert same is buffer_prototype
        assert buffer_prototype.buffer.from_bytes(b"abc").to_bytes() == b"abc"
        store = {{"zarr.json": buffer_prototype.buffer.from_bytes(
            json.dumps({METADATA!r}).encode())}}
        try:
            zarr.open_array(store, mode="r")
        except zarr.errors.UnknownCodecError as e:
            print(json.dumps(str(e)))
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    message = json.loads(proc.stdout.strip().splitlines()[-1])
    assert message.startswith("array '/': codecs[1]: unknown codec 'imagecodecs_jpeg'")
