"""zarr-python's ``zarr.experimental``: features zarr-python marks as experimental."""
