"""The README's test command on a fresh machine (issue 41, class 10).

A new user's ``pip install ".[test]"`` builds the kernels without the codec libraries
(no ``libzstd-dev``, ``libblosc-dev`` or ``liblz4-dev``): ``_decode`` then finds
numcodecs' zstd and c-blosc with ctypes.  The suite must pass on that build as on the
linked one (CI and the wheels), so:

* blosc frames of LZ4 blocks are undone by zarrfast on both builds (with the LZ4 linked
  beside c-blosc, else with the LZ4 of numcodecs' c-blosc), not by c-blosc on one and
  zarrfast on the other: the same result for the same range of the same frame.
  ``ZARRFAST_LINKED_CODECS=0`` makes a linked build take the other build's path, so
  both are checked on whichever build runs the test.
* no test asserts on time or load (a loaded 2-core machine made one fail).
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from _helpers.decode import needs_blosc

TESTS = Path(__file__).resolve().parents[1]

#: decodes, with zarrfast's own frame decoder (the scalar filters), the last byte of an
#: LZ4 frame of 129 bytes whose first block is damaged, and the whole undamaged frame
_CHILD = textwrap.dedent(
    """
    import json, struct
    import numpy as np
    import numcodecs.blosc as blosc
    import zarrfast.kernels as k
    from zarrfast._ext import _decode

    data = np.repeat(np.arange(17, dtype=np.uint8), 8)[:129].tobytes()
    frame = bytes(blosc.compress(data, b"lz4", 5, 1, 128, typesize=4))
    bad = bytearray(frame)
    at = struct.unpack_from("<i", frame, 16)[0]  # block 0's first stream
    bad[at:at + 4] = b"\\xff\\xff\\xff\\xff"
    _decode.set_blosc_frames("scalar")
    out = {"frames": _decode.blosc_frames()}
    target = np.zeros(129, np.uint8)
    out["range"] = _decode.blosc_decode_frame(np.frombuffer(bytes(bad), np.uint8), target,
                                              128, 129)
    out["last byte"] = int(target[128]) == data[128]
    whole = np.zeros(129, np.uint8)
    out["whole"] = _decode.blosc_decode_frame(np.frombuffer(frame, np.uint8), whole)
    out["equal"] = whole.tobytes() == data
    print(json.dumps(out))
    """
)


def _run_child(cwd: Path, linked: str) -> dict:
    env = {**os.environ, "ZARRFAST_LINKED_CODECS": linked}
    env.pop("ZARRFAST_BLOSC_FRAMES", None)
    proc = subprocess.run([sys.executable, "-c", _CHILD], cwd=cwd, env=env,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@needs_blosc
def test_lz4_blosc_frames_are_zarrfasts_with_or_without_linked_codecs(subprocess_cwd):
    """Before: on a build without linked codecs (this machine's editable install, a new
    user's), LZ4 frames were left to c-blosc (``blosc_frames()`` said ``zstd`` only, the
    range decoded to -1), while the linked build decoded them: the suite's blosc-frame
    tests failed on the first build only."""
    default = _run_child(subprocess_cwd, "1")
    unlinked = _run_child(subprocess_cwd, "0")
    for got in (default, unlinked):
        assert got["frames"] == "zarrfast (scalar): lz4, zstd", got
        assert got["range"] == 129 and got["last byte"], got  # block 0 not needed
        assert got["whole"] == 129 and got["equal"], got  # (the undamaged frame)
    assert default == unlinked


# ---------------------------------------------------------------------------
# no test asserts on time
# ---------------------------------------------------------------------------

#: what a timing assertion reads, by its text: a clock, or a duration named ``elapsed``
_TIMING = re.compile(r"perf_counter|monotonic|process_time|thread_time|time\.time(_ns)?\(|"
                     r"\belapsed\b|[\"']elapsed[\"']")
#: the clocks of the standard library: a call of one (under any name it is imported as)
#: reads a clock
_CLOCKS = {"time": {"time", "time_ns", "monotonic", "monotonic_ns", "perf_counter",
                    "perf_counter_ns", "process_time", "process_time_ns", "thread_time",
                    "thread_time_ns"},
           "timeit": {"default_timer"}}
#: unittest's assertions that cap their first argument, and those that cap their second
_CAPS_FIRST = {"assertLess", "assertLessEqual"}
_CAPS_SECOND = {"assertGreater", "assertGreaterEqual"}
#: and those that bound an argument on both sides
_CAPS_BOTH = {"assertAlmostEqual", "assertNotAlmostEqual"}


class _Clocks:
    """What reads a clock in one file: the clock functions under the names the file
    imports them as (``from time import perf_counter as clock``, ``import time as t``),
    the event loop's ``time()``, ``datetime.now()``, and the file's own functions that
    return a duration; and, per function, the names that hold one: a name assigned (or
    appended to, or looped over) from an expression that reads a clock or another such
    name (``waited = time.monotonic() - t0``, ``took = clock() - t0``,
    ``durations.append(dt)``)."""

    def __init__(self, tree: ast.AST) -> None:
        self.modules = {"time": "time", "timeit": "timeit"}  # alias -> module
        self.functions: set[str] = set()  # clock functions imported by name
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name in _CLOCKS:
                        self.modules[a.asname or a.name] = a.name
            elif isinstance(node, ast.ImportFrom) and node.module in _CLOCKS:
                self.functions |= {a.asname or a.name for a in node.names
                                   if a.name in _CLOCKS[node.module]}
        self.returning: set[str] = set()  # the file's functions that return a duration

    def is_clock_call(self, node: ast.AST) -> bool:
        if not isinstance(node, ast.Call):
            return False
        f = node.func
        if isinstance(f, ast.Name):
            return f.id in self.functions or f.id in self.returning
        if not isinstance(f, ast.Attribute):
            return False
        if isinstance(f.value, ast.Name) and f.value.id in self.modules:
            return f.attr in _CLOCKS[self.modules[f.value.id]]
        owner = ast.unparse(f.value)
        return ((f.attr == "time" and "loop" in owner)
                or (f.attr in ("now", "utcnow") and owner.endswith("datetime"))
                or f.attr in self.returning)

    def reads(self, expr: ast.AST | None, names: set[str]) -> bool:
        """Whether ``expr`` reads a clock or a duration held in ``names``."""
        if expr is None:
            return False
        if _TIMING.search(ast.unparse(expr)):
            return True
        return any(self.is_clock_call(n) or (isinstance(n, ast.Name) and n.id in names)
                   for n in ast.walk(expr))

    def durations(self, nodes: list[ast.AST], names: set[str]) -> set[str]:
        """``names`` and the names assigned a duration in ``nodes`` (to a fixed point:
        ``t1 = clock(); dt = t1 - t0``)."""
        names = set(names)
        while True:
            before = len(names)
            for node in nodes:
                targets, value = [], None
                if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    value = node.value
                elif isinstance(node, ast.NamedExpr):
                    targets, value = [node.target], node.value
                elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                    targets, value = [node.target], node.iter
                elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                      and node.func.attr in ("append", "extend", "add", "insert")
                      and isinstance(node.func.value, ast.Name)):
                    targets, value = [node.func.value], ast.Tuple(node.args, ast.Load())
                if targets and self.reads(value, names):
                    names |= {n.id for t in targets for n in ast.walk(t)
                              if isinstance(n, ast.Name)}
            if len(names) == before:
                return names


def _scopes(tree: ast.AST) -> tuple[list[ast.AST], list[ast.AST]]:
    """The nodes outside every function, and the outermost functions (a nested function
    is scanned with the one it is in: it shares its names)."""
    outside, functions, stack = [], [], [tree]
    while stack:
        node = stack.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                functions.append(child)
            else:
                outside.append(child)
                stack.append(child)
    return outside, functions


def _is_approx(node: ast.AST) -> bool:
    return (isinstance(node, ast.Call)
            and ast.unparse(node.func).rsplit(".", 1)[-1] in ("approx", "isclose"))


def _bounds_a_duration(test: ast.expr, clocks: _Clocks, names: set[str]) -> bool:
    """Whether ``test`` caps a clock reading or a duration (``elapsed < 5``,
    ``5 > time.monotonic() - t0``, ``took == pytest.approx(1, abs=0.5)``,
    ``math.isclose(dt, 1)``): what a loaded machine breaks.  A floor (a request held back
    by an injected delay takes at least that long) is left alone."""
    for node in ast.walk(test):
        if (_is_approx(node) and ast.unparse(node.func).endswith("isclose")
                and clocks.reads(node, names)):
            return True
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        for left, op, right in zip(operands[:-1], node.ops, operands[1:], strict=True):
            if ((isinstance(op, (ast.Lt, ast.LtE)) and clocks.reads(left, names))
                    or (isinstance(op, (ast.Gt, ast.GtE)) and clocks.reads(right, names))
                    or (isinstance(op, (ast.Eq, ast.NotEq))
                        and ((_is_approx(left) and clocks.reads(right, names))
                             or (_is_approx(right) and clocks.reads(left, names))))):
                return True
    return False


def _unittest_cap(call: ast.Call, clocks: _Clocks, names: set[str]) -> bool:
    """Whether ``call`` is a unittest assertion capping a duration
    (``self.assertLess(took, 1)``, ``self.assertGreater(5, dt)``,
    ``self.assertEqual(dt, pytest.approx(1))``, ``self.assertTrue(dt < 1)``)."""
    if not isinstance(call.func, ast.Attribute):
        return False
    name, args = call.func.attr, call.args
    if name in _CAPS_FIRST and args:
        return clocks.reads(args[0], names)
    if name in _CAPS_SECOND and len(args) > 1:
        return clocks.reads(args[1], names)
    if name in _CAPS_BOTH:
        return any(clocks.reads(a, names) for a in args[:2])
    if name in ("assertEqual", "assertNotEqual") and len(args) > 1:
        return ((_is_approx(args[0]) and clocks.reads(args[1], names))
                or (_is_approx(args[1]) and clocks.reads(args[0], names)))
    if name in ("assertTrue", "assertFalse") and args:
        return _bounds_a_duration(args[0], clocks, names)
    return False


def _timing_asserts(path: Path, root: Path = TESTS) -> list[str]:
    """``path:line: test`` of each ``assert`` (or unittest assertion) whose condition (not
    its message) caps a clock reading or a duration, in the file and in the Python
    scripts it runs in children (string constants that parse as modules with an
    ``assert``)."""
    found = []

    def scan(tree: ast.AST, where: str, offset: int) -> None:
        clocks = _Clocks(tree)
        outside, functions = _scopes(tree)
        for _ in range(3):  # functions returning a duration make their callers' ones
            top = clocks.durations(outside, set())
            scoped = [(list(ast.walk(f)), clocks.durations(list(ast.walk(f)), top))
                      for f in functions]
            returning = {f.name for f, (_, names) in zip(functions, scoped, strict=True)
                         for r in ast.walk(f)
                         if isinstance(r, ast.Return) and clocks.reads(r.value, names)}
            if returning <= clocks.returning:
                break
            clocks.returning |= returning
        for nodes, names in [(outside, top), *scoped]:
            for node in nodes:
                if isinstance(node, ast.Assert):
                    if _bounds_a_duration(node.test, clocks, names):
                        found.append((node.lineno + offset, ast.unparse(node.test)))
                elif isinstance(node, ast.Call):
                    if _unittest_cap(node, clocks, names):
                        found.append((node.lineno + offset, ast.unparse(node)))
                elif (isinstance(node, ast.Constant) and isinstance(node.value, str)
                      and "assert" in node.value and "\n" in node.value):
                    try:
                        inner = ast.parse(textwrap.dedent(node.value))
                    except SyntaxError:
                        continue
                    scan(inner, where, node.lineno - 1 + offset)

    where = str(path.relative_to(root))
    scan(ast.parse(path.read_text(), str(path)), where, 0)
    return [f"{where}:{line}: {text}" for line, text in sorted(found)]


def test_no_test_asserts_on_time():
    """Before: ``test_bench.py`` asserted the CPU share of timed parts measured with real
    sleeps and busy loops, and six more tests asserted that a read, a resize, an interrupt
    or a retry finished within some seconds; on a loaded 2-core machine they failed.  A
    property is checked with counts, sizes or a clock the test drives itself instead."""
    offenders = [hit for path in sorted(TESTS.rglob("*.py"))
                 if "_helpers" not in path.parts and path != Path(__file__).resolve()
                 for hit in _timing_asserts(path)]
    assert offenders == [], "\n".join(offenders)


def test_the_timing_check_sees_a_timing_assertion(tmp_path):
    """The scan above is not vacuous: it finds a cap on a duration, in a test and in a
    child's script, and passes a duration used only in a message or as a floor."""
    src = tmp_path / "test_x.py"
    src.write_text(textwrap.dedent(
        '''
        import time
        def test_a():
            t0 = time.perf_counter()
            elapsed = time.perf_counter() - t0
            assert elapsed < 1
            assert True, elapsed
            assert elapsed >= 0.15  # (a floor: passes)
            assert 2 > elapsed
        SCRIPT = """
        import time
        t = time.monotonic()
        assert time.monotonic() - t < 5
        """
        '''))
    hits = [h.split(": ", 1)[1] for h in _timing_asserts(src, tmp_path)]
    assert hits == ["elapsed < 1", "2 > elapsed", "time.monotonic() - t < 5"]


