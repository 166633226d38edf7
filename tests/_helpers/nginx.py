"""A real nginx serving a directory read-only on a free loopback port, with an access
log of every request (method, path, ``Range`` header, status) for request counts."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

NGINX = "/usr/sbin/nginx"

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


def nginx_path() -> str | None:
    return NGINX if os.access(NGINX, os.X_OK) else shutil.which("nginx")


class Nginx:
    def __init__(self, root: Path, run: Path) -> None:
        self.root, self.run = root, run
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
        """``(method, path, range, status)`` of every request so far.  nginx logs a
        request after it has sent the response, so the client may be done before the
        last line is written: the log is read until it stays the same for 50 ms (at
        most 5 s)."""
        log = self.run / "access.log"
        out = []
        if log.exists():
            text = log.read_text()
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                time.sleep(0.05)
                again = log.read_text()
                if again == text:
                    break
                text = again
            for line in text.splitlines():
                method, uri, rest = line.split(" ", 2)
                rng, status = rest.rsplit(" ", 1)
                out.append((method, uri.lstrip("/"), rng.strip('"').replace("-", "", 0),
                            int(status)))
        return out

    def clear_log(self) -> None:
        (self.run / "access.log").write_text("")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
