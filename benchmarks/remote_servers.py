"""Servers for the remote benchmarks: nginx, moto's S3 server and a delaying, counting proxy.

Everything here runs on loopback, on free ports, unprivileged, with its files in a
temporary directory of the caller's choosing; every ``start_*`` returns an object whose
``stop()`` ends what it started (use them as context managers).

* :class:`Nginx` writes its own configuration (``daemon off``, pid file, error and access
  logs and every temp path in the given directory, ``sendfile on``, a high
  ``keepalive_requests``) and serves one directory read-only.
* :class:`MotoS3` is ``python -m moto.server`` in a child process.
* :class:`Proxy` is this module run as a script (``python remote_servers.py proxy``): an
  asyncio HTTP/1.1 reverse proxy in a child process (so that it does not share a GIL
  with the clients being measured).  It waits ``delay_ms`` after a request's head
  arrives before forwarding it (a first-byte latency), keeps connections alive on both
  sides (one upstream connection per client connection), streams bodies through and
  forwards the request head byte for byte, so the ``Host`` header that S3's SigV4 signs
  is the one the client signed.  It records every request (method, path, ``Range``,
  status, body bytes).  Its control paths (never forwarded, never counted):

  - ``GET /__proxy__/stats``: the records since the last call and the most requests
    in flight at once since then (each from its head's arrival to its answer's end, the
    delay included), as JSON, and reset;
  - ``GET /__proxy__/delay?ms=N``: set the delay.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

__all__ = ["free_port", "nginx_path", "Nginx", "MotoS3", "Proxy", "NGINX_HINT"]

NGINX_HINT = ("nginx is not installed: install it with `apt-get install nginx-light` "
              "(or `apt-get install nginx`)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_port(port: int, proc: subprocess.Popen, what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with code {proc.returncode} before listening "
                               f"on port {port}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{what} did not listen on port {port} within {timeout:.0f} s")


def _stop(proc: subprocess.Popen | None) -> None:
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


class _Child:
    proc: subprocess.Popen | None = None
    url = ""

    def stop(self) -> None:
        _stop(self.proc)

    def __enter__(self):
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


# -- nginx ------------------------------------------------------------------------------

def nginx_path() -> str | None:
    """The nginx binary (``PATH``, then ``/usr/sbin/nginx``), or ``None``."""
    found = shutil.which("nginx")
    if found:
        return found
    return "/usr/sbin/nginx" if os.access("/usr/sbin/nginx", os.X_OK) else None


NGINX_CONF = """\
daemon off;
worker_processes 1;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log warn;
{user}
events {{ worker_connections 1024; }}
http {{
    access_log {tmp}/access.log;
    client_body_temp_path {tmp}/client_body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
    types {{ application/json json; }}
    default_type application/octet-stream;
    sendfile on;
    # (not tcp_nopush: with sendfile, TCP_CORK holds the last segment of some ranged
    # responses until a delayed ACK, 40 ms later, for clients such as obstore and curl)
    tcp_nopush off;
    tcp_nodelay on;
    keepalive_timeout 120s;
    keepalive_requests 1000000;
    server {{
        listen 127.0.0.1:{port};
        root {root};
        location / {{ autoindex off; }}
    }}
}}
"""


class Nginx(_Child):
    """nginx serving ``root`` on a free loopback port; its files live in ``tmp``."""

    def __init__(self, root: str | os.PathLike, tmp: str | os.PathLike,
                 binary: str | None = None) -> None:
        binary = binary or nginx_path()
        if binary is None:
            raise FileNotFoundError(NGINX_HINT)
        self.tmp = Path(tmp)
        self.tmp.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        # as root, nginx's workers switch to the "nobody" user unless told otherwise: keep
        # the caller's user so that they can read the dataset wherever it is
        user = "user root;" if os.geteuid() == 0 else ""
        self.conf = self.tmp / "nginx.conf"
        self.conf.write_text(NGINX_CONF.format(tmp=self.tmp, port=self.port,
                                               root=Path(root).resolve(), user=user))
        self.access_log = self.tmp / "access.log"
        self.proc = subprocess.Popen(
            [binary, "-p", str(self.tmp), "-c", str(self.conf), "-e", str(self.tmp / "error.log")],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            _wait_port(self.port, self.proc, "nginx")
        except RuntimeError as e:
            err = self.proc.stderr.read().decode(errors="replace") if self.proc.poll() else ""
            self.stop()
            raise RuntimeError(f"{e}: {err.strip()}") from None
        self.url = f"http://127.0.0.1:{self.port}"

    def access_lines(self) -> int:
        try:
            with open(self.access_log, "rb") as f:
                return sum(1 for _ in f)
        except FileNotFoundError:
            return 0

    def wait_access_lines(self, n: int, timeout: float = 10.0) -> int:
        """The access log's line count once it reaches ``n`` (or at ``timeout``): nginx
        logs a request after its response is sent, so a client that has read the whole
        response can still be ahead of the log."""
        deadline = time.monotonic() + timeout
        while (got := self.access_lines()) < n and time.monotonic() < deadline:
            time.sleep(0.01)
        return got


# -- moto -------------------------------------------------------------------------------

class MotoS3(_Child):
    """moto's S3 server (``python -m moto.server``) on a free loopback port."""

    def __init__(self) -> None:
        self.port = free_port()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            _wait_port(self.port, self.proc, "moto.server")
        except RuntimeError:
            self.stop()
            raise
        self.url = f"http://127.0.0.1:{self.port}"


