"""Gzip bomb against the corpus fetcher: how much is inflated before the size cap refuses the page.

Serves a gzip body on 127.0.0.1 and fetches it twice: with httpx's own decoding (``aiter_bytes``, what the
fetcher did before: every network chunk inflated whole before the cap was checked) and with the fetcher
(:class:`ruwikibench.corpus_builder.web.decode.CappedDecoder`: inflated under the cap). Prints compressed
size, bytes decoded and peak Python memory (tracemalloc) of each.

    python bench/gzip_bomb.py [--inflated-mb 200] [--cap-mb 5]
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import sys
import threading
import tracemalloc
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ruwikibench.corpus_builder.web.fetch import Fetcher
from ruwikibench.corpus_builder.web.types import FetchSettings


def serve(body: bytes) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Encoding", "gzip")
            self.end_headers()  # no Content-Length: the cap must bite on the stream
            try:
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


async def httpx_decoding(url: str, cap: int) -> int:
    size = 0
    async with httpx.AsyncClient() as client, client.stream("GET", url) as response:
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > cap:
                break
    return size


async def fetcher_decoding(url: str, cap: int) -> int:
    settings = FetchSettings(max_bytes=cap, allow_private=True, retries=0)
    async with Fetcher(settings) as fetcher:
        result = await fetcher.fetch(url)
    assert result.reason == "too_large", result.reason
    return result.bytes


def measure(label: str, run, url: str, cap: int) -> None:  # type: ignore[no-untyped-def]
    tracemalloc.start()
    decoded = asyncio.run(run(url, cap))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    print(f"{label:<28} decoded {decoded / 1e6:8.2f} MB   peak Python memory {peak / 1e6:8.2f} MB")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--inflated-mb", type=int, default=200)
    parser.add_argument("--cap-mb", type=float, default=5)
    args = parser.parse_args()
    body = gzip.compress(b"<html><body>" + b"a" * (args.inflated_mb * 1_000_000) + b"</body></html>", 9)
    cap = int(args.cap_mb * 1_000_000)
    server = serve(body)
    url = f"http://127.0.0.1:{server.server_address[1]}/bomb"
    print(f"gzip body {len(body) / 1e3:.0f} KB inflating to {args.inflated_mb} MB; cap {cap / 1e6:.2f} MB")
    measure("httpx aiter_bytes (before)", httpx_decoding, url, cap)
    measure("fetcher (capped decoder)", fetcher_decoding, url, cap)
    server.shutdown()


if __name__ == "__main__":
    main()
