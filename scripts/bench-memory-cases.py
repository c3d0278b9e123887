#!/usr/bin/env python3
"""The security probe's memory cases (issue 17) against a running server, one after another;
for each, the server's peak RSS (VmHWM, reset before the case through /proc/PID/clear_refs)
and the answers' statuses. Standard library only.
Then the metadata bombs (issue 28): a slip PNG (SLIP_PNG, the sandbox slip the server verifies)
with an iCCP, zTXt or iTXt chunk inflating to 1 GiB, or a 3.5 MB eXIf; a JPEG with a 3.5 MB ICC
profile, one with 120,000 tiny APP2 and 15,000 extended-XMP segments, and a WebP with 3.5 MB ICCP + EXIF
chunks (the corpus' slip-0001-jpeg.jpg and slip-0005-webp.webp, when the corpus is beside the
checkout): 8 at once, half on API_KEY and half on KEY2 (another branch of the same service).
Usage: bench-memory-cases.py BASE_URL API_KEY SERVER_PID LIMIT_MB [SLIP_PNG KEY2 CORPUS_DIR]
(exit 1 if a peak >= limit)"""
import base64, json, socket, struct, sys, threading, time, urllib.parse, zlib
from collections import Counter

base, key, pid, limit_mb = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
host, port = urllib.parse.urlsplit(base).hostname, urllib.parse.urlsplit(base).port


