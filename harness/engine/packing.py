"""Lists of numbers as machine values, in bulk: what the recorder writes its per-request
lists into (`packed`, `drained`), and reads back as one buffer (`joined`)."""

from __future__ import annotations

import struct
from typing import Final


# The packers, by (item format, count): struct.Struct.pack converts a
# list's items to machine values in one C loop, about three times faster than array(fmt,
# list), np.array or np.fromiter, which convert each item through a generic call.
_PACKERS: Final[dict[tuple[str, int], struct.Struct]] = {}


def packed(fmt: str, items: list) -> bytes:
    """`items` as machine values of struct format `fmt` ("d", "q", "h"): the bytes
    `array(fmt, items).tobytes()` holds (native layout: all items one type, so no padding; the
    native packers copy each value, where the standard-size ones re-encode it byte by byte)."""
    key = (fmt, len(items))
    packer = _PACKERS.get(key)
    if packer is None:
        packer = struct.Struct(f"{len(items)}{fmt}")
        if len(_PACKERS) < 64:  # the chunk's count, and a few partial ones
            _PACKERS[key] = packer
    return packer.pack(*items)


def joined(chunks: list[bytes]) -> bytes:
    """The chunks as one, which then stands in for them (a second read copies nothing)."""
    if len(chunks) != 1:
        whole = b"".join(chunks)
        chunks[:] = [whole]
    return chunks[0]


def drained(fmt: str, slots: list, n: int, blank: list) -> bytes:
    """The first `n` of a fixed-size buffer's `slots`, packed (`packed`); the buffer is then reset
    to `blank` (a list of its length) by one slice store: no reallocation, and the values just
    read are freed now, while hot. A buffer written in place and drained so never regrows, where
    one emptied by clear() was grown again by ~36 reallocations a chunk, each a copy."""
    out = packed(fmt, slots if n == len(slots) else slots[:n])
    slots[:] = blank
    return out
