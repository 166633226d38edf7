"""Every Python block of the documentation runs, as a reader would run it.

The blocks of one page (``docs/**/*.md``, and the README) run in order, as one script,
in a child Python started in an empty temporary directory: a page is a self-contained
script, whatever the other pages or tests did to the configuration.  A block that
cannot run here (a cloud account, a cluster) is preceded by the line
``<!-- no-run: <why> -->``; the reason is required.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.rglob("*.md")) + [ROOT / "README.md"]

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})\s*(?P<info>[^\n`]*)$")
_NO_RUN = re.compile(r"^\s*<!--\s*no-run:\s*(?P<why>.*?)\s*-->\s*$")

#: runs the blocks given as JSON on stdin, each compiled with its page and line, so a
#: traceback points into the page
_RUNNER = """
import json, sys
blocks = json.load(sys.stdin)
namespace = {"__name__": "__main__"}
for where, source in blocks:
    exec(compile(source, where, "exec"), namespace)
"""


def blocks(page: Path) -> list[tuple[int, str, str | None]]:
    """(first line, source, why it does not run or None) of each Python block of a page."""
    out = []
    lines = page.read_text(encoding="utf-8").splitlines()
    i = 0
    previous = ""
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            if lines[i].strip():
                previous = lines[i]
            i += 1
            continue
        fence, info = m.group("fence"), m.group("info").strip()
        start = i + 1
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            i += 1
        body = textwrap.dedent("\n".join(lines[start:i]))
        language = info.split()[0].lstrip(".{").rstrip("}") if info else ""
        if language in ("python", "py"):
            no_run = _NO_RUN.match(previous)
            out.append((start + 1, body, no_run.group("why") if no_run else None))
        previous = ""
        i += 1
    return out


def test_the_pages_are_found() -> None:
    assert (DOCS / "index.md").is_file(), DOCS
    assert len(PAGES) > 10, PAGES


def test_blocks_finds_fenced_python_and_its_reasons(tmp_path: Path) -> None:
    page = tmp_path / "p.md"
    page.write_text(
        "text\n```python\nx = 1\n```\n\n<!-- no-run: needs S3 -->\n```python\ny = 2\n```\n"
        "```bash\nls\n```\n!!! note\n    ```py\n    z = 3\n    ```\n",
        encoding="utf-8",
    )
    assert blocks(page) == [(3, "x = 1", None), (8, "y = 2", "needs S3"), (15, "z = 3", None)]


#: the pages that teach by example: each has Python to run
TEACHING = ["getting-started.md", "guide/arrays.md", "guide/groups.md", "guide/sharding.md",
            "guide/formats.md", "guide/stores.md", "guide/xarray-dask.md", "guide/geozarr.md",
            "guide/configuration.md"]


@pytest.mark.parametrize("name", TEACHING)
def test_a_teaching_page_has_python_that_runs(name: str) -> None:
    assert any(why is None for _, _, why in blocks(DOCS / name)), name


def _with_python(pages: list[Path]) -> list[Path]:
    return [p for p in pages if blocks(p)]


@pytest.mark.parametrize(
    "page", _with_python(PAGES), ids=[str(p.relative_to(ROOT)) for p in _with_python(PAGES)]
)
def test_page_runs(page: Path, tmp_path: Path) -> None:
    found = blocks(page)
    for line, _source, why in found:
        assert why is None or why.strip(), f"{page.name}:{line}: no-run without a reason"
    runnable = [
        (f"{page.relative_to(ROOT)}:{line}", "\n" * (line - 1) + source)
        for line, source, why in found
        if why is None
    ]
    if not runnable:
        return  # every block says why it cannot run here (checked above)
    proc = subprocess.run(
        [sys.executable, "-c", _RUNNER],
        input=json.dumps(runnable),
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
    )
    assert proc.returncode == 0, (
        f"{page.relative_to(ROOT)}: a block failed\n{proc.stderr[-4000:]}"
    )
