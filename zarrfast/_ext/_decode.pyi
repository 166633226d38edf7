# Stub for the compiled module built from src_ext/_decode.pyx.
# Buffers: const uint8_t[::1] inputs, uint8_t[::1] (writable) outputs;
#          offsets/strides/shapes = const int64_t[::1] (np.int64 arrays, not lists), in bytes.
# Twins: zarrfast.kernels.reference (ChunkDecoder, Placement, ShardFiles, crc32c, blosc_*).
import numpy as np

from zarrfast._ext._buffer import Buffer

#: decode statuses (int8)
DECODED: int  # placed
NO_DATA: int  # no stored chunk (a negative size, no file, no shard): nothing done
FAILED: int  # does not decode to the chunk's size, or cannot be read: not placed
MIN_ZSTD_VERSION: int
BLOSC_MAX_OVERHEAD: int
BLOSC_MAX_BUFFERSIZE: int

# -- binding the codec libraries (addresses of their C functions) -------------------
def bind_zstd(create: int, free: int, decompress: int, is_error: int, content_size: int,
              version: int) -> int: ...  # the zstd version number
def bind_blosc(validate: int, decompress_ctx: int, compress_ctx: int, version: str,
               getitem: int = 0) -> None: ...
def bind_lz4_compress(compress_ext_state: int, sizeof_state: int) -> None: ...
def bind_lz4_decompress(decompress_safe: int) -> None: ...  # 0 unbinds
def use_linked_lz4(use: bool) -> None: ...
def linked_zstd() -> tuple[int, int, int, int, int, int] | None: ...  # bind_zstd's arguments
def linked_blosc() -> tuple[int, int, str, int] | None: ...  # validate, decompress, version, getitem
def linked_lz4() -> int | None: ...
def bind_libdeflate(alloc: int, free_: int, gzip_ex: int, zlib_ex: int) -> None: ...
def bind_zlib_inflate(init2: int, inflate: int, end: int, reset2: int,
                      version: int) -> str: ...  # zlib's version
def bound() -> frozenset[str]: ...  # of "zstd", "blosc", "gzip", "zlib"
def blosc_partial_bound() -> bool: ...
def blosc_compress_bound() -> bool: ...

# -- settings (tests and benchmarks) ------------------------------------------------
def stream_threshold(nbytes: int = -1) -> int: ...  # the previous setting
def set_blosc_frames(isa: str) -> str: ...  # "auto", "c-blosc", "scalar", "avx2"
def blosc_frames() -> str: ...
def blosc_encoder() -> str: ...
def set_inflate(which: str) -> str: ...  # "libdeflate", "zlib", "none"; the previous one
def inflate_with() -> str: ...
def helper_jobs() -> tuple[int, int, int]: ...  # jobs joined, rows decoded, rows read (I/O helper)
def helper_threads() -> int: ...
def cold_announcements() -> int: ...  # calls that found a chunk not in the page cache

# -- blosc frames and filters -------------------------------------------------------
def blosc_compress(
    src: Buffer,  # const uint8_t[::1]
    clevel: int,
    shuffle: int,  # 0, 1 (byte), 2 (bit)
    typesize: int,
    cname: bytes,
    blocksize: int,
) -> bytes: ...
def blosc_compress_regions(
    src: Buffer,  # const uint8_t[::1]
    src_offsets: Buffer,  # const int64_t[::1], one per chunk
    src_strides: Buffer,  # const int64_t[::1]
    dst_strides: Buffer,  # const int64_t[::1], the chunk's layout in scratch
    shape: Buffer,  # const int64_t[::1], a whole chunk
    itemsize: int,
    swap_unit: int,
    fill: Buffer | None,  # one item, or None
    scratch: Buffer,  # uint8_t[::1], at least one chunk
    out: Buffer,  # uint8_t[::1], n * (nbytes + BLOSC_MAX_OVERHEAD)
    clevel: int,
    shuffle: int,
    typesize: int,
    cname: bytes,
    blocksize: int,
) -> np.ndarray: ...  # int64 compressed sizes, -1: equal to fill
def blosc_decode_frame(frame: Buffer, target: Buffer, lo: int = 0,
                       hi: int = -1) -> int: ...  # nbytes, or -1: left to c-blosc
def blosc_shuffle(src: Buffer, dst: Buffer, ts: int, isa: str = "scalar") -> None: ...
def blosc_unshuffle(src: Buffer, dst: Buffer, ts: int, isa: str = "scalar") -> None: ...
def blosc_bitshuffle(src: Buffer, dst: Buffer, ts: int, isa: str = "scalar") -> None: ...
def blosc_bitunshuffle(src: Buffer, dst: Buffer, ts: int, isa: str = "scalar") -> None: ...
def crc32c(data: Buffer) -> int: ...

