"""The LZ4 a blosc frame is undone with is chosen once per frame (issue 41, class 10).

``_decode`` undoes blosc frames of LZ4 blocks itself, with the LZ4 linked at build time
(``use_linked_lz4``) or the ``LZ4_decompress_safe`` of numcodecs' c-blosc
(``bind_lz4_decompress``, whose docstring says "0 unbinds it").  Both are public and may
be called while another thread decodes a frame without the GIL: the frame must keep
the function it started with, not look the choice up again for every stream and call
a NULL function when the choice changed meanwhile.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from _helpers.decode import needs_blosc

#: decodes one LZ4 frame of 4096 streams a fixed number of times while another thread
#: keeps unbinding and rebinding numcodecs' LZ4 and switching the linked one off and on
#: (nothing bound and the linked LZ4 unused: no LZ4 at all), then prints what each
#: decode returned: the frame's size (decoded here, bytes checked) or -1 (c-blosc's).
_RACE = textwrap.dedent(
    """
    import ctypes, json, threading
    import numpy as np
    import numcodecs.blosc as blosc
    import zarrfast.kernels  # noqa: F401  (binds numcodecs' LZ4 at import)
    from zarrfast._ext import _decode

    lib = ctypes.CDLL(blosc.__file__)
    if not hasattr(lib, "LZ4_decompress_safe"):
        print(json.dumps({"skip": "numcodecs' c-blosc exports no LZ4_decompress_safe"}))
        raise SystemExit(0)
    addr = ctypes.cast(lib.LZ4_decompress_safe, ctypes.c_void_p).value
    data = np.random.default_rng(0).integers(0, 4, 16 << 20, dtype=np.uint8).tobytes()
    frame = np.frombuffer(bytes(blosc.compress(data, b"lz4", 5, 0, 1, 4096)), np.uint8)
    _decode.set_blosc_frames("scalar")
    target = np.zeros(len(data), np.uint8)
    out = {"first": _decode.blosc_decode_frame(frame, target)}
    out["first equal"] = target.tobytes() == data
    stop = threading.Event()

    def flip():
        while not stop.is_set():
            _decode.bind_lz4_decompress(0)
            _decode.use_linked_lz4(False)  # (no LZ4 at all now)
            _decode.use_linked_lz4(True)
            _decode.bind_lz4_decompress(addr)
            _decode.use_linked_lz4(False)
            _decode.use_linked_lz4(True)

    t = threading.Thread(target=flip)
    t.start()
    results, wrong = [], 0
    try:
        for _ in range(40):
            target[:] = 0
            got = _decode.blosc_decode_frame(frame, target)
            results.append(got)
            wrong += got == len(data) and target.tobytes() != data
    finally:
        stop.set()
        t.join()
    out["results"] = sorted(set(results))
    out["wrong"] = int(wrong)
    out["size"] = len(data)
    print(json.dumps(out))
    """
)


@needs_blosc
def test_unbinding_lz4_while_frames_decode_never_calls_a_null_function(subprocess_cwd):
    """Before: the child died of SIGSEGV (return code -11) on its first decodes: the
    frame checked once that an LZ4 was there, then read the globals again for each of
    its 4096 streams and called ``_lz4_found`` after ``bind_lz4_decompress(0)``.  Now
    every decode returns the frame's size with the right bytes, or -1 (no LZ4 when it
    started: the caller gives the frame to c-blosc)."""
    proc = subprocess.run([sys.executable, "-c", _RACE], cwd=subprocess_cwd,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    if "skip" in got:
        pytest.skip(got["skip"])
    assert got["first"] == got["size"] and got["first equal"], got
    assert set(got["results"]) <= {got["size"], -1}, got
    assert got["wrong"] == 0, got
