#!/usr/bin/env python3
"""Writes the images `scripts/bench-decode-memory` measures into DIR: one slip (a corpus PNG,
scaled up) on a white canvas of W×H, in every format and bit depth the reader decodes: PNG
grey, grey+alpha, RGB, RGBA and palette at 8 and 16 bits, plain and Adam7-interlaced (written
here, Pillow writes neither 16-bit colour nor interlaced PNGs); JPEG baseline 4:2:0 and 4:4:4,
progressive, grey, CMYK; WebP lossy, lossy with alpha, lossless; GIF.
Needs Pillow and numpy. Usage: decode-memory-images.py SLIP.png DIR [W H]"""
import struct, sys, zlib
import numpy as np
from PIL import Image

slip_path, out = sys.argv[1], sys.argv[2]
W, H = (int(sys.argv[3]), int(sys.argv[4])) if len(sys.argv) > 4 else (6300, 6300)

slip = Image.open(slip_path).convert("RGB")
scale = max(1, min(W * 0.8 / slip.width, H * 0.8 / slip.height))
slip = slip.resize((int(slip.width * scale), int(slip.height * scale)), Image.NEAREST)
canvas = Image.new("RGB", (W, H), "white")
canvas.paste(slip, ((W - slip.width) // 2, (H - slip.height) // 2))
rgb = np.asarray(canvas)
grey = np.asarray(canvas.convert("L"))


def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


ADAM7 = [(0, 8, 0, 8), (4, 8, 0, 8), (0, 4, 4, 8), (2, 4, 0, 4), (0, 2, 2, 4), (1, 2, 0, 2), (0, 1, 1, 2)]


def write_png(name, pixels, color_type, depth, interlaced, plte=None):
    """pixels: H×W×C uint8 (scaled to 16 bits when depth is 16)."""
    if pixels.ndim == 2:
        pixels = pixels[:, :, None]
    data = pixels.astype(">u2") * 257 if depth == 16 else pixels.astype("u1")
    z = zlib.compressobj(9)
    parts = []
    passes = ADAM7 if interlaced else [(0, 1, 0, 1)]
    for xo, xs, yo, ys in passes:
        sub = data[yo::ys, xo::xs]
        if sub.shape[0] == 0 or sub.shape[1] == 0:
            continue
        raw = np.ascontiguousarray(sub).reshape(sub.shape[0], -1).view("u1")
        rows = np.hstack([np.zeros((raw.shape[0], 1), "u1"), raw])
        for start in range(0, rows.shape[0], 256):
            parts.append(z.compress(rows[start:start + 256].tobytes()))
    parts.append(z.flush())
    ihdr = struct.pack(">IIBBBBB", W, H, depth, color_type, 0, 0, int(interlaced))
    body = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr)
    if plte is not None:
        body += chunk(b"PLTE", plte)
    body += chunk(b"IDAT", b"".join(parts)) + chunk(b"IEND", b"")
    open("%s/%s" % (out, name), "wb").write(body)


alpha = np.full(grey.shape, 255, "u1")
pal_img = canvas.convert("P", palette=Image.ADAPTIVE, colors=16)
pal = np.asarray(pal_img)
plte = bytes(pal_img.getpalette()[: 3 * 16])
for interlaced in (False, True):
    tag = "-adam7" if interlaced else ""
    for depth in (8, 16):
        write_png("png-grey%d%s.png" % (depth, tag), grey, 0, depth, interlaced)
        write_png("png-greyalpha%d%s.png" % (depth, tag), np.dstack([grey, alpha]), 4, depth, interlaced)
        write_png("png-rgb%d%s.png" % (depth, tag), rgb, 2, depth, interlaced)
        write_png("png-rgba%d%s.png" % (depth, tag), np.dstack([rgb, alpha]), 6, depth, interlaced)
    write_png("png-palette8%s.png" % tag, pal, 3, 8, interlaced, plte)

canvas.save(out + "/jpeg-baseline-420.jpg", quality=85, subsampling=2)
canvas.save(out + "/jpeg-baseline-444.jpg", quality=85, subsampling=0)
canvas.convert("L").save(out + "/jpeg-baseline-grey.jpg", quality=85)
canvas.save(out + "/jpeg-progressive-420.jpg", quality=85, subsampling=2, progressive=True)
canvas.save(out + "/jpeg-progressive-444.jpg", quality=85, subsampling=0, progressive=True)
canvas.convert("L").save(out + "/jpeg-progressive-grey.jpg", quality=85, progressive=True)
canvas.convert("CMYK").save(out + "/jpeg-baseline-cmyk.jpg", quality=85)
canvas.convert("CMYK").save(out + "/jpeg-progressive-cmyk.jpg", quality=85, progressive=True)
canvas.save(out + "/webp-lossy.webp", quality=80)
# One pixel not opaque, or the encoder drops the alpha channel.
rgba = canvas.convert("RGBA")
rgba.putpixel((0, 0), (255, 255, 255, 254))
rgba.save(out + "/webp-lossy-alpha.webp", quality=80, exact=True)
canvas.save(out + "/webp-lossless.webp", lossless=True, quality=0, method=0)
rgba.save(out + "/webp-lossless-alpha.webp", lossless=True, quality=0, method=0)
# Two frames, the second slightly different (or the encoder merges them).
second = rgba.copy()
second.putpixel((1, 1), (0, 0, 0, 255))
rgba.save(out + "/webp-animated-lossy.webp", save_all=True, append_images=[second], quality=80)
rgba.save(out + "/webp-animated-lossless.webp", save_all=True, append_images=[second], lossless=True, quality=0, method=0)
canvas.convert("P", palette=Image.ADAPTIVE, colors=16).save(out + "/gif.gif")
