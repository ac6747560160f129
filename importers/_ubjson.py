"""A small UBJSON decoder for XGBoost's binary model format (``.ubj``).

XGBoost's JSON prints float32 values as decimals; UBJSON stores their bits,
so reading it is the exact way in.  Strongly typed arrays (``[$d#L...``)
decode with one ``np.frombuffer`` each.  Only what XGBoost writes is read;
anything else raises ``ValueError``.
"""
from __future__ import annotations

import numpy as np

_SCALAR = {b"i": ">i1", b"U": ">u1", b"I": ">i2", b"l": ">i4", b"L": ">i8", b"d": ">f4", b"D": ">f8"}
MAX_DEPTH = 64


class _Reader:
    def __init__(self, buf):
        self.b = memoryview(bytes(buf))
        self.i = 0

    def take(self, n):
        if n < 0 or self.i + n > len(self.b):
            raise ValueError("UBJSON: truncated model file")
        out = self.b[self.i:self.i + n]
        self.i += n
        return out

    def marker(self):
        return bytes(self.take(1))

    def number(self, m):
        dt = np.dtype(_SCALAR[m])
        return np.frombuffer(self.take(dt.itemsize), dt)[0].item()

    def length(self):
        m = self.marker()
        if m not in _SCALAR or m in (b"d", b"D"):
            raise ValueError(f"UBJSON: bad length marker {m!r}")
        return int(self.number(m))

    def string(self):
        return bytes(self.take(self.length())).decode("utf-8")

    def value(self, m, depth):
        if depth > MAX_DEPTH:
            raise ValueError("UBJSON: nested too deeply")
        if m in _SCALAR:
            return self.number(m)
        if m == b"S":
            return self.string()
        if m == b"C":
            return bytes(self.take(1)).decode("latin-1")
        if m in (b"T", b"F"):
            return m == b"T"
        if m == b"Z":
            return None
        if m == b"[":
            return self.array(depth)
        if m == b"{":
            return self.object(depth)
        raise ValueError(f"UBJSON: unsupported marker {m!r}")

    def _header(self):
        typ = count = None
        m = self.marker()
        if m == b"$":
            typ = self.marker()
            m = self.marker()
        if m == b"#":
            count = self.length()
            m = None
        return typ, count, m

    def array(self, depth):
        typ, count, m = self._header()
        if typ in _SCALAR and count is not None:
            dt = np.dtype(_SCALAR[typ])
            return np.frombuffer(self.take(count * dt.itemsize), dt).astype(dt.newbyteorder("="))
        out = []
        if count is not None:
            for _ in range(count):
                out.append(self.value(typ or self.marker(), depth + 1))
            return out
        while m != b"]":
            out.append(self.value(m, depth + 1))
            m = self.marker()
        return out

    def object(self, depth):
        typ, count, m = self._header()
        out = {}
        if count is not None:
            for _ in range(count):
                k = self.string()
                out[k] = self.value(typ or self.marker(), depth + 1)
            return out
        while m != b"}":
            self.i -= 1                      # m was the key's length marker
            k = self.string()
            out[k] = self.value(self.marker(), depth + 1)
            m = self.marker()
        return out


def loads(buf) -> dict:
    """Decode one UBJSON document (typed numeric arrays become ndarrays)."""
    r = _Reader(buf)
    try:
        out = r.value(r.marker(), 0)
    except UnicodeDecodeError:
        raise ValueError(f"UBJSON: a string at byte {r.i} is not UTF-8 (a damaged file)") from None
    if r.i != len(r.b):
        raise ValueError(f"UBJSON: {len(r.b) - r.i} bytes after the end of the document (a damaged file)")
    return out


__all__ = ["loads"]
