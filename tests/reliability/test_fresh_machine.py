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

#: what a timing assertion reads: a clock, or a duration measured with one
_TIMING = re.compile(r"perf_counter|monotonic|process_time|thread_time|time\.time\(|"
                     r"\belapsed\b|[\"']elapsed[\"']")


def _bounds_a_duration(test: ast.expr) -> bool:
    """Whether ``test`` caps a clock reading or a duration (``elapsed < 5``,
    ``5 > time.monotonic() - t0``): what a loaded machine breaks.  A floor (a request
    held back by an injected delay takes at least that long) is left alone."""
    for node in ast.walk(test):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        for left, op, right in zip(operands[:-1], node.ops, operands[1:], strict=True):
            if ((isinstance(op, (ast.Lt, ast.LtE)) and _TIMING.search(ast.unparse(left)))
                    or (isinstance(op, (ast.Gt, ast.GtE))
                        and _TIMING.search(ast.unparse(right)))):
                return True
    return False


def _timing_asserts(path: Path, root: Path = TESTS) -> list[str]:
    """``path:line: test`` of each ``assert`` whose condition (not its message) caps a
    clock reading or a duration, in the file and in the Python scripts it runs in
    children (string constants that parse as modules with an ``assert``)."""
    found = []

    def scan(tree: ast.AST, where: str, offset: int) -> None:
        for node in ast.walk(tree):
            if isinstance(node, ast.Assert) and _bounds_a_duration(node.test):
                found.append(f"{where}:{node.lineno + offset}: {ast.unparse(node.test)}")
            elif (isinstance(node, ast.Constant) and isinstance(node.value, str)
                  and "assert" in node.value and "\n" in node.value):
                try:
                    inner = ast.parse(textwrap.dedent(node.value))
                except SyntaxError:
                    continue
                scan(inner, where, node.lineno - 1 + offset)

    scan(ast.parse(path.read_text(), str(path)), str(path.relative_to(root)), 0)
    return found


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

