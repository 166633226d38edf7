"""Build the Cython kernels of zarrfast (metadata lives in pyproject.toml).

Environment:
    ZARRFAST_DEBUG_BUILD=1  bounds/wraparound/initialised checks on, ``-O0 -g``.
    ZARRFAST_LINK_CODECS    how the batched decoder gets zstd, c-blosc and LZ4 (the blocks
                            of the blosc frames it undoes itself): ``auto`` (the
                            default) links each library found, ``require`` fails the build
                            when one is missing (wheels), ``0`` links none (then
                            zarrfast finds numcodecs' zstd and c-blosc with ctypes at
                            import; blosc frames of LZ4 or zstd blocks are still decoded
                            by zarrfast, with the LZ4 and zstd of numcodecs' copies).
    ZARRFAST_ZSTD_ROOT, ZARRFAST_BLOSC_ROOT, ZARRFAST_LZ4_ROOT
                            a prefix holding ``include/`` and ``lib/`` of the library;
                            otherwise ``pkg-config`` (``libzstd``, ``blosc``, ``liblz4``)
                            finds it.

The kernels use typed memoryviews only, so NumPy's C headers are not needed.
"""

import os
import shlex
import subprocess
import sys

from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

DEBUG = os.environ.get("ZARRFAST_DEBUG_BUILD") == "1"

LINK_CODECS = os.environ.get("ZARRFAST_LINK_CODECS", "auto")
if LINK_CODECS not in ("auto", "require", "0"):
    sys.exit(f"ZARRFAST_LINK_CODECS must be auto, require or 0, got {LINK_CODECS!r}")


def codec_library(macro, package, library, root_variable):
    """The build settings that link one codec library into _decode, or ``None``."""
    if LINK_CODECS == "0":
        return None
    root = os.environ.get(root_variable)
    if root:
        lib = os.path.join(root, "lib")
        return {"define_macros": [(macro, "1")], "include_dirs": [os.path.join(root, "include")],
                "library_dirs": [lib], "libraries": [library],
                "runtime_library_dirs": [lib] if os.name == "posix" else []}
    try:
        flags = subprocess.run(["pkg-config", "--cflags", "--libs", package], check=True,
                               capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        if LINK_CODECS == "require":
            sys.exit(f"ZARRFAST_LINK_CODECS=require: pkg-config finds no {package} "
                     f"(install its development package or set {root_variable})")
        print(f"zarrfast: {package} not found by pkg-config: the batched decoder will look "
              f"for numcodecs' copy at import", file=sys.stderr)
        return None
    settings = {"define_macros": [(macro, "1")], "include_dirs": [], "library_dirs": [],
                "libraries": []}
    for flag in shlex.split(flags):
        for prefix, key in (("-I", "include_dirs"), ("-L", "library_dirs"), ("-l", "libraries")):
            if flag.startswith(prefix):
                settings[key].append(flag[2:])
    return settings


def decode_extension():
    """_decode, linked with zstd, c-blosc and LZ4 where they are found."""
    settings = {"define_macros": [], "include_dirs": [], "library_dirs": [], "libraries": [],
                "runtime_library_dirs": []}
    for found in (codec_library("ZF_LINK_ZSTD", "libzstd", "zstd", "ZARRFAST_ZSTD_ROOT"),
                  codec_library("ZF_LINK_BLOSC", "blosc", "blosc", "ZARRFAST_BLOSC_ROOT"),
                  codec_library("ZF_LINK_LZ4", "liblz4", "lz4", "ZARRFAST_LZ4_ROOT")):
        for key, values in (found or {}).items():
            settings[key] += values
    return Extension("zarrfast._ext._decode", ["src_ext/_decode.pyx"], **settings)


def encode_extension():
    """_encode, linked with zstd where it is found (its compression functions are used
    only where numcodecs' zstd does not export them: see zarrfast.kernels)."""
    settings = {"define_macros": [], "include_dirs": [], "library_dirs": [], "libraries": [],
                "runtime_library_dirs": []}
    for key, values in (codec_library("ZF_LINK_ZSTD", "libzstd", "zstd",
                                      "ZARRFAST_ZSTD_ROOT") or {}).items():
        settings[key] += values
    return Extension("zarrfast._ext._encode", ["src_ext/_encode.pyx"], **settings)


EXTENSIONS = [
    Extension("zarrfast._ext._assemble", ["src_ext/_assemble.pyx"]),
    Extension("zarrfast._ext._indexing", ["src_ext/_indexing.pyx"]),
    Extension("zarrfast._ext._shard_index", ["src_ext/_shard_index.pyx"]),
    Extension("zarrfast._ext._downsample", ["src_ext/_downsample.pyx"]),
    # zstd by the addresses of numcodecs' copy (bound at import), so never linked
    # (its file reads include zf_files.h from src_ext)
    Extension("zarrfast._ext._zstd_prefix", ["src_ext/_zstd_prefix.pyx"],
              include_dirs=["src_ext"]),
    decode_extension(),
    encode_extension(),
]
if os.name == "posix":  # open/pread/fstat; elsewhere the NumPy twin reads the files
    EXTENSIONS.append(Extension("zarrfast._ext._fileio", ["src_ext/_fileio.pyx"]))

DIRECTIVES = {
    "language_level": 3,
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
    "cdivision": True,
    # Safe without the GIL (free-threaded CPython, 3.14t): the kernels keep no shared
    # mutable state.  Their inputs and outputs are the caller's buffers (tasks write
    # disjoint regions); a ChunkDecoder's context and scratch buffers belong to one
    # thread (the engine keeps one per thread); _decode's codec function pointers are
    # written once, by zarrfast.kernels at import (under the import lock), then only read.
    "freethreading_compatible": True,
}

# Compilers that take GCC-style flags (gcc, clang, mingw); MSVC keeps its defaults (/Ox).
_GCC_LIKE = {"unix", "mingw32", "cygwin"}


class BuildExt(build_ext):
    """Add optimisation (or debug) flags once the compiler type is known."""

    def finalize_options(self):
        super().finalize_options()
        if not self.parallel:  # one compiler per core (threads) unless told: -j N
            self.parallel = os.cpu_count() or 1

    def build_extensions(self):
        if self.compiler.compiler_type in _GCC_LIKE:
            flags = ["-O0", "-g"] if DEBUG else ["-O3"]
            for ext in self.extensions:
                ext.extra_compile_args = [*ext.extra_compile_args, *flags]
        super().build_extensions()


setup(
    ext_modules=cythonize(
        EXTENSIONS,
        include_path=["src_ext"],
        compiler_directives=DIRECTIVES,
        # Directives are baked into the generated C, so each mode keeps its own
        # copy (under the ignored build/ dir): switching modes never reuses
        # stale C. `build_ext --force` also forces re-cythonizing.
        build_dir="build/cython-debug" if DEBUG else "build/cython",
        force="--force" in sys.argv or "-f" in sys.argv,
    ),
    cmdclass={"build_ext": BuildExt},
)
