"""zarr-python 3.4 as a peer, in a Python 3.12 virtual environment of its own.

zarr-python 3.4 needs Python >= 3.12 while zarrfast's test environment may be 3.11,
so the peer runs in a child Python: :func:`zarr_peer` builds (once, then reuses) a venv
with ``zarr==3.4.2`` and the codec packages its writers need, and runs scripts there.

Where the venv lives: ``$ZARRFAST_PEER_VENV`` or ``~/.cache/zarrfast-tests/zarr-3.4.2``.
Which Python: ``$ZARRFAST_PEER_PYTHON``, else ``python3.12`` on ``PATH``, else a pyenv
3.12.  Without one the tests that need the peer are skipped, saying why.

A script talks JSON: it gets ``ARGS`` (the ``args`` passed in) and may ``emit(obj)``
one JSON value, which :meth:`ZarrPeer.run` returns.
"""

from __future__ import annotations

import fcntl
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import pytest

ZARR_VERSION = "3.4.2"
#: what the peer's writers need (zfpy 1.0.1.post0 breaks ``import numcodecs``; zarr-python's
#: cast_value codec needs cast-value-rs, which every test using that codec in the peer gets
#: from here, whatever ran before it)
PACKAGES = [f"zarr=={ZARR_VERSION}", "numcodecs", "pcodec", "zfpy==1.0.1", "ml_dtypes",
            "crc32c", "cast-value-rs>=0.4.2"]

_PRELUDE = """
import json, sys, warnings
warnings.simplefilter("ignore")
ARGS = json.loads(sys.argv[1])
def emit(obj):
    sys.stdout.write("\\n@@JSON@@" + json.dumps(obj))
"""


def _find_python() -> str | None:
    explicit = os.environ.get("ZARRFAST_PEER_PYTHON")
    if explicit:
        return explicit
    found = shutil.which("python3.12")
    if found:
        return found
    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    for cand in sorted(glob.glob(os.path.join(root, "versions", "3.12*", "bin", "python3.12")),
                       reverse=True):
        return cand
    return None


def _venv_dir() -> Path:
    explicit = os.environ.get("ZARRFAST_PEER_VENV")
    if explicit:
        return Path(explicit)
    return Path(os.path.expanduser("~/.cache/zarrfast-tests")) / f"zarr-{ZARR_VERSION}"


class ZarrPeer:
    """A Python with zarr-python 3.4 installed."""

    def __init__(self, python: str) -> None:
        self.python = python

    def run(self, script: str, args: Any = None, *, cwd: str | Path | None = None,
            timeout: float = 300) -> Any:
        """Run ``script`` (dedented) in the peer; return what it ``emit``-ted (or None).
        A failing script fails the test with the peer's traceback."""
        code = _PRELUDE + textwrap.dedent(script)
        with tempfile.TemporaryDirectory() as tmp:
            proc = subprocess.run(
                [self.python, "-c", code, json.dumps(args)], cwd=cwd or tmp,
                capture_output=True, text=True, timeout=timeout,
                env={**os.environ, "PYTHONPATH": ""})
        if proc.returncode != 0:
            pytest.fail(f"zarr-python {ZARR_VERSION} peer failed (exit {proc.returncode}):\n"
                        f"{proc.stderr[-4000:]}")
        out = proc.stdout
        if "@@JSON@@" in out:
            return json.loads(out.rsplit("@@JSON@@", 1)[1])
        return None


def _build(venv: Path, python: str) -> None:
    subprocess.run([python, "-m", "venv", str(venv)], check=True, capture_output=True,
                   env={**os.environ, "PYENV_VERSION": "3.12"})
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
           "--disable-pip-version-check", *PACKAGES]
    proc = subprocess.run(pip, capture_output=True, text=True)
    if proc.returncode != 0:
        shutil.rmtree(venv, ignore_errors=True)
        raise RuntimeError(f"pip install {' '.join(PACKAGES)} failed:\n{proc.stderr[-2000:]}")
    (venv / "READY").write_text(" ".join(PACKAGES))


def get_zarr_peer() -> ZarrPeer:
    """The peer, building its venv on first use (under a lock, so parallel test processes
    build it once); skips the calling test when no Python 3.12 is available."""
    venv = _venv_dir()
    py = venv / "bin" / "python"
    ready = venv / "READY"
    if not (ready.exists() and ready.read_text() == " ".join(PACKAGES)):
        python = _find_python()
        if python is None:
            pytest.skip(f"zarr-python {ZARR_VERSION} needs Python 3.12; none found "
                        f"(set ZARRFAST_PEER_PYTHON)")
        venv.parent.mkdir(parents=True, exist_ok=True)
        with open(venv.parent / f".{venv.name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not (ready.exists() and ready.read_text() == " ".join(PACKAGES)):
                shutil.rmtree(venv, ignore_errors=True)
                try:
                    _build(venv, python)
                except (OSError, subprocess.CalledProcessError, RuntimeError) as e:
                    pytest.skip(f"cannot build the zarr-python {ZARR_VERSION} venv: {e}")
    check = subprocess.run([str(py), "-c", "import zarr; print(zarr.__version__)"],
                           capture_output=True, text=True, cwd=tempfile.gettempdir())
    if check.returncode != 0 or check.stdout.strip() != ZARR_VERSION:
        pytest.skip(f"the peer venv {venv} does not import zarr {ZARR_VERSION}: "
                    f"{check.stderr[-500:] or check.stdout}")
    return ZarrPeer(str(py))


__all__ = ["ZARR_VERSION", "ZarrPeer", "get_zarr_peer"]

if __name__ == "__main__":  # pragma: no cover - build the venv by hand
    print(get_zarr_peer().python, file=sys.stderr)
