"""A fake server's handler served on a thread on 127.0.0.1 (for the fake servers' own tests, which
run no client and need no namespace), and a POST to it."""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler], record: Path) -> Iterator[int]:
    """Serve `handler` (recording into `record`) on a free port, yielded; shut down after."""
    handler.record = record  # type: ignore[attr-defined]
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield httpd.server_address[1]
    finally:
        httpd.shutdown()
        httpd.server_close()


def post(port: int, path: str, body: dict) -> tuple[http.client.HTTPResponse, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
    response = connection.getresponse()
    return response, response.read()
