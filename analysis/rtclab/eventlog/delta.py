"""The delta encoding of Chrome's RTC event log (v2 format): how a batch of events stores the values of one field.

A batch message holds its first event in the plain fields and the field's values for the batch's other events in a
`*_deltas` byte string. Its layout (libwebrtc's logging/rtc_event_log/encoder/delta_encoding.cc, read to learn the
format; this is an independent implementation), read as a bit stream, most significant bit of each byte first:

  header   2 bits  encoding type: 0 = unsigned deltas, 64-bit values, every value present (the short header ends here)
                                  1 = the long header follows; 2 and 3 are unknown (refused)
           6 bits  delta width - 1 (deltas are 1 to 64 bits wide)
   (type 1 only)
           1 bit   signed deltas
           1 bit   values optional: an existence bit per value follows the header
           6 bits  value width - 1 (values wrap at 2^width)
  existence bitmap  one bit per value (only when values are optional)
  first value       a varint (7 bits a byte, least significant group first, top bit = more bytes), only when the
                    batch has no base value (an optional field absent from the first event); read 8 bits at a time
  deltas            one per further present value, each `delta width` bits; a signed delta is negative when its top
                    bit is set (its value is delta - 2^width); a value is (previous + delta) mod 2^(value width)

An empty string means every value equals the base. Values are unsigned 64-bit; fields that are signed in the format
(timestamps, offsets) were stored as two's complement of their own width and are converted by the caller.
"""
from __future__ import annotations

import numpy as np
import numpy.typing as npt

# Header field widths, in bits.
_TYPE_BITS = 2
_WIDTH_BITS = 6
_VARINT_MAX_BYTES = 10

ENCODING_UNSIGNED_SHORT = 0
ENCODING_LONG_HEADER = 1


class DeltaDecodingError(ValueError):
    """A `*_deltas` field that cannot be decoded (truncated, or an encoding this reader does not know)."""


class _Bits:
    """A most-significant-bit-first reader over a byte string."""

    def __init__(self, data: bytes) -> None:
        self.bits = np.unpackbits(np.frombuffer(data, dtype=np.uint8))
        self.pos = 0

    def take(self, n: int) -> npt.NDArray[np.uint8]:
        if self.pos + n > len(self.bits):
            raise DeltaDecodingError(f'delta-encoded field ends after {len(self.bits)} bits; {self.pos + n} needed')
        out = self.bits[self.pos:self.pos + n]
        self.pos += n
        return out

    def read(self, n: int) -> int:
        value = 0
        for bit in self.take(n):
            value = (value << 1) | int(bit)
        return value

    def varint(self) -> int:
        value = 0
        for i in range(_VARINT_MAX_BYTES):
            byte = self.read(8)
            value |= (byte & 0x7F) << (7 * i)
            if not byte & 0x80:
                return value
        raise DeltaDecodingError(f'a varint longer than {_VARINT_MAX_BYTES} bytes')


def _as_uint64(bits: npt.NDArray[np.uint8], width: int) -> npt.NDArray[np.uint64]:
    """Rows of `width` bits (most significant first) as unsigned integers."""
    rows = bits.reshape(-1, width).astype(np.uint64)
    weights = np.left_shift(np.uint64(1), np.arange(width - 1, -1, -1, dtype=np.uint64))
    return (rows * weights).sum(axis=1, dtype=np.uint64)


def decode_deltas(data: bytes, base: int | None, count: int) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.bool_]]:
    """The `count` values a `*_deltas` field holds after the base value.

    base: the field's value in the batch's first event, None when that event does not have the (optional) field.
    Returns (values, present): values as unsigned 64-bit integers (0 where absent), present[i] whether value i exists.
    """
    if count < 0:
        raise DeltaDecodingError(f'negative number of deltas ({count})')
    if not data:
        present = np.full(count, base is not None)
        return np.full(count, base if base is not None else 0, dtype=np.uint64), present
    reader = _Bits(data)
    encoding = reader.read(_TYPE_BITS)
    if encoding not in (ENCODING_UNSIGNED_SHORT, ENCODING_LONG_HEADER):
        raise DeltaDecodingError(f'unknown delta encoding type {encoding}')
    delta_width = reader.read(_WIDTH_BITS) + 1
    signed, optional, value_width = False, False, 64
    if encoding == ENCODING_LONG_HEADER:
        signed = bool(reader.read(1))
        optional = bool(reader.read(1))
        value_width = reader.read(_WIDTH_BITS) + 1
    if delta_width > value_width:
        raise DeltaDecodingError(f'delta width {delta_width} exceeds value width {value_width}')
    present = reader.take(count).astype(bool) if optional else np.ones(count, dtype=bool)
    n_present = int(present.sum())
    values = np.zeros(count, dtype=np.uint64)
    if n_present == 0:
        return values, present
    previous = base
    n_deltas = n_present
    first_varint: int | None = None
    if previous is None:
        first_varint = reader.varint()
        n_deltas -= 1
    deltas = _as_uint64(reader.take(n_deltas * delta_width), delta_width) if n_deltas else np.zeros(0, np.uint64)
    if signed:
        # A negative delta d (top bit set) stands for d - 2^width: add 2^64 - 2^width, modulo 2^64.
        negative = (deltas >> np.uint64(delta_width - 1)) & np.uint64(1) == 1
        offset = np.uint64((2**64 - 2**delta_width) % 2**64)
        deltas = np.where(negative, deltas + offset, deltas)
    start = np.uint64(previous if previous is not None else (first_varint or 0))
    # Unsigned 64-bit arithmetic wraps modulo 2^64; reducing modulo 2^value_width afterwards gives the same result as
    # wrapping at every step.
    with np.errstate(over='ignore'):
        chain = start + np.cumsum(deltas, dtype=np.uint64)
    if value_width < 64:
        mask = np.uint64(2**value_width - 1)
        chain &= mask
        start &= mask
    present_values = chain if previous is not None else np.concatenate([[start], chain]).astype(np.uint64)
    values[present] = present_values
    return values, present
