"""The Examples sections of the public docstrings run, and print what they show.

Each public name's examples (the names ``test_docstrings`` checks) run as one doctest,
in an empty temporary directory, so an example may write ``data.zarr`` where it stands.
NumPy prints its arrays in the legacy-free style of NumPy 2; ``ELLIPSIS`` and
``NORMALIZE_WHITESPACE`` are on, so an example may elide an address or a long repr.
"""

from __future__ import annotations

import doctest
import inspect
from pathlib import Path

import numpy as np
import pytest

import zarrfast

from _helpers.public_api import public_names

FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _docstring_owner(obj: object) -> object:
    if isinstance(obj, property):
        return obj.fget
    return getattr(obj, "__func__", obj)


def _examples() -> list[tuple[str, doctest.DocTest]]:
    parser = doctest.DocTestParser()
    out = []
    for name, obj, _owner in PUBLIC:
        raw = _docstring_owner(obj)
        doc = getattr(raw, "__doc__", None)
        if not doc or ">>>" not in doc or (inspect.isclass(raw) and doc is object.__doc__):
            continue
        module = inspect.getmodule(raw)
        try:
            lineno = inspect.getsourcelines(raw)[1]  # type: ignore[arg-type]
        except (OSError, TypeError):
            lineno = 0
        test = parser.get_doctest(
            doc, {"np": np, "zarrfast": zarrfast}, name, getattr(module, "__file__", None), lineno
        )
        out.append((name, test))
    return out


PUBLIC = public_names()
EXAMPLES = _examples()


@pytest.mark.parametrize(("name", "test"), EXAMPLES, ids=[n for n, _ in EXAMPLES])
def test_docstring_examples_run(
    name: str, test: doctest.DocTest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    failures: list[str] = []

    class _Out:
        def write(self, text: str) -> None:
            failures.append(text)

    runner.run(test, out=_Out().write, clear_globs=True)
    result = runner.summarize(verbose=False)
    assert result.attempted > 0, f"{name}: no example ran"
    assert result.failed == 0, "".join(failures)
