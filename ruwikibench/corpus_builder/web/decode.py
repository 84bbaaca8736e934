"""Content-Encoding decoding with the size cap applied WHILE decompressing.

httpx's ``aiter_bytes`` inflates each network chunk whole: a few hundred kilobytes of gzip can become
gigabytes before any cap is checked. :class:`CappedDecoder` inflates with zlib's ``max_length``, so at most
``limit`` bytes are ever produced, whatever the compression ratio. Only the encodings the fetcher asks for
(``ENCODINGS``) are decoded; any other is refused.
"""

from __future__ import annotations

import zlib

ENCODINGS = "gzip, deflate"


class UnsupportedEncoding(ValueError):
    pass


class CappedDecoder:
    """Feed raw body chunks; :meth:`feed` returns decoded bytes, never more than ``limit`` in total."""

    def __init__(self, content_encoding: str | None, limit: int) -> None:
        codings = [c.strip().lower() for c in (content_encoding or "").split(",") if c.strip()]
        codings = [c for c in codings if c != "identity"]
        if len(codings) > 1 or (codings and codings[0] not in ("gzip", "x-gzip", "deflate")):
            raise UnsupportedEncoding(f"content encoding {content_encoding!r} is not supported")
        self.coding = codings[0] if codings else None
        self.limit = limit
        self.produced = 0
        self._zlib = None
        if self.coding in ("gzip", "x-gzip"):
            self._zlib = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif self.coding == "deflate":
            self._zlib = zlib.decompressobj()
        self._deflate_checked = self.coding != "deflate"

    @property
    def full(self) -> bool:
        return self.produced >= self.limit

    def feed(self, raw: bytes) -> bytes:
        room = self.limit - self.produced
        if room <= 0 or not raw:
            return b""
        if self._zlib is None:
            out = raw[:room]
        else:
            if not self._deflate_checked:  # 'deflate' is sometimes sent raw, without the zlib header
                self._deflate_checked = True
                if raw[0] & 0x0F != 8:
                    self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)
            try:
                out = self._zlib.decompress(raw, room)
            except zlib.error as exc:
                raise UnsupportedEncoding(f"corrupt {self.coding} body: {exc}") from exc
        self.produced += len(out)
        return out
