"""Build the Cython kernels of zarrfast (metadata lives in pyproject.toml).

Environment:
    ZARRFAST_DEBUG_BUILD=1  bounds/wraparound/initialised checks on, ``-O0 -g``.

The kernels use typed memoryviews only, so NumPy's C headers are not needed.
"""

import os
import sys

from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

DEBUG = os.environ.get("ZARRFAST_DEBUG_BUILD") == "1"

EXTENSIONS = [
    Extension("zarrfast._ext._assemble", ["src_ext/_assemble.pyx"]),
    Extension("zarrfast._ext._indexing", ["src_ext/_indexing.pyx"]),
    Extension("zarrfast._ext._shard_index", ["src_ext/_shard_index.pyx"]),
    Extension("zarrfast._ext._downsample", ["src_ext/_downsample.pyx"]),
    Extension("zarrfast._ext._decode", ["src_ext/_decode.pyx"]),
]
if os.name == "posix":  # open/pread/fstat; elsewhere the NumPy twin reads the files
    EXTENSIONS.append(Extension("zarrfast._ext._fileio", ["src_ext/_fileio.pyx"]))

DIRECTIVES = {
    "language_level": 3,
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
    "cdivision": True,
}

# Compilers that take GCC-style flags (gcc, clang, mingw); MSVC keeps its defaults (/Ox).
_GCC_LIKE = {"unix", "mingw32", "cygwin"}


class BuildExt(build_ext):
    """Add optimisation (or debug) flags once the compiler type is known."""

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
