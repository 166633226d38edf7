"""zarr-python's source distribution, for the tools that run its tests and its guide
(``dropin_docs.py``, ``dropin_tests.py``, ``zarr_pipeline_tests.py``)."""

from __future__ import annotations

import re
import subprocess
import sys
import tarfile
from pathlib import Path


def source_of(path: Path, unpack_to: str) -> Path:
    """zarr-python's source folder: ``path``, or the ``.tar.gz`` at ``path`` unpacked."""
    if path.is_dir():
        return path
    with tarfile.open(path) as archive:
        archive.extractall(unpack_to, filter="data")
    tops = [p for p in Path(unpack_to).iterdir() if p.is_dir()]
    if len(tops) != 1:
        raise SystemExit(f"{path}: expected one folder in the archive, found {len(tops)}")
    return tops[0]


def check_version(source: Path, python: str = sys.executable) -> None:
    """Warn when the source is not of the zarr-python version ``python`` imports."""
    info = source / "PKG-INFO"
    if not info.exists():
        return
    version = re.search(r"^Version: (\S+)", info.read_text(encoding="utf-8"), re.M)
    proc = subprocess.run([python, "-c", "import zarr; print(zarr.__version__)"],
                          capture_output=True, text=True, check=False)
    installed = proc.stdout.strip() or "(not importable)"
    if version and version[1] != installed:
        print(f"warning: the source is zarr-python {version[1]}, the installed zarr is "
              f"{installed}", file=sys.stderr)