#: each form of a cap on a duration the scan must see, as a snippet, with the hits it
#: finds (before this list, only the clock calls and a name ``elapsed`` were seen: of
#: these, ``0.4 < waited < 5`` in test_concurrent_writers.py went through)
_FORMS = {
    "a name assigned a duration": (
        """
        import time
        def test_a():
            t0 = time.monotonic()
            waited = time.monotonic() - t0
            assert 0.4 < waited < 5
            assert waited >= 0.4  # (a floor: passes)
        """, ["0.4 < waited < 5"]),
    "a clock imported under another name": (
        """
        from time import perf_counter as clock
        def test_a():
            t0 = clock()
            took = clock() - t0
            assert took < 1
        """, ["took < 1"]),
    "the time module under another name": (
        """
        import time as t
        def test_a():
            start = t.time()
            dt = t.time() - start
            assert 2.0 >= dt
        """, ["2.0 >= dt"]),
    "a duration made of two readings": (
        """
        import time
        def test_a():
            t0 = time.perf_counter()
            t1 = time.perf_counter()
            dt = t1 - t0
            assert dt <= 2.0
        """, ["dt <= 2.0"]),
    "durations collected in a list": (
        """
        import time
        def test_a():
            durations = []
            for _ in range(3):
                t0 = time.monotonic()
                durations.append(time.monotonic() - t0)
            assert max(durations) < 1
            assert all(d < 1 for d in durations)
        """, ["max(durations) < 1", "all((d < 1 for d in durations))"]),
    "unittest's assertions": (
        """
        import time, unittest
        class T(unittest.TestCase):
            def test_a(self):
                t0 = time.monotonic()
                took = time.monotonic() - t0
                self.assertLess(took, 3)
                self.assertLessEqual(time.monotonic() - t0, 3)
                self.assertGreater(5, took)
                self.assertGreaterEqual(took, 0.1)  # (a floor: passes)
                self.assertAlmostEqual(took, 1.0, delta=0.5)
                self.assertTrue(took < 3)
        """, ["self.assertLess(took, 3)", "self.assertLessEqual(time.monotonic() - t0, 3)",
              "self.assertGreater(5, took)", "self.assertAlmostEqual(took, 1.0, delta=0.5)",
              "self.assertTrue(took < 3)"]),
    "approx and isclose": (
        """
        import math, time, pytest
        def test_a():
            t0 = time.monotonic()
            waited = time.monotonic() - t0
            assert waited == pytest.approx(1.0, abs=0.5)
            assert math.isclose(waited, 1.0, abs_tol=0.5)
        """, ["waited == pytest.approx(1.0, abs=0.5)",
              "math.isclose(waited, 1.0, abs_tol=0.5)"]),
    "a helper returning a duration": (
        """
        import time
        def timed(f):
            t0 = time.monotonic()
            f()
            return time.monotonic() - t0
        def test_a():
            took = timed(print)
            assert took < 1
        """, ["took < 1"]),
    "the event loop's clock": (
        """
        import asyncio
        async def test_a():
            loop = asyncio.get_running_loop()
            t0 = loop.time()
            await asyncio.sleep(0)
            dt = loop.time() - t0
            assert dt < 1
        """, ["dt < 1"]),
    "a name that holds no duration in another test": (
        """
        import time
        def test_a():
            t0 = time.monotonic()
            dt = time.monotonic() - t0
            assert dt >= 0
        def test_b():
            dt = 3  # (a count here)
            assert dt < 5
        """, []),
}


@pytest.mark.parametrize("form", list(_FORMS))
def test_the_timing_check_sees_each_form_of_a_cap(tmp_path, form):
    """Before: the scan saw none of these caps (it knew only clock calls and ``elapsed``);
    each snippet's hits are its caps, and its floors pass."""
    code, want = _FORMS[form]
    src = tmp_path / "test_x.py"
    src.write_text(textwrap.dedent(code))
    assert [h.split(": ", 1)[1] for h in _timing_asserts(src, tmp_path)] == want
