"""Compiled Cython kernels of zarrfast (see src_ext/ and zarrfast.kernels)."""