def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def png_zero(w, h):
    """A complete, valid grey PNG of w×h zero pixels (rows compress ~1000:1)."""
    z = zlib.compressobj(9)
    row = b"\0" * (w + 1)
    parts = []
    left = h
    while left:
        n = min(left, max(1, (8 << 20) // len(row)))
        parts.append(z.compress(row * n))
        left -= n
    parts.append(z.flush())
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", b"".join(parts)) + chunk(b"IEND", b""))


def webp_lossless_flat(w, h):
    """A lossless WebP of w×h in one colour: five one-symbol prefix codes, zero bits a pixel."""
    bits = [(0x2F, 8), (w - 1, 14), (h - 1, 14), (0, 1), (0, 3), (0, 1), (0, 1), (0, 1)]
    bits += [(1, 1), (0, 1), (0, 1), (0, 1)] * 5  # simple code, 1 symbol, 1-bit symbol 0
    acc = n = 0
    for v, width in bits:
        acc |= v << n
        n += width
    data = acc.to_bytes((n + 7) // 8, "little")
    if len(data) % 2:
        data += b"\0"
    body = b"VP8L" + struct.pack("<I", len(data)) + data
    return b"RIFF" + struct.pack("<I", len(body) + 4) + b"WEBP" + body


def request(method, path, body=b"", headers=None, timeout=120, as_key=None):
    s = socket.create_connection((host, port), timeout=timeout)
    h = {"Host": "x", "Authorization": "Bearer " + (as_key or key), "Content-Length": str(len(body)), "Connection": "close"}
    h.update(headers or {})
    s.sendall(("%s %s HTTP/1.1\r\n" % (method, path) + "".join("%s: %s\r\n" % kv for kv in h.items()) + "\r\n").encode() + body)
    out = b""
    try:
        while True:
            d = s.recv(65536)
            if not d:
                break
            out += d
    except OSError:
        pass
    s.close()
    line = out.split(b"\r\n", 1)[0].decode(errors="replace")
    return line.split(" ")[1] if " " in line else "000"


def multipart(field, filename, data):
    b = b"--XyZ\r\nContent-Disposition: form-data; name=\"%s\"; filename=\"%s\"\r\n\r\n" % (field.encode(), filename.encode())
    return b + data + b"\r\n--XyZ--\r\n", {"Content-Type": "multipart/form-data; boundary=XyZ"}


def endless_headers():
    """A multipart stream whose part headers never end, sent until the server stops reading."""
    s = socket.create_connection((host, port), timeout=60)
    s.sendall(("POST /v2/verify/bank HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
               "Content-Type: multipart/form-data; boundary=XyZ\r\nTransfer-Encoding: chunked\r\n\r\n" % key).encode())
    first = b"--XyZ\r\nContent-Disposition: form-data; name=\"image\"\r\nX-Pad: "
    s.sendall(b"%x\r\n%s\r\n" % (len(first), first))
    pad = b"a" * 65536
    frame = b"%x\r\n%s\r\n" % (len(pad), pad)
    sent, status = 0, "000"
    s.settimeout(0.0)
    try:
        while sent < (1536 << 20):
            try:
                d = s.recv(4096)
                if d:
                    status = d.split(b" ")[1].decode()
                    break
            except BlockingIOError:
                pass
            s.settimeout(10)
            s.sendall(frame)
            s.settimeout(0.0)
            sent += len(pad)
    except OSError:
        pass
    s.close()
    return "%s (%d MB sent)" % (status, sent >> 20)


def hwm_kb():
    for line in open("/proc/%d/status" % pid):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])


def run(name, n, fn):
    with open("/proc/%d/clear_refs" % pid, "w") as f:
        f.write("5")  # reset the peak RSS to the current RSS
    results = []
    start = time.time()
    threads = [threading.Thread(target=lambda: results.append(fn())) for _ in range(n)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    peak = hwm_kb() / 1024
    statuses = ", ".join("%s x%d" % kv for kv in sorted(Counter(results).items()))
    print("%-44s peak RSS %7.1f MB   %5.1fs   %s" % (name, peak, time.time() - start, statuses))
    return peak


worst = 0.0
for (w, h) in [(39_000_000, 1), (1, 39_000_000), (100, 399_000)]:
    png = png_zero(w, h)
    body, hdr = multipart("image", "x.png", png)
    worst = max(worst, run("8 x PNG %dx%d (%d KB) multipart" % (w, h, len(png) >> 10), 8,
                           lambda: request("POST", "/v2/verify/bank", body, hdr)))
webp = webp_lossless_flat(6300, 6300)
js = json.dumps({"base64": base64.b64encode(webp).decode()}).encode()
worst = max(worst, run("24 x lossless WebP 6300x6300 (%d B JSON)" % len(js), 24,
                       lambda: request("POST", "/v2/verify/bank", js, {"Content-Type": "application/json"})))
worst = max(worst, run("8 x endless multipart part headers", 8, endless_headers))


def zlib_zeros(mib):
    """A zlib stream of mib MiB of zeros, ~1 KB a MiB: one sync-flushed deflate run, repeated."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = c.compress(b"\0" * (1 << 20)) + c.flush(zlib.Z_SYNC_FLUSH)
    b = ((mib << 20) % 65521) << 16 | 1
    return b"\x78\xda" + block * mib + b"\x03\x00" + struct.pack(">I", b)


def png_with(png, kind, data):
    return png[:33] + chunk(kind, data) + png[33:]


def jpeg_with(jpeg, segments):
    return jpeg[:2] + segments + jpeg[2:]


def segment(marker, data):
    return bytes([0xFF, marker]) + struct.pack(">H", len(data) + 2) + data


def webp_with(webp, iccp, exif):
    """A simple lossy WebP (RIFF, VP8 chunk) as an extended one with ICCP and EXIF chunks."""
    import struct as st
    vp8 = webp[12:12 + 8 + st.unpack("<I", webp[16:20])[0]]
    w = st.unpack("<H", vp8[14:16])[0] & 0x3FFF
    h = st.unpack("<H", vp8[16:18])[0] & 0x3FFF
    def ch(fourcc, data):
        return fourcc + st.pack("<I", len(data)) + data + (b"\0" if len(data) % 2 else b"")
    vp8x = bytes([0x28, 0, 0, 0]) + st.pack("<I", w - 1)[:3] + st.pack("<I", h - 1)[:3]
    body = b"WEBP" + ch(b"VP8X", vp8x) + ch(b"ICCP", iccp) + vp8 + ch(b"EXIF", exif)
    return b"RIFF" + st.pack("<I", len(body)) + body


if len(sys.argv) > 7:
    slip_png, key2, corpus = sys.argv[5], sys.argv[6], sys.argv[7]
    bombs = []
    base = open(slip_png, "rb").read()
    gib = zlib_zeros(1024)
    bombs.append(("PNG slip + iCCP inflating to 1 GiB", "image/png", png_with(base, b"iCCP", b"icc\0\0" + gib)))
    bombs.append(("PNG slip + zTXt inflating to 1 GiB", "image/png", png_with(base, b"zTXt", b"Comment\0\0" + gib)))
    bombs.append(("PNG slip + iTXt inflating to 1 GiB", "image/png", png_with(base, b"iTXt", b"Comment\0\1\0\0\0" + gib)))
    bombs.append(("PNG slip + 3.5 MB eXIf", "image/png", png_with(base, b"eXIf", b"\7" * (3500 << 10))))
    try:
        jpeg = open(corpus + "/slip-0001-jpeg.jpg", "rb").read()
        icc = b"".join(segment(0xE2, b"ICC_PROFILE\0" + bytes([i + 1, 54]) + b"\xab" * 65000) for i in range(54))
        bombs.append(("JPEG + 3.5 MB ICC profile (54 APP2)", "image/jpeg", jpeg_with(jpeg, icc)))
        tiny = b"".join(segment(0xE2, b"ICC_PROFILE\0\1\xff" + bytes([i & 255])) for i in range(120000))
        xmp = b"".join(segment(0xE1, b"http://ns.adobe.com/xmp/extension/\0" + b"G" * 32 + struct.pack(">II", 0xFFFFFFFF, 4 * i) + b"xmp!") for i in range(15000))
        bombs.append(("JPEG + 120,000 APP2 + 15,000 ext-XMP segments", "image/jpeg", jpeg_with(jpeg, tiny + xmp)))
        webp = open(corpus + "/slip-0005-webp.webp", "rb").read()
        bombs.append(("WebP + 2 MB ICCP + 1.5 MB EXIF", "image/webp", webp_with(webp, b"\1" * (2 << 20), b"\2" * (3 << 19))))
    except OSError:
        print("(corpus not found: JPEG and WebP bombs skipped)")
    for name, ctype, img in bombs:
        body, hdr = multipart("image", "x", img)
        turn = iter(range(1000))
        lock = threading.Lock()
        def both_branches(body=body, hdr=hdr):
            with lock:
                k = key if next(turn) % 2 == 0 else key2
            return request("POST", "/v2/verify/bank", body, hdr, as_key=k)
        worst = max(worst, run("8 x %s (%d KB), 2 branches" % (name, len(img) >> 10), 8, both_branches))
print("worst peak RSS: %.1f MB (limit %d MB)" % (worst, limit_mb))
sys.exit(1 if worst >= limit_mb else 0)
