"""Reads from S3: zarrfast vs zarr-python on the same S3 server, side by side.

The script starts moto's S3 server (``python -m moto.server``) in a subprocess on a
free loopback port, writes with zarrfast

* an array of many small chunks (``--chunks`` chunks of 8 KiB, uncompressed), and
* the same data sharded (64 chunks of 8 KiB per shard),

then times full reads (``open`` + ``a[:]``) with zarrfast and with zarr-python
(``zarr.open_array("s3://...", storage_options=...)``), best of ``--repeat``, the
libraries taking turns.  Every read is compared with the data.  Ratios are
zarr-python time / zarrfast time, measured in the same run.

    python benchmarks/bench_remote.py            # 4096 chunks (32 MiB)
    python benchmarks/bench_remote.py --quick    # 1024 chunks

The server runs on this machine, so a request costs the server's CPU time rather
than a network round trip: the numbers show per-request overhead and concurrency,
not what a real network adds (which favours concurrent requests even more).
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
import uuid

import numpy as np

import zarrfast

KEY, SECRET = "bench-key", "bench-secret"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server() -> tuple[subprocess.Popen, str]:
    """moto's S3 server in a subprocess; returns it and its endpoint URL."""
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, f"http://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("moto server did not start within 30 s")


def storage_options(endpoint: str) -> dict:
    return {"endpoint_url": endpoint, "key": KEY, "secret": SECRET,
            "client_kwargs": {"region_name": "us-east-1"}}


def write_arrays(endpoint: str, bucket: str, n_chunks: int) -> tuple[dict[str, str], np.ndarray]:
    """The plain and sharded arrays, written by zarrfast; returns their URLs and data."""
    opts = storage_options(endpoint)
    side = 2048  # float32: one 8 KiB chunk per row
    data = np.random.default_rng(0).random((n_chunks, side), dtype=np.float32)
    urls = {}
    for name, kwargs in [("plain", {"chunks": (1, side)}),
                         ("sharded", {"chunks": (1, side), "shards": (64, side)})]:
        url = f"s3://{bucket}/{uuid.uuid4().hex}/{name}.zarr"
        a = zarrfast.create_array(url, shape=data.shape, dtype=data.dtype, compressors=None,
                                  storage_options=opts, **kwargs)
        a[:] = data
        urls[name] = url
    return urls, data


def read_zarrfast(url: str, opts: dict) -> np.ndarray:
    return zarrfast.open_array(url, mode="r", storage_options=opts)[:]


def read_zarr_python(url: str, opts: dict) -> np.ndarray:
    import zarr

    return zarr.open_array(url, mode="r", storage_options=opts)[:]


def best_times(readers: dict, url: str, opts: dict, data: np.ndarray, repeat: int) -> dict:
    """Best wall time of each reader over ``repeat`` turns (readers alternate)."""
    best = {name: float("inf") for name in readers}
    for _ in range(repeat):
        for name, read in readers.items():
            t0 = time.perf_counter()
            got = read(url, opts)
            elapsed = time.perf_counter() - t0
            if not np.array_equal(got, data):
                raise AssertionError(f"{name} read wrong data from {url}")
            best[name] = min(best[name], elapsed)
    return best


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=4096, help="number of 8 KiB chunks")
    parser.add_argument("--repeat", type=int, default=3, help="best of this many reads")
    parser.add_argument("--quick", action="store_true", help="1024 chunks")
    args = parser.parse_args(argv)
    n_chunks = 1024 if args.quick else args.chunks
    if n_chunks % 64:
        parser.error("--chunks must be a multiple of 64 (the chunks per shard)")
    os.environ.setdefault("AWS_ACCESS_KEY_ID", KEY)
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", SECRET)

    readers = {"zarrfast": read_zarrfast}
    try:
        import zarr

        readers["zarr-python"] = read_zarr_python
        peer = f"zarr {zarr.__version__}"
    except ImportError:
        peer = "zarr-python not installed: skipped"

    proc, endpoint = start_server()
    try:
        import boto3

        bucket = "bench"
        boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=KEY,
                     aws_secret_access_key=SECRET, region_name="us-east-1").create_bucket(
            Bucket=bucket)
        opts = storage_options(endpoint)
        urls, data = write_arrays(endpoint, bucket, n_chunks)
        mib = data.nbytes / 2**20
        print(f"moto S3 server at {endpoint}; {n_chunks} chunks of 8 KiB ({mib:.0f} MiB), "
              f"best of {args.repeat}; zarrfast {zarrfast.__version__}, {peer}")
        for reader in readers.values():  # warm up: clients, connection pools, imports
            reader(urls["sharded"], opts)
        rows = []
        for name, url in urls.items():
            times = best_times(readers, url, opts, data, args.repeat)
            rows.append((name, times))
        _print_table(rows, mib, n_chunks)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _print_table(rows: list, mib: float, n_chunks: int) -> None:
    names = list(rows[0][1])
    head = f"{'array':<26}" + "".join(f"{n + ' s':>15}" for n in names) + f"{'zarrfast':>13}"
    if len(names) > 1:
        head += f"{'ratio':>8}"
    print(head)
    print("-" * len(head))
    labels = {"plain": f"{n_chunks} chunks", "sharded": f"{n_chunks // 64} shards x 64 chunks"}
    for name, times in rows:
        line = f"{labels[name]:<26}" + "".join(f"{times[n]:>15.3f}" for n in names)
        line += f"{mib / times[names[0]]:>8.0f} MiB/s"
        if len(names) > 1:
            line += f"{times[names[1]] / times[names[0]]:>7.1f}x"
        print(line)
    print(f"ratio: zarr-python time / zarrfast time ({mib:.0f} MiB per read)")


if __name__ == "__main__":
    main()
