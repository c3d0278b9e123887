#!/usr/bin/env python3
"""Independent signer for the partner API tests (compat.md), written without the Rust code:
X-Signature = hex(HMAC-SHA256(secret, METHOD\\nPATH\\nTIMESTAMP\\nNONCE\\nsha256hex(body))).
Usage: partner_sign.py METHOD PATH TIMESTAMP NONCE SECRET < body"""
import hashlib
import hmac
import sys

method, path, ts, nonce, secret = sys.argv[1:6]
body = sys.stdin.buffer.read()
msg = "\n".join([method, path, ts, nonce, hashlib.sha256(body).hexdigest()])
print(hmac.new(secret.encode(), msg.encode(), hashlib.sha256).hexdigest())