# -- the proxy (client side) ------------------------------------------------------------

class Proxy(_Child):
    """The delaying, counting proxy in a child process, in front of ``upstream``."""

    def __init__(self, upstream: str, delay_ms: float = 0.0) -> None:
        host, _, port = upstream.removeprefix("http://").rstrip("/").partition(":")
        self.port = free_port()
        self.proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "proxy", "--port", str(self.port),
             "--upstream", f"{host}:{port or 80}", "--delay-ms", str(delay_ms)],
            stdout=subprocess.DEVNULL)
        try:
            _wait_port(self.port, self.proc, "the proxy")
        except RuntimeError:
            self.stop()
            raise
        self.url = f"http://127.0.0.1:{self.port}"
        self.delay_ms = delay_ms
        #: the most requests in flight at once up to the last :meth:`take`
        self.peak_in_flight = 0

    def _control(self, path: str) -> Any:
        # a fresh connection each time: never one of the measured clients' connections
        with urllib.request.urlopen(f"{self.url}/__proxy__/{path}", timeout=30) as r:
            return json.loads(r.read())

    def set_delay(self, ms: float) -> None:
        self._control(f"delay?ms={ms}")
        self.delay_ms = ms

    def take(self) -> list[dict]:
        """The requests since the last call (and forget them); the most that were in
        flight at once meanwhile is then :attr:`peak_in_flight`."""
        stats = self._control("stats")
        self.peak_in_flight = int(stats["peak_in_flight"])
        return stats["requests"]


# -- the proxy (server side) ------------------------------------------------------------

_HOP = 1 << 20


async def _read_head(reader: asyncio.StreamReader) -> bytes | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as e:
        if e.partial.strip():
            raise
        return None
    return head


def _parse_head(head: bytes) -> tuple[str, dict[str, str]]:
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
    return lines[0], headers


async def _pipe_body(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                     headers: dict[str, str], *, until_eof: bool) -> int:
    """Copy one message body (Content-Length, chunked or until EOF); returns its bytes
    (the payload, without chunk framing)."""
    n = 0
    if "chunked" in headers.get("transfer-encoding", "").lower():
        while True:
            size_line = await reader.readuntil(b"\r\n")
            writer.write(size_line)
            size = int(size_line.split(b";")[0].strip(), 16)
            if size == 0:
                while True:  # trailers, then the empty line
                    line = await reader.readuntil(b"\r\n")
                    writer.write(line)
                    if line == b"\r\n":
                        break
                break
            left = size + 2
            while left:
                data = await reader.read(min(left, _HOP))
                if not data:
                    raise ConnectionError("connection closed inside a chunk")
                writer.write(data)
                left -= len(data)
            n += size
            await writer.drain()
        return n
    if "content-length" in headers:
        left = int(headers["content-length"])
        while left:
            data = await reader.read(min(left, _HOP))
            if not data:
                raise ConnectionError("connection closed inside a body")
            writer.write(data)
            n += len(data)
            left -= len(data)
            await writer.drain()
        return n
    if until_eof:
        while data := await reader.read(_HOP):
            writer.write(data)
            n += len(data)
            await writer.drain()
    return n


