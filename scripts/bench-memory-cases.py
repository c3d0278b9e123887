#!/usr/bin/env python3
"""The security probe's memory cases (issue 17) against a running server, one after another;
for each, the server's peak RSS (VmHWM, reset before the case through /proc/PID/clear_refs)
and the answers' statuses. Standard library only.
Usage: bench-memory-cases.py BASE_URL API_KEY SERVER_PID LIMIT_MB   (exit 1 if a peak >= limit)"""
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


def request(method, path, body=b"", headers=None, timeout=120):
    s = socket.create_connection((host, port), timeout=timeout)
    h = {"Host": "x", "Authorization": "Bearer " + key, "Content-Length": str(len(body)), "Connection": "close"}
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
print("worst peak RSS: %.1f MB (limit %d MB)" % (worst, limit_mb))
sys.exit(1 if worst >= limit_mb else 0)
