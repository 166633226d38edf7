"""tools/dropin_docs.py runs zarr-python's guide with zarr-python and with zarrfast under the
name ``zarr``: run here on a small stand-in for the guide's source, in this environment.
A block whose zarr-python output varies from run to run (timings, random values) is
compared on what does not vary."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

TOOL = Path(__file__).resolve().parents[2] / "tools" / "dropin_docs.py"

PAGE = textwrap.dedent('''
    ```python exec="true" session="s"
    import random
    import zarr
    print("stable")
    ```

    ```python exec="true" session="s"
    print(f"took {random.random()} s; 3 keys of {1024}")
    ```

    ```python exec="true" session="s"
    print(f"took {random.random()} s; {4 if hasattr(zarr, 'install_as_zarr') else 3} keys")
    ```

    ```python exec="true" session="s"
    print(hasattr(zarr, "install_as_zarr"), zarr.__version__)
    ```
''')


def _run(tmp_path: Path, *args: str) -> str:
    (tmp_path / "src" / "docs").mkdir(parents=True, exist_ok=True)
    (tmp_path / "src" / "docs" / "page.md").write_text(PAGE)
    proc = subprocess.run([sys.executable, str(TOOL), str(tmp_path / "src"), "--show-diff",
                           *args], capture_output=True, text=True, timeout=600, check=True)
    return proc.stdout


def test_varying_blocks_are_compared_on_what_does_not_vary(tmp_path) -> None:
    pytest.importorskip("zarr")
    out = _run(tmp_path)
    assert ("VARIES docs/page.md:s block 1 (zarr-python prints something else each run; "
            "the same but for the numbers that vary)") in out
    # zarrfast prints 4 where zarr-python's two runs printed 3 both times
    assert ("VARIES docs/page.md:s block 2 (zarr-python prints something else each run; "
            "and zarrfast's differs in more than those numbers)") in out
    # install_as_zarr (the default) reports the zarr-python API version zarrfast follows
    assert "DIFF docs/page.md:s block 3\n" in out
    assert "+True 3.4.2" in out
    assert out.rstrip().endswith(
        "blocks: 4; run with zarr-python: 4; run with zarrfast: 4; print the same: 1; the "
        "same but for store ids and object addresses: 0; output that varies from run to run "
        "with zarr-python itself: 2 (of which the same but for the numbers that vary: 1)")


def test_alias_of_modules(tmp_path) -> None:
    pytest.importorskip("zarr")
    import zarrfast

    out = _run(tmp_path, "--alias", "modules")
    assert f"+True {zarrfast.__version__}" in out  # zarr is zarrfast itself
