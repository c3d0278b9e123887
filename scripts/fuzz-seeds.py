#!/usr/bin/env python3
"""Small crafted seeds for the read_image fuzz target (standard library only): tiny valid
images of every accepted format, an interlaced and a 16-bit PNG, a palette PNG, odd shapes,
and headers declaring huge or elongated images. Usage: fuzz-seeds.py DIR"""
import os, struct, sys, zlib

out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def png(w, h, depth=8, color=0, interlace=0, rows=None, plte=b""):
    chans = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[color]
    row_bytes = (w * chans * depth + 7) // 8
    raw = rows if rows is not None else b"".join(b"\0" + bytes((x * 37 + y * 11) & 0xFF for x in range(row_bytes)) for y in range(h))
    body = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, color, 0, 0, interlace))
    if plte:
        body += chunk(b"PLTE", plte)
    return body + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


seeds = {
    "png-gray-8x8": png(8, 8),
    "png-rgb-5x3": png(5, 3, color=2),
    "png-rgba-4x4": png(4, 4, color=6),
    "png-16bit-3x3": png(3, 3, depth=16, color=2),
    "png-1bit-17x2": png(17, 2, depth=1),
    "png-palette-4x4": png(4, 4, color=3, plte=bytes([0, 0, 0, 255, 255, 255])),
    "png-interlaced-9x9": png(9, 9, interlace=1, rows=b"\0" * (9 * 10)),
    "png-tall-2x50": png(2, 50),
    "png-header-39000000x1": png(39_000_000, 1, rows=b"\0" * 64),
    "png-header-100x399000": png(100, 399_000, rows=b"\0" * 64),
}
# GIF: 4×2 screen, 2-colour palette, one 2×1 frame.
seeds["gif-4x2"] = (b"GIF89a" + bytes([4, 0, 2, 0, 0x80, 0, 0, 0, 0, 0, 255, 255, 255])
                    + bytes([0x2C, 1, 0, 1, 0, 2, 0, 1, 0, 0x00, 0x02, 0x02, 0x4C, 0x0A, 0x00, 0x3B]))
seeds["gif-frame-huge"] = (b"GIF89a" + bytes([1, 0, 1, 0, 0, 0, 0, 0x2C, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0x80,
                                              0, 0, 0, 255, 255, 255, 0x02, 0x02, 0x44, 0x01, 0x00, 0x3B]))


def riff(kind, body):
    return b"RIFF" + struct.pack("<I", len(body) + 12) + b"WEBP" + kind + struct.pack("<I", len(body)) + body


def vp8l(w, h, rest=b"\0" * 8):
    return riff(b"VP8L", b"\x2f" + struct.pack("<I", (w - 1) | ((h - 1) << 14)) + rest)


seeds["webp-lossless-2x2"] = vp8l(2, 2, bytes([0x00, 0x00, 0x00, 0x88, 0x88, 0x08]))
seeds["webp-lossless-6300"] = vp8l(6300, 6300)
seeds["webp-lossy-16x16"] = riff(b"VP8 ", bytes([0x50, 0x02, 0x00, 0x9D, 0x01, 0x2A, 16, 0, 16, 0]) + b"\0" * 24)
# A tiny baseline JPEG: SOI, DQT, SOF0 8×8 grey, DHT (DC+AC), SOS, a few bytes, EOI.
dqt = b"\xff\xdb\x00\x43\x00" + bytes([1] * 64)
sof = b"\xff\xc0\x00\x0b\x08\x00\x08\x00\x08\x01\x01\x11\x00"
dht_dc = b"\xff\xc4\x00\x14\x00" + bytes([1] + [0] * 15) + b"\x00"
dht_ac = b"\xff\xc4\x00\x14\x10" + bytes([1] + [0] * 15) + b"\x00"
sos = b"\xff\xda\x00\x08\x01\x01\x00\x00\x3f\x00"
seeds["jpeg-8x8"] = b"\xff\xd8" + dqt + sof + dht_dc + dht_ac + sos + b"\x00\x00" + b"\xff\xd9"
seeds["jpeg-progressive-8x8"] = seeds["jpeg-8x8"].replace(b"\xff\xc0", b"\xff\xc2")

for name, data in seeds.items():
    with open(os.path.join(out, "seed-" + name), "wb") as f:
        f.write(data)
