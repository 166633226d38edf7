"""Every public name documents itself, in numpydoc, and says only what is true.

The public names are those of ``__all__`` in the modules the API reference renders
(``PUBLIC_MODULES``), and the public methods and properties of the classes among them.
For each one:

* it has a docstring of its own whose first line is a one-sentence summary;
* a callable with parameters (other than ``self``/``cls``) has a ``Parameters``
  section that documents each of them, ``*args`` and ``**kwargs`` included, and no
  parameter that its signature does not have;
* a function or method that returns something has a ``Returns`` (or ``Yields``)
  section; one that returns nothing says so with ``-> None``.

A class documents its constructor's parameters in the class docstring (numpydoc's
convention), so ``__init__`` itself needs no docstring.
"""

from __future__ import annotations

import enum
import inspect
import re
from collections.abc import Callable

import pytest

from _helpers.public_api import public_names

_SECTION = re.compile(r"^(\w[\w ]*)\n-{3,}\s*$", re.MULTILINE)
_PARAM = re.compile(r"^(\*{0,2}[A-Za-z_]\w*(?:\s*,\s*\*{0,2}[A-Za-z_]\w*)*)\s*(?::.*)?$")

PUBLIC = public_names()


def _sections(doc: str) -> dict[str, str]:
    """The numpydoc sections of a cleaned docstring, by title."""
    marks = list(_SECTION.finditer(doc))
    out = {"": doc[: marks[0].start()] if marks else doc}
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(doc)
        out[m.group(1).strip()] = doc[m.end():end]
    return out


def _documented_params(section: str) -> tuple[list[str], list[str]]:
    """The names a Parameters section documents, and its lines that name none."""
    names: list[str] = []
    bad: list[str] = []
    for line in section.splitlines():
        if not line.strip() or line.startswith((" ", "\t")):
            continue
        m = _PARAM.match(line.strip())
        if m:
            names += [n.strip() for n in m.group(1).split(",")]
        else:
            bad.append(line)
    return names, bad


def _signature_params(func: Callable[..., object], kind: str) -> list[str] | None:
    """The parameters a docstring documents: a method's ``self`` or ``cls`` is not one."""
    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError):
        return None
    names = []
    for i, p in enumerate(sig.parameters.values()):
        if kind == "method" and i == 0 and p.name in ("self", "cls"):
            continue
        prefix = {p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}.get(p.kind, "")
        names.append(prefix + p.name)
    return names


def _target(obj: object, owner: type | None) -> tuple[Callable[..., object] | None, str]:
    """What to read the signature of, and what kind of thing it is."""
    if isinstance(obj, property):
        return None, "property"
    if isinstance(obj, (staticmethod, classmethod)):
        return obj.__func__, "method"
    if inspect.isclass(obj):
        return obj, "class"
    return obj, "function" if owner is None else "method"  # type: ignore[return-value]


def _own_doc(obj: object) -> str | None:
    raw = obj.fget if isinstance(obj, property) else obj
    raw = getattr(raw, "__func__", raw)
    doc = getattr(raw, "__doc__", None)
    if inspect.isclass(raw) and doc is not None and doc == object.__doc__:
        return None
    return inspect.cleandoc(doc) if doc else None


def check(name: str, obj: object, owner: type | None) -> list[str]:
    """What is wrong with one public name's docstring (empty: nothing)."""
    doc = _own_doc(obj)
    if not doc:
        return [f"{name}: no docstring"]
    problems = []
    summary = doc.splitlines()[0].strip()
    if not summary or summary.endswith((":", ",")) or len(summary) > 200:
        problems.append(f"{name}: the first line is not a one-sentence summary: {summary!r}")
    sections = _sections(doc)
    func, kind = _target(obj, owner)
    if func is None:
        return problems
    if kind == "class" and issubclass(func, enum.Enum):  # type: ignore[arg-type]
        # calling an enum looks a member up by value (Python's Enum call): the members
        # are its documentation, not the parameters of that call
        return problems
    if kind == "class" and "__init__" not in vars(func) and "__new__" not in vars(func):
        # the constructor is inherited: its parameters are documented where it is
        # defined, or (dataclasses, exceptions) by the class itself when it has any
        if "Parameters" not in sections:
            return problems
    params = _signature_params(func, kind)
    if params is None:
        return problems
    documented, bad = _documented_params(sections.get("Parameters", ""))
    if bad:
        problems.append(f"{name}: Parameters has lines that are not 'name : type': {bad}")
    plain = {p.lstrip("*") for p in params}
    extra = [d for d in documented if d.lstrip("*") not in plain]
    missing = [p for p in params if p.lstrip("*") not in {d.lstrip("*") for d in documented}]
    if extra:
        problems.append(f"{name}: documents parameters it does not have: {extra}")
    if missing:
        problems.append(f"{name}: does not document its parameters {missing}")
    if kind in ("function", "method"):
        returns_none = inspect.signature(func).return_annotation in (None, "None")
        if not returns_none and not {"Returns", "Yields"} & sections.keys():
            problems.append(f"{name}: has no Returns section (annotate '-> None' if it "
                            "returns nothing)")
    return problems


@pytest.mark.parametrize(
    ("name", "obj", "owner"), PUBLIC, ids=[name for name, _, _ in PUBLIC]
)
def test_public_name_is_documented(name: str, obj: object, owner: type | None) -> None:
    problems = check(name, obj, owner)
    assert not problems, "\n".join(problems)


def test_there_are_public_names() -> None:
    assert len(PUBLIC) > 500, len(PUBLIC)


def test_the_checker_catches_what_it_should() -> None:
    def no_doc(a): ...

    def wrong_param(a, b=1):
        """Do a thing.

        Parameters
        ----------
        a : int
            One.
        c : int
            Not a parameter.

        Returns
        -------
        int
        """

    def kwargs_unexplained(a, **kwargs) -> None:
        """Do a thing.

        Parameters
        ----------
        a : int
            One.
        """

    def no_returns(a):
        """Do a thing.

        Parameters
        ----------
        a, b : int
            One.
        """

    def fine(a, *args, **kwargs) -> None:
        """Do a thing.

        Parameters
        ----------
        a : int
            One.
        *args
            More.
        **kwargs
            Passed on.
        """

    assert check("no_doc", no_doc, None) == ["no_doc: no docstring"]
    assert check("w", wrong_param, None) == [
        "w: documents parameters it does not have: ['c']",
        "w: does not document its parameters ['b']",
    ]
    assert check("k", kwargs_unexplained, None) == [
        "k: does not document its parameters ['**kwargs']"
    ]
    assert check("r", no_returns, None) == [
        "r: documents parameters it does not have: ['b']",
        "r: has no Returns section (annotate '-> None' if it returns nothing)",
    ]
    assert check("f", fine, None) == []

    def register(cls) -> None:
        """Register a class.

        Parameters
        ----------
        cls : type
            The class.
        """

    class Colour(enum.Enum):
        """A colour."""

        RED = "red"

    assert check("register", register, None) == []
    assert check("Colour", Colour, None) == []
