# Stub for the compiled module built from src_ext/_encode.pyx.
import numpy as np

from zarrfast._ext._buffer import Buffer

MIN_ZSTD_VERSION: int
MAX_NBYTES: int  # the largest chunk compressed
CODECS: tuple[str, ...]  # ("zstd", "gzip", "zlib")

def bind_zstd(
    create_cctx: int, free_cctx: int, set_parameter: int, compress2: int,
    compress_bound: int, is_error: int, version: int,  # function addresses; all 0 unbinds
) -> int: ...  # the library's version number
def linked_zstd() -> tuple[int, ...] | None: ...  # bind_zstd's addresses, linked at build time
def bind_zlib(
    deflate_init2: int, deflate: int, deflate_end: int, deflate_reset: int,
    deflate_bound: int, crc32: int, zlib_version: int,  # function addresses; all 0 unbinds
) -> str: ...  # the library's version
def bound() -> frozenset[str]: ...  # the formats ChunkEncoder can make now

class ChunkEncoder:
    codec: str  # "zstd", "gzip" or "zlib"
    level: int
    checksum: bool
    def __init__(self, codec: str, level: int, checksum: bool = False) -> None: ...
    def slot(self, nbytes: int) -> int: ...  # the most bytes a chunk compresses to
    def compress(self, src: Buffer) -> bytes: ...  # const uint8_t[::1]
    def compress_regions(
        self,
        src: Buffer,  # const uint8_t[::1], the value
        src_offsets: Buffer,  # const int64_t[::1], one region (a whole chunk) each
        src_strides: Buffer,  # const int64_t[::1]
        dst_strides: Buffer,  # const int64_t[::1], the chunk's stored layout
        shape: Buffer,  # const int64_t[::1], the chunk's shape
        itemsize: int,
        swap_unit: int,  # 1, 2, 4 or 8
        fill: Buffer | None,  # const uint8_t[::1], one item: such chunks are skipped
        scratch: Buffer,  # uint8_t[::1], at least one chunk
        out: Buffer,  # uint8_t[::1], slot(nbytes) bytes per region
        packed: bool = False,  # each chunk's bytes right after the previous one's
    ) -> np.ndarray: ...  # int64 compressed size per region, -1 for a fill chunk
