"""A real nginx serving a directory read-only on a free loopback port, with an access
log of every request (method, path, ``Range`` header, status) for request counts."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

NGINX = "/usr/sbin/nginx"
#: the path of the requests that mark a place in the access log (never asked for by tests)
_MARK = "/__access_log_mark__/"

_CONF = """
daemon off;
master_process off;
worker_processes 1;
pid {run}/nginx.pid;
error_log {run}/error.log warn;
events {{ worker_connections 256; }}
http {{
    access_log off;
    client_body_temp_path {run}/body;
    proxy_temp_path {run}/proxy;
    fastcgi_temp_path {run}/fastcgi;
    uwsgi_temp_path {run}/uwsgi;
    scgi_temp_path {run}/scgi;
    log_format counts '$request_method $uri "$http_range" $status';
    server {{
        listen 127.0.0.1:{port};
        root {root};
        access_log {run}/access.log counts;
        location / {{
            limit_except GET HEAD {{ deny all; }}
        }}
    }}
}}
"""


def settle(root: str | os.PathLike, seconds: float = 3600) -> None:
    """Every file under ``root`` last modified ``seconds`` ago.  nginx's ``ETag`` is a
    file's modification time in whole seconds and its size; zarrfast keeps a shard's
    index under it only once that second is over (``remote.settled_etag``), so tests
    that count index requests serve settled files."""
    when = time.time() - seconds
    for dirpath, _, files in os.walk(root):
        for name in files:
            os.utime(os.path.join(dirpath, name), (when, when))


def nginx_path() -> str | None:
    return NGINX if os.access(NGINX, os.X_OK) else shutil.which("nginx")


class Nginx:
    def __init__(self, root: Path, run: Path) -> None:
        self.root, self.run = root, run
        self._start = 0  # where the log's requests begin (clear_log)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        run.mkdir(parents=True, exist_ok=True)
        conf = run / "nginx.conf"
        conf.write_text(_CONF.format(run=run, port=self.port, root=root))
        self.proc = subprocess.Popen([nginx_path(), "-c", str(conf), "-p", str(run)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"nginx exited: {self.proc.stderr.read().decode()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        else:
            self.stop()
            raise RuntimeError("nginx did not start listening within 10 s")

    def url(self, path: str = "") -> str:
        return f"http://127.0.0.1:{self.port}/{path.lstrip('/')}"

    def requests(self) -> list[tuple[str, str, str, int]]:
        """``(method, path, range, status)`` of every request since the last
        :meth:`clear_log` (or since the start).

        nginx logs a request after it has sent the response, so a client that is done
        may not be logged yet.  Its one worker logs requests in the order it finishes
        them, so a marker request sent now is logged after every request made before
        it: the log is read up to the marker, with no clock involved."""
        text = self._mark()
        out = []
        for line in text[self._start:].splitlines():
            method, uri, rest = line.split(" ", 2)
            if uri.startswith(_MARK):
                continue
            rng, status = rest.rsplit(" ", 1)
            out.append((method, uri.lstrip("/"), rng.strip('"').replace("-", "", 0),
                        int(status)))
        return out

    def clear_log(self) -> None:
        """Forget the requests made so far (those not logged yet included)."""
        self._start = len(self._mark())

    def _mark(self) -> str:
        """The log up to and including the line of a marker request made now."""
        token = f"{_MARK}{uuid.uuid4().hex}"
        try:
            urllib.request.urlopen(self.url(token), timeout=60).close()
        except urllib.error.HTTPError as e:  # 404: logged like any request
            e.close()
        log = self.run / "access.log"
        deadline = time.monotonic() + 60  # (a hang guard only)
        while True:
            text = log.read_text() if log.exists() else ""
            end = text.find(f"{token} ")
            if end >= 0:
                return text[: text.index("\n", end) + 1]
            if time.monotonic() > deadline:
                raise RuntimeError(f"nginx never logged the marker request {token}")
            time.sleep(0.005)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
