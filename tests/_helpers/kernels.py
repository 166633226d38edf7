"""What the kernel tests share: the compiled kernels (``ext``, ``None`` when not built),
the implementations to parametrize over, hypothesis settings, result comparison and the
strategies for shapes, strides and buffers."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st

from zarrfast.kernels import reference as ref

try:
    from zarrfast._ext import _assemble, _indexing, _shard_index
except ImportError:  # pragma: no cover - the extension-less CI job
    ext = None
else:
    ext = SimpleNamespace(
        copy_region=_assemble.copy_region,
        copy_regions=_assemble.copy_regions,
        fill_region=_assemble.fill_region,
        is_uniform=_assemble.is_uniform,
        transpose=_assemble.transpose,
        byteswap_inplace=_assemble.byteswap_inplace,
        byteswap_copy=_assemble.byteswap_copy,
        project=_indexing.project,
        box_table=_indexing.box_table,
        format_chunk_keys=_indexing.format_chunk_keys,
        group_by_chunk=_indexing.group_by_chunk,
        normalize_plain=_indexing.normalize_plain,
        check_index=_shard_index.check_index,
    )
try:
    from zarrfast._ext import _fileio
except ImportError:  # pragma: no cover - not built on this platform
    _fileio = None
if ext is not None and _fileio is not None:
    ext.read_files_into = _fileio.read_files_into

IMPLS = [pytest.param(ref, id="reference")]
if ext is not None:
    IMPLS.append(pytest.param(ext, id="compiled"))

PROPS = settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

I64 = np.int64
INT64_MAX = 2**63 - 1


def i64(*values) -> np.ndarray:
    return np.array(values, dtype=I64)


def outcome(fn, *args):
    """Run ``fn``; return ``("ok", result)`` or ``("raised", exception type)``."""
    try:
        return "ok", fn(*args)
    except (ValueError, TypeError, OverflowError, BufferError) as exc:
        return "raised", type(exc)


def assert_same_result(a, b):
    assert type(a) is type(b)
    if isinstance(a, tuple):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            assert_same_result(x, y)
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)
    else:
        assert a == b


def run_both(name, make_args, outputs=()):
    """Call ``ext.<name>`` and ``ref.<name>`` on fresh copies of the arguments.

    ``make_args()`` returns a new argument list each time; ``outputs`` are the
    positions of buffers the kernel writes. Returns the reference outcome and
    arguments (for further checks against NumPy semantics).
    """
    args_r = make_args()
    got_r = outcome(getattr(ref, name), *args_r)
    event(f"{name}: {got_r[0]}")
    if ext is not None:
        args_c = make_args()
        got_c = outcome(getattr(ext, name), *args_c)
        assert got_c[0] == got_r[0], (name, got_c, got_r)
        if got_r[0] == "raised":
            assert got_c[1] is got_r[1], (name, got_c, got_r)
        else:
            assert_same_result(got_c[1], got_r[1])
        for pos in outputs:
            assert bytes(args_c[pos]) == bytes(args_r[pos]), f"{name}: output {pos} differs"
    return got_r, args_r


def rng_bytes(seed: int, n: int) -> bytes:
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8).tobytes()


# ---------------------------------------------------------------------------
# strategies
# ---------------------------------------------------------------------------

ITEMSIZES = st.sampled_from([1, 2, 4, 8, 16, 3, 12])


@st.composite
def region_shapes(draw, max_ndim=4, max_dim=5):
    ndim = draw(st.integers(0, max_ndim))
    shape = [draw(st.integers(1, max_dim)) for _ in range(ndim)]
    if ndim and draw(st.integers(0, 11)) == 0:
        shape[draw(st.integers(0, ndim - 1))] = 0
    return shape


@st.composite
def dense_strides(draw, shape, itemsize, allow_zero=False):
    """Strides of a permuted, padded, sign-flipped C layout (items never alias)."""
    ndim = len(shape)
    order = draw(st.permutations(range(ndim)))
    strides = [0] * ndim
    step = itemsize * draw(st.integers(1, 2))
    for d in reversed(order):
        strides[d] = step
        step = step * max(shape[d], 1) + draw(st.sampled_from([0, 0, 1, itemsize]))
    for d in range(ndim):
        if draw(st.booleans()):
            strides[d] = -strides[d]
        if allow_zero and draw(st.integers(0, 5)) == 0:
            strides[d] = 0
    return strides


@st.composite
def any_strides(draw, shape, itemsize):
    """Arbitrary byte strides: overlapping, unaligned, zero or negative."""
    if draw(st.booleans()):
        return draw(dense_strides(shape, itemsize, allow_zero=True))
    span = 3 * itemsize * 6
    return [draw(st.integers(-span, span)) for _ in shape]


def span_of(shape, strides, itemsize):
    """(lowest, highest + 1) byte touched relative to item (0, ..., 0)."""
    if 0 in shape:
        return 0, 0
    lo = sum((n - 1) * s for n, s in zip(shape, strides, strict=True) if s < 0)
    hi = sum((n - 1) * s for n, s in zip(shape, strides, strict=True) if s > 0)
    return lo, hi + itemsize


@st.composite
def placed_buffer(draw, shape, strides, itemsize):
    """A buffer size and offset containing the region, sometimes nudged out of bounds."""
    lo, hi = span_of(shape, strides, itemsize)
    pad_lo = draw(st.integers(0, 3))
    pad_hi = draw(st.integers(0, 3))
    offset = pad_lo - lo
    size = pad_lo + (hi - lo) + pad_hi
    if draw(st.integers(0, 7)) == 0:  # perturb: often out of bounds
        offset += draw(st.integers(-4, 4))
        size = max(0, size + draw(st.integers(-4, 1)))
    return offset, size


def names_checked_first(fn):
    """The file-writing kernel ``fn`` with ``renameat2(RENAME_NOREPLACE)`` off: every
    name looked at before its rename, as on systems without it."""
    from zarrfast._ext import _fileio

    def call(*args, **kwargs):
        before = _fileio.use_renameat2(False)
        try:
            return fn(*args, **kwargs)
        finally:
            _fileio.use_renameat2(before)
    return call
