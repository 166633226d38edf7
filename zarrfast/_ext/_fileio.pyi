# Stub for the compiled module built from src_ext/_fileio.pyx (POSIX only).
from collections.abc import Buffer

import numpy as np

def read_files_into(
    paths: list[bytes],  # file-system encoded paths
    dst: Buffer,  # uint8_t[::1]
    offsets: Buffer,  # const int64_t[::1], one per path
    nbytes: int,  # expected size of every file
) -> tuple[np.ndarray, np.ndarray]: ...  # sizes (-1: not opened), errno per file

class PageBuffer:
    nbytes: int
    def __init__(self, size: int, keep: int = 0) -> None: ...
    def __buffer__(self, flags: int, /) -> memoryview: ...

def kept_pages() -> tuple[int, int]: ...  # mappings and bytes kept for reuse
def release_kept_pages(limit: int = 0) -> None: ...
