"""``FsspecStore.from_url`` takes a path without ``://`` as a local one, as fsspec and
zarr-python's ``FsspecStore.from_url`` do (dask hands it plain paths)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import zarrfast

fsspec = pytest.importorskip("fsspec")
from zarrfast.errors import ZarrfastError  # noqa: E402
from zarrfast.storage import FsspecStore  # noqa: E402


def test_a_plain_path_is_the_local_file_system(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    a = zarrfast.create_array(tmp_path / "a.zarr", shape=(4,), chunks=(2,), dtype="int32")
    a[:] = [1, 2, 3, 4]
    for url in (str(tmp_path / "a.zarr"), "a.zarr"):
        monkeypatch.chdir(tmp_path)
        store = FsspecStore.from_url(url, read_only=True)
        assert type(store.fs).__name__ == "LocalFileSystem"
        np.testing.assert_array_equal(zarrfast.open_array(store)[:], [1, 2, 3, 4])


def test_not_a_string_is_refused() -> None:
    with pytest.raises(ZarrfastError, match="needs a URL"):
        FsspecStore.from_url(Path("a.zarr"))  # type: ignore[arg-type]
