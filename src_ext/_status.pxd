# cython: language_level=3
"""The status of each item of a batched decode, one ``int8`` per chunk, shared by
``_decode`` (``decode_regions``, ``ShardFiles``) and ``_zstd_prefix``
(``decode_prefixes``), whose callers read them alike: decoded in place, nothing stored
(the caller fills), or not decoded here (the caller decodes it with the codec, which
raises the error naming the key when the bytes are bad)."""

cdef enum:
    _DECODED = 0
    _NO_DATA = 1
    _FAILED = 2
