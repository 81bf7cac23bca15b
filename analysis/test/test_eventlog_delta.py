"""The event log's delta encoding (rtclab.eventlog.delta) against fields encoded by hand, bit by bit, from the
format's description (docs/eventlog.md, "Delta encoding"): every delta width 1-64, signed and unsigned deltas, with
and without a base value, with missing values, wrapping at the value width, and the refusals."""

from __future__ import annotations

import random

import numpy as np
import pytest

from rtclab.eventlog.delta import DeltaDecodingError, decode_deltas


def bits_to_bytes(bits: str) -> bytes:
    """A bit string ('0101...', spaces ignored) as bytes, most significant bit first, zero-padded to whole bytes."""
    bits = bits.replace(" ", "")
    bits += "0" * (-len(bits) % 8)
    return bytes(int(bits[i:i + 8], 2) for i in range(0, len(bits), 8))


def field(n: int, width: int) -> str:
    return format(n, f"0{width}b")


def varint_bits(n: int) -> str:
    out = ""
    while True:
        byte = n & 0x7F
        n >>= 7
        out += field(byte | (0x80 if n else 0), 8)
        if not n:
            return out


def encode(base: int | None, values: list[int | None], delta_width: int, signed: bool, value_width: int = 64,
           long_header: bool | None = None) -> bytes:
    """The test's own encoder of the format: the header, the existence bits, the first value as a varint when there
    is no base, then each present value's difference from the previous one in `delta_width` bits."""
    optional = base is None or any(v is None for v in values)
    if long_header is None:
        long_header = signed or optional or value_width != 64
    bits = field(1 if long_header else 0, 2) + field(delta_width - 1, 6)
    if long_header:
        bits += ("1" if signed else "0") + ("1" if optional else "0") + field(value_width - 1, 6)
    if optional:
        bits += "".join("0" if v is None else "1" for v in values)
    previous = base
    for v in values:
        if v is None:
            continue
        if previous is None:
            bits += varint_bits(v)
        else:
            delta = (v - previous) % (1 << value_width)
            if signed and delta >= (1 << value_width) // 2:  # the shorter way round: backwards
                delta = (1 << delta_width) - ((previous - v) % (1 << value_width))
            bits += field(delta % (1 << delta_width), delta_width)
        previous = v
    return bits_to_bytes(bits)


def test_empty_field_repeats_the_base():
    values, present = decode_deltas(b"", 7, 4)
    assert values.tolist() == [7, 7, 7, 7] and present.all()
    values, present = decode_deltas(b"", None, 3)
    assert not present.any()


def test_a_short_header_by_hand():
    # type 0, delta width 3 (stored as 2), deltas 1, 5, 0 from base 10 -> 11, 16, 16
    data = bits_to_bytes("00 000010 001 101 000")
    assert decode_deltas(data, 10, 3)[0].tolist() == [11, 16, 16]


def test_a_long_header_by_hand_signed_and_optional():
    # type 1, width 4, signed, optional, value width 8; existence 1 0 1; deltas -3 (1101), +2 (0010) from base 100
    data = bits_to_bytes("01 000011 1 1 000111 101 1101 0010")
    values, present = decode_deltas(data, 100, 3)
    assert present.tolist() == [True, False, True]
    assert values[present].tolist() == [97, 99]


def test_no_base_reads_the_first_value_as_a_varint_at_any_bit_offset():
    # type 1, width 2, unsigned, optional, value width 64; existence 0 1 1; first value 300 (varint 0xAC 0x02), +1
    data = bits_to_bytes("01 000001 0 1 111111 011" + varint_bits(300) + "01")
    values, present = decode_deltas(data, None, 3)
    assert present.tolist() == [False, True, True] and values[1:].tolist() == [300, 301]


@pytest.mark.parametrize("width", range(1, 65))
def test_every_unsigned_delta_width(width):
    rng = random.Random(width)
    base = rng.randrange(1 << 63)
    values, v = [], base
    for _ in range(9):
        v = (v + rng.randrange(1 << width)) % (1 << 64)
        values.append(v)
    got, present = decode_deltas(encode(base, values, width, signed=False), base, len(values))
    assert present.all() and got.tolist() == values


@pytest.mark.parametrize("width", range(2, 65))
def test_every_signed_delta_width(width):
    rng = random.Random(1000 + width)
    value_width = 64
    base = rng.randrange(1 << 62)
    values, v = [], base
    half = 1 << (width - 1)
    for _ in range(9):
        v = (v + rng.randrange(-half, half)) % (1 << value_width)
        values.append(v)
    got, present = decode_deltas(encode(base, values, width, signed=True), base, len(values))
    assert present.all() and got.tolist() == values


def test_values_wrap_at_their_width():
    # 16-bit sequence numbers across the wrap: 65534, 65535, 0, 1 with +1 deltas in a 16-bit value width
    data = encode(65533, [65534, 65535, 0, 1], 1, signed=False, value_width=16)
    assert decode_deltas(data, 65533, 4)[0].tolist() == [65534, 65535, 0, 1]
    # and backwards with signed deltas: 1 -> 65535 is -2
    data = encode(1, [0, 65535, 65534], 2, signed=True, value_width=16)
    assert decode_deltas(data, 1, 3)[0].tolist() == [0, 65535, 65534]


def test_missing_values_with_and_without_base():
    values = [None, 5, None, None, 9, 4, None]
    for base in (None, 3):
        got, present = decode_deltas(encode(base, values, 4, signed=True, value_width=8), base, len(values))
        assert present.tolist() == [v is not None for v in values]
        assert got[present].tolist() == [v for v in values if v is not None]
    got, present = decode_deltas(encode(None, [None, None], 1, signed=False), None, 2)
    assert not present.any()


def test_refusals():
    with pytest.raises(DeltaDecodingError, match="unknown delta encoding type 2"):
        decode_deltas(bits_to_bytes("10 000000"), 0, 1)
    with pytest.raises(DeltaDecodingError, match="ends after"):
        decode_deltas(bits_to_bytes("00 000111 1111"), 0, 3)  # three 8-bit deltas announced, 4 bits there
    with pytest.raises(DeltaDecodingError, match="exceeds value width"):
        decode_deltas(bits_to_bytes("01 001000 0 0 000011"), 0, 1)  # delta width 9 > value width 4


def test_a_large_batch_decodes_like_a_loop():
    rng = np.random.default_rng(5)
    values = np.cumsum(rng.integers(0, 40, 5000)).tolist()
    got, _ = decode_deltas(encode(0, values, 6, signed=False), 0, len(values))
    assert got.tolist() == values
