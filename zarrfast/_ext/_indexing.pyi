# Stub for the compiled module built from src_ext/_indexing.pyx.
# Buffers: const int64_t[::1] (np.int64 arrays, not lists); coords = const int64_t[:, ::1].
import numpy as np
import numpy.typing as npt

from zarrfast._ext._buffer import Buffer

def project(
    shape: Buffer,  # const int64_t[::1]
    chunk_shape: Buffer,  # const int64_t[::1], >= 1
    start: Buffer,  # const int64_t[::1]
    step: Buffer,  # const int64_t[::1], non-zero, any sign
    count: Buffer,  # const int64_t[::1], >= 0
) -> tuple[
    npt.NDArray[np.int64],  # chunk_coords (rows, ndim)
    npt.NDArray[np.int64],  # local_start (rows, ndim)
    npt.NDArray[np.int64],  # local_count (rows, ndim)
    npt.NDArray[np.int64],  # out_start (rows, ndim)
    npt.NDArray[np.bool_],  # complete (rows,)
]: ...
def box_table(
    start: Buffer,  # const int64_t[::1], >= 0
    count: Buffer,  # const int64_t[::1], >= 1
    chunk_shape: Buffer,  # const int64_t[::1], >= 1
    cps: Buffer,  # const int64_t[::1], chunks per shard, >= 1
    chunk_strides: Buffer,  # const int64_t[::1], bytes
    out_strides: Buffer,  # const int64_t[::1], bytes
) -> tuple[
    npt.NDArray[np.int64],  # shards (m, ndim), C order
    npt.NDArray[np.int64],  # bounds (m + 1,): rows of shard g are bounds[g]:bounds[g + 1]
    npt.NDArray[np.int64],  # inner (rows,): C-order index in the shard
    npt.NDArray[np.int64],  # src_offsets (rows,)
    npt.NDArray[np.int64],  # dst_offsets (rows,)
    npt.NDArray[np.int64],  # shapes (rows, ndim)
]: ...
def format_chunk_keys(
    coords: Buffer,  # const int64_t[:, ::1], non-negative
    prefix: str,
    separator: str,
) -> list[str]: ...
def group_by_chunk(
    ids: Buffer,  # const int64_t[::1], each in [0, nchunks)
    nchunks: int,
) -> tuple[
    npt.NDArray[np.int64],  # order: positions grouped by id (stable)
    npt.NDArray[np.int64],  # chunk_ids: distinct ids, ascending
    npt.NDArray[np.int64],  # starts: len(chunk_ids) + 1 group boundaries into order
]: ...
def normalize_plain(
    selection: object,  # an int, a slice, or a tuple of them (else None)
    shape: tuple[int, ...],
) -> (
    tuple[
        npt.NDArray[np.int64],  # start (ndim,)
        npt.NDArray[np.int64],  # step (ndim,)
        npt.NDArray[np.int64],  # count (ndim,)
        tuple[bool, ...],  # dropped: an int removed the dim
    ]
    | None
): ...
