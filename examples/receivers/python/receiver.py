#!/usr/bin/env python3
"""A minimal slipverify webhook receiver: Python 3.11, standard library only.

    CERT_FILE=cert.pem KEY_FILE=key.pem PORT=8443 WEBHOOK_SECRET=whsec_... \\
    OUT_FILE=deliveries.jsonl python3 receiver.py

It verifies X-Service-Signature over the RAW request bytes (never over re-serialised JSON),
answers 401 on a missing or wrong signature, de-duplicates on jobId (delivery is at least
once), appends one JSON line per new delivery to OUT_FILE and answers 200.
PORT=0 picks a free port; the chosen one is printed as `listening <port>`. HOST (optional,
default 127.0.0.1) is the address to listen on.
Without WEBHOOK_SECRET signatures are not checked (only for branches without a secret).
"""

import hashlib
import hmac
import json
import os
import ssl
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MAX_BODY = 1024 * 1024  # callbacks are small; refuse anything larger


def env(name, default=None):
    value = os.environ.get(name, "")
    if value == "":
        if default is not None:
            return default
        sys.exit(f"{name} is required")
    return value


CERT_FILE = env("CERT_FILE")
KEY_FILE = env("KEY_FILE")
PORT = int(env("PORT", "0"))
HOST = env("HOST", "127.0.0.1")
SECRET = os.environ.get("WEBHOOK_SECRET", "").encode("utf-8")
OUT_FILE = env("OUT_FILE")

# jobIds already accepted. In production keep this in your database (a unique key on jobId),
# so it survives restarts and is shared by every instance.
seen = set()
lock = threading.Lock()


def signature_ok(raw: bytes, header) -> bool:
    if not SECRET:
        return True
    if header is None:
        return False
    expected = "sha256=" + hmac.new(SECRET, raw, hashlib.sha256).hexdigest()
    # compare_digest is constant-time for equal lengths; bytes avoid its non-ASCII TypeError.
    return hmac.compare_digest(header.encode("utf-8", "replace"), expected.encode("ascii"))


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def answer(self, status: int, text: str) -> None:
        data = text.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        try:
            length = int(self.headers.get("Content-Length", ""))
        except ValueError:
            self.close_connection = True
            return self.answer(411, "length required\n")
        if length < 0 or length > MAX_BODY:
            self.close_connection = True
            return self.answer(413, "too large\n")
        raw = self.rfile.read(length)  # the exact bytes that were signed
        if not signature_ok(raw, self.headers.get("X-Service-Signature")):
            return self.answer(401, "bad signature\n")
        try:
            body = json.loads(raw)
        except ValueError:
            return self.answer(400, "not JSON\n")
        job_id = body.get("jobId") if isinstance(body, dict) else None
        if not isinstance(job_id, str) or not job_id:
            return self.answer(400, "no jobId\n")
        with lock:
            if job_id in seen:
                return self.answer(200, "duplicate\n")
            try:
                with open(OUT_FILE, "a", encoding="utf-8") as out:
                    out.write(json.dumps(body, ensure_ascii=False, separators=(",", ":")) + "\n")
            except OSError as e:
                print(f"cannot record {job_id}: {e}", file=sys.stderr, flush=True)
                return self.answer(500, "cannot record\n")  # non-2xx: the service retries
            seen.add(job_id)
        # Answer quickly (the service waits 5 s); do slow work after answering.
        self.answer(200, "ok\n")

    def log_message(self, format, *args) -> None:  # noqa: A002 (stdlib signature)
        sys.stderr.write("%s - %s\n" % (self.address_string(), format % args))


def main() -> None:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(CERT_FILE, KEY_FILE)
    server = ThreadingHTTPServer((HOST, PORT), Handler)
    # Handshake in the handler thread, so one slow client cannot stall the accept loop.
    server.socket = context.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
    print(f"listening {server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