class _ProxyServer:
    def __init__(self, upstream: tuple[str, int], delay_ms: float) -> None:
        self.upstream = upstream
        self.delay = delay_ms / 1000
        self.records: list[dict] = []
        self.in_flight = 0
        self.peak_in_flight = 0

    async def control(self, line: str, writer: asyncio.StreamWriter) -> None:
        target = line.split()[1]
        body: dict[str, Any] = {}
        if target.startswith("/__proxy__/stats"):
            body = {"requests": self.records, "delay_ms": self.delay * 1000,
                    "peak_in_flight": self.peak_in_flight}
            self.records = []
            self.peak_in_flight = self.in_flight
        elif target.startswith("/__proxy__/delay"):
            self.delay = float(target.partition("ms=")[2]) / 1000
            body = {"delay_ms": self.delay * 1000}
        data = json.dumps(body).encode()
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close"
                     b"\r\nContent-Length: %d\r\n\r\n" % len(data) + data)
        await writer.drain()

    async def handle(self, creader: asyncio.StreamReader, cwriter: asyncio.StreamWriter) -> None:
        up: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        try:
            while True:
                head = await _read_head(creader)
                if head is None:
                    return
                line, headers = _parse_head(head)
                if line.split()[1:2] and line.split()[1].startswith("/__proxy__/"):
                    await self.control(line, cwriter)
                    return
                if up is None:  # (one upstream connection per client connection)
                    up = await asyncio.open_connection(*self.upstream, limit=4 << 20)
                self.in_flight += 1
                self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
                try:
                    close = await self.forward(up, line, head, headers, creader, cwriter)
                finally:
                    self.in_flight -= 1
                if close:
                    return
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            return
        finally:
            if up is not None:
                up[1].close()
            cwriter.close()

    async def forward(self, up: tuple[asyncio.StreamReader, asyncio.StreamWriter], line: str,
                      head: bytes, headers: dict[str, str], creader: asyncio.StreamReader,
                      cwriter: asyncio.StreamWriter) -> bool:
        """One request forwarded upstream (after the delay) and its answer back;
        whether the client's connection is then to be closed."""
        if self.delay:
            await asyncio.sleep(self.delay)
        ureader, uwriter = up
        uwriter.write(head)
        await _pipe_body(creader, uwriter, headers, until_eof=False)
        await uwriter.drain()
        rhead = await _read_head(ureader)
        if rhead is None:
            raise ConnectionError("upstream closed the connection")
        status_line, rheaders = _parse_head(rhead)
        cwriter.write(rhead)
        method = line.split()[0]
        status = int(status_line.split()[1])
        no_body = method == "HEAD" or status in (204, 304) or 100 <= status < 200
        n = 0 if no_body else await _pipe_body(ureader, cwriter, rheaders,
                                               until_eof=True)
        await cwriter.drain()
        self.records.append({"method": method, "path": line.split()[1],
                             "range": headers.get("range"), "status": status,
                             "bytes": n})
        close = (rheaders.get("connection", "").lower() == "close"
                 or (not no_body and "content-length" not in rheaders
                     and "chunked" not in rheaders.get("transfer-encoding", "")))
        return close or headers.get("connection", "").lower() == "close"


async def _serve(port: int, upstream: tuple[str, int], delay_ms: float) -> None:
    proxy = _ProxyServer(upstream, delay_ms)
    server = await asyncio.start_server(proxy.handle, "127.0.0.1", port, limit=4 << 20,
                                        backlog=1024)
    async with server:
        await server.serve_forever()


def main(argv: list[str] | None = None) -> None:
    import argparse

    p = argparse.ArgumentParser(description="a delaying, counting HTTP/1.1 reverse proxy")
    sub = p.add_subparsers(dest="cmd", required=True)
    pp = sub.add_parser("proxy")
    pp.add_argument("--port", type=int, required=True)
    pp.add_argument("--upstream", required=True, help="host:port")
    pp.add_argument("--delay-ms", type=float, default=0.0)
    args = p.parse_args(argv)
    host, _, port = args.upstream.partition(":")
    # stop at once on SIGTERM/SIGINT: nothing to flush, and cancelling the open
    # connections' tasks would only print noise
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: os._exit(0))
    asyncio.run(_serve(args.port, (host, int(port)), args.delay_ms))


if __name__ == "__main__":
    main()