# -- where decoded chunks go, checked once ------------------------------------------
class Placement:
    nbytes: int  # a decoded chunk's bytes
    n: int  # rows
    ndim: int
    itemsize: int
    swap_unit: int
    nshards: int  # a box's (Placement.box), else 0
    n_inner: int  # chunks per shard of a box's, else 0
    def __init__(
        self,
        nbytes: int,
        chunk_offsets: Buffer,  # const int64_t[::1], one per row, in the decoded chunk
        chunk_strides: Buffer,  # const int64_t[::1], the decoded chunk's, any sign
        dst: Buffer,  # uint8_t[::1]
        dst_offsets: Buffer,  # const int64_t[::1], one per row
        dst_strides: Buffer,  # const int64_t[::1], non-zero where a shape > 1
        shapes: Buffer,  # const int64_t[:, ::1], (rows, rank)
        itemsize: int,
        swap_unit: int,  # 1, 2, 4 or 8, dividing itemsize
        direct: Buffer,  # const uint8_t[::1], one per row: decode straight into dst
    ) -> None: ...
    @staticmethod
    def box(
        nbytes: int,
        start: Buffer,  # const int64_t[::1], a step-1 box
        count: Buffer,  # const int64_t[::1]
        chunk_shape: Buffer,  # const int64_t[::1]
        chunk_strides: Buffer,  # const int64_t[::1]
        dst: Buffer,  # uint8_t[::1], the box at dst_strides from 0
        dst_strides: Buffer,  # const int64_t[::1]
        itemsize: int,
        swap_unit: int,
        cps: Buffer | None = None,  # const int64_t[::1], chunks per shard (None: all 1)
        direct: bool = True,
    ) -> Placement: ...
    def part(self, lo: int, hi: int) -> Placement: ...
    def take(self, rows: Buffer) -> Placement: ...  # const int64_t[::1]
    @property
    def direct(self) -> np.ndarray: ...  # uint8 copy of each row's flag
    def __len__(self) -> int: ...

class ChunkDecoder:
    nbytes: int
    def __init__(self, codec: str, nbytes: int) -> None: ...  # "zstd", "blosc", "gzip", "zlib", "none"
    def decode_regions(
        self,
        src: Buffer,  # const uint8_t[::1]
        src_offsets: Buffer,  # const int64_t[::1], one per row
        src_sizes: Buffer,  # const int64_t[::1], negative: NO_DATA
        placement: Placement,
        share: int = 0,  # helper threads that may take rows
    ) -> np.ndarray: ...  # int8 statuses
    def decode_ranges(
        self,
        fds: Buffer,  # const int64_t[::1], open files
        offsets: Buffer,  # const int64_t[::1]
        sizes: Buffer,  # const int64_t[::1], negative: NO_DATA
        placement: Placement,
        share: int = 0,
    ) -> tuple[np.ndarray, np.ndarray]: ...  # statuses, errno per row
    def decode_files(
        self,
        paths: list[bytes],
        placement: Placement,
        root: bytes | None = None,  # paths relative to it, no links followed
        share: int = 0,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]: ...  # statuses, sizes, errno
    def decode_box_files(
        self,
        root: bytes,
        prefix: bytes,
        separator: bytes,
        placement: Placement,  # Placement.box without cps
        share: int = 0,
    ) -> np.ndarray | None: ...  # None: every chunk placed
    def decode_box_shards(
        self,
        fds: Buffer,  # const int64_t[::1], one per shard (< 0: none)
        indexes: list[np.ndarray | None],  # (n_inner, 2) uint64 each
        placement: Placement,  # Placement.box with cps
        fill: Buffer,  # const uint8_t[::1], one item
        limit: int,
        share: int = 0,
    ) -> np.ndarray | None: ...  # None unless a row FAILED

class ShardFiles:
    nbytes: int
    n_inner: int
    index_nbytes: int
    limit: int
    keep: int
    at_end: bool
    checksum: bool
    def __init__(
        self,
        paths: list[bytes],  # one file per shard
        root: bytes | None,
        rows: Buffer,  # const int64_t[::1], rows grouped by shard
        bounds: Buffer,  # const int64_t[::1], shards + 1
        inner: Buffer,  # const int64_t[::1], each row's inner chunk
        n_inner: int,
        index_nbytes: int,
        at_end: bool,
        checksum: bool,
        limit: int,
        keep: int,
        placement: Placement,
        fill: bytes,  # one item as stored
    ) -> None: ...
    def read(self, decoder: ChunkDecoder, g: int, index_out: np.ndarray | None = None
             ) -> int: ...
    def run(self, decoder: ChunkDecoder, todo: Buffer, status: Buffer, cursor: Buffer,
            max_shards: int, indexes: np.ndarray | None = None) -> int: ...
    def stamp(self, g: int) -> tuple[int, int, int, int] | None: ...
