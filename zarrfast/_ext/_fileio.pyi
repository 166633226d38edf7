# Stub for the compiled module built from src_ext/_fileio.pyx (POSIX only).
from collections.abc import Buffer

import numpy as np

def read_files_into(
    paths: list[bytes],  # file-system encoded paths
    dst: Buffer,  # uint8_t[::1]
    offsets: Buffer,  # const int64_t[::1], one per path
    nbytes: int,  # expected size of every file
) -> tuple[np.ndarray, np.ndarray]: ...  # sizes (-1: not opened), errno per file
