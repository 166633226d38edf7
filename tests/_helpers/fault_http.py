"""A real HTTP/1.1 server on loopback that serves objects and misbehaves on demand.

It runs an asyncio server on a thread of its own.  ``GET`` (with ``Range``:
``bytes=a-b``, ``bytes=a-``, ``bytes=-n``), ``HEAD``, ``PUT`` and ``DELETE`` of
objects held in :attr:`FaultServer.objects`; every request is logged in
:attr:`FaultServer.requests` as ``(method, path, range header)``.

:meth:`FaultServer.fail` queues faults for the next matching requests:

* ``"503"`` (any status code): answer with that status;
* ``"stall"``: send nothing for ``seconds`` (then close);
* ``"short"``: promise the full length, send half the body, close;
* ``"oversized"``: send more bytes than asked for (a ranged answer whose
  ``Content-Length`` and body hold 7 bytes more than its ``Content-Range``; a whole
  answer followed by 7 junk bytes past its ``Content-Length``);
* ``"norange"``: ignore ``Range`` and answer 200 with the whole object;
* ``"reset"``: close the connection with a TCP reset before answering.

:meth:`FaultServer.hold` holds the next requests until that many are in flight at once
(``_helpers.gate``): a count of concurrent requests that no load can make smaller.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import threading
from dataclasses import dataclass, field

from _helpers.gate import InFlightGate


@dataclass
class _Fault:
    kind: str
    method: str
    path: str | None
    count: int
    seconds: float = 0.0


@dataclass
class FaultServer:
    host: str = "127.0.0.1"
    port: int = 0
    objects: dict[str, bytes] = field(default_factory=dict)
    requests: list[tuple[str, str, str | None]] = field(default_factory=list)
    _faults: list[_Fault] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    #: seconds every answer waits before it is sent (a round trip's latency)
    latency: float = 0.0
    #: requests being answered now, and the most there were at once
    in_flight: int = 0
    peak_in_flight: int = 0
    gate: InFlightGate = field(default_factory=InFlightGate)

    # -- control -------------------------------------------------------------------
    def fail(self, kind: str, times: int = 1, *, method: str = "GET", path: str | None = None,
             seconds: float = 0.0) -> None:
        with self._lock:
            self._faults.append(_Fault(kind, method, path, times, seconds))

    def hold(self, n: int, timeout: float = 120.0) -> None:
        """Hold the next requests until ``n`` are in flight at once (then none)."""
        self.gate.hold(n, timeout)

    def reset(self) -> None:
        with self._lock:
            self._faults.clear()
            self.requests.clear()
            self.latency = 0.0
            self.peak_in_flight = 0
        self.gate.reset()

    def url(self, path: str = "") -> str:
        return f"http://{self.host}:{self.port}/{path.lstrip('/')}"

    def _take_fault(self, method: str, path: str) -> _Fault | None:
        with self._lock:
            for f in self._faults:
                if f.method == method and (f.path is None or f.path == path) and f.count > 0:
                    f.count -= 1
                    return f
        return None

    # -- lifecycle -----------------------------------------------------------------
    def start(self) -> FaultServer:
        ready = threading.Event()

        def main() -> None:
            self._loop = asyncio.new_event_loop()
            asyncio.set_event_loop(self._loop)
            self._closing = asyncio.Event()
            self._writers: set[asyncio.StreamWriter] = set()
            server = self._loop.run_until_complete(
                asyncio.start_server(self._handle, self.host, self.port))
            self.port = server.sockets[0].getsockname()[1]
            self._server = server
            ready.set()
            self._loop.run_forever()
            # every connection was aborted: its handler ends on its own
            pending = asyncio.all_tasks(self._loop)
            if pending:
                self._loop.run_until_complete(asyncio.wait(pending, timeout=5))
            self._loop.close()

        self._thread = threading.Thread(target=main, name="fault-http", daemon=True)
        self._thread.start()
        ready.wait(10)
        return self

    def stop(self) -> None:
        def shutdown() -> None:
            self._closing.set()  # ends stalls
            self._server.close()
            for w in list(self._writers):
                w.transport.abort()
            self._loop.stop()

        self._loop.call_soon_threadsafe(shutdown)
        self._thread.join(10)

    # -- serving -------------------------------------------------------------------
    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            while True:
                line = await reader.readline()
                if not line:
                    return
                method, target, _ = line.decode("latin-1").split(" ", 2)
                headers: dict[str, str] = {}
                while True:
                    h = await reader.readline()
                    if h in (b"\r\n", b"\n", b""):
                        break
                    k, _, v = h.decode("latin-1").partition(":")
                    headers[k.strip().lower()] = v.strip()
                body = b""
                if "content-length" in headers:
                    body = await reader.readexactly(int(headers["content-length"]))
                path = target.split("?", 1)[0].lstrip("/")
                with self._lock:
                    self.requests.append((method, path, headers.get("range")))
                    self.in_flight += 1
                    self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
                await self.gate.aenter()
                try:
                    if self.latency:
                        await asyncio.sleep(self.latency)
                    if not await self._answer(method, path, headers, body, writer):
                        return
                finally:
                    self.gate.leave()
                    with self._lock:
                        self.in_flight -= 1
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            self._writers.discard(writer)
            try:
                writer.close()
            except Exception:  # noqa: BLE001
                pass

    async def _answer(self, method: str, path: str, headers: dict[str, str], body: bytes,
                      writer: asyncio.StreamWriter) -> bool:
        """Answer one request; ``False`` closes the connection."""
        fault = self._take_fault(method, path)
        kind = fault.kind if fault else None
        if kind == "reset":
            sock = writer.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()
            return False
        if kind == "stall":
            try:
                await asyncio.wait_for(self._closing.wait(), fault.seconds)
            except TimeoutError:
                pass
            return False
        if kind is not None and kind.isdigit():
            self._send(writer, int(kind), b"injected", {})
            await writer.drain()
            return True
        if method == "PUT":
            self.objects[path] = body
            self._send(writer, 201, b"", {})
        elif method == "DELETE":
            self.objects.pop(path, None)
            self._send(writer, 204, b"", {})
        elif method in ("GET", "HEAD"):
            value = self.objects.get(path)
            if value is None:
                self._send(writer, 404, b"not found", {})
            else:
                self._send_value(writer, method, value, headers.get("range"), kind)
                if kind == "short":
                    await writer.drain()
                    return False
        else:
            self._send(writer, 405, b"", {})
        await writer.drain()
        return True

    def _send_value(self, writer: asyncio.StreamWriter, method: str, value: bytes,
                    range_header: str | None, kind: str | None) -> None:
        size = len(value)
        extra = {"ETag": f'"{hash(value) & 0xffffffff:x}"', "Accept-Ranges": "bytes",
                 "Last-Modified": "Wed, 25 Nov 2026 10:00:00 GMT"}
        if range_header and kind != "norange" and range_header.startswith("bytes="):
            spec = range_header[6:]
            a, _, b = spec.partition("-")
            if a == "":
                start, stop = max(0, size - int(b)), size
            else:
                start, stop = int(a), (min(size, int(b) + 1) if b else size)
            if start >= size:
                self._send(writer, 416, b"", {"Content-Range": f"bytes */{size}"})
                return
            part = value[start:stop]
            extra["Content-Range"] = f"bytes {start}-{stop - 1}/{size}"
            status = 206
        else:
            part, status = value, 200
        if kind == "oversized":
            if status == 206:  # more bytes than the range, and headers that say so
                part = part + b"X" * 7
            else:  # the whole value, then junk past its Content-Length
                self._send(writer, status, part + b"X" * 7, extra, length=len(part))
                return
        if kind == "short":
            head = self._head(status, len(part), extra)
            writer.write(head + (part[:len(part) // 2] if method == "GET" else b""))
            return
        self._send(writer, status, part if method == "GET" else b"", extra,
                   length=len(part))

    @staticmethod
    def _head(status: int, length: int, extra: dict[str, str]) -> bytes:
        reason = {200: "OK", 201: "Created", 204: "No Content", 206: "Partial Content",
                  400: "Bad Request", 403: "Forbidden", 404: "Not Found", 500: "Error", 405: "Method Not Allowed", 416: "Range Not Satisfiable",
                  503: "Service Unavailable"}[status]
        lines = [f"HTTP/1.1 {status} {reason}", f"Content-Length: {length}"]
        lines += [f"{k}: {v}" for k, v in extra.items()]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    def _send(self, writer: asyncio.StreamWriter, status: int, body: bytes,
              extra: dict[str, str], length: int | None = None) -> None:
        writer.write(self._head(status, len(body) if length is None else length, extra) + body)
