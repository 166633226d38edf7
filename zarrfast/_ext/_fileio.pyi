# Stub for the compiled module built from src_ext/_fileio.pyx (POSIX only).
import numpy as np

from zarrfast._ext._buffer import Buffer

def read_files_into(
    paths: list[bytes],  # file-system encoded paths
    dst: Buffer,  # uint8_t[::1]
    offsets: Buffer,  # const int64_t[::1], one per path
    nbytes: int,  # expected size of every file
) -> tuple[np.ndarray, np.ndarray]: ...  # sizes (-1: not opened), errno per file

def write_files(
    dir_fds: Buffer,  # const int64_t[::1], an open directory per file
    tmp_names: list[bytes],  # one path component each
    names: list[bytes],
    values: list[Buffer],  # C-contiguous
    refuse_links: bool = True,
) -> np.ndarray: ...  # int64 errno per file (0: written)

def write_region_files(
    dir_fds: Buffer,  # const int64_t[::1]
    tmp_names: list[bytes],
    names: list[bytes],
    src: Buffer,  # const uint8_t[::1]
    src_offsets: Buffer,  # const int64_t[:, ::1], the regions of each file
    src_strides: Buffer,  # const int64_t[::1], the last one the itemsize
    shape: Buffer,  # const int64_t[::1]
    itemsize: int,
    fill: Buffer | None = None,  # one item: a file with a region all of it is not written
    extra: Buffer | None = None,  # written after the regions (before with extra_first)
    extra_first: bool = False,
    refuse_links: bool = True,
) -> np.ndarray: ...  # int64 per file: 0 written, -1 a region of fill, else errno

class PageBuffer:
    nbytes: int
    def __init__(self, size: int, keep: int = 0, huge: bool = True) -> None: ...
    def __buffer__(self, flags: int, /) -> memoryview: ...

def kept_pages() -> tuple[int, int]: ...  # mappings and bytes kept for reuse
def release_kept_pages(limit: int = 0) -> None: ...

def open_nolinks(
    dirfd: int,  # an open directory
    path: bytes,  # relative to it; no symbolic link is followed (ELOOP), nor left (EXDEV)
    flags: int,
    mode: int = 0o666,
) -> int: ...  # the open file descriptor
def use_openat2(on: bool) -> bool: ...  # the previous setting (tests)
def use_renameat2(on: bool) -> bool: ...  # the previous setting (tests)
