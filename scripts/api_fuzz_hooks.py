"""schemathesis hooks for scripts/api-fuzz: the check "a request valid by the document is not
refused as malformed".

schemathesis' own positive_data_acceptance counts every 4xx outside a list as a refusal, but the
spec itself answers 400 for a well-formed request whose *content* fails (an image URL that
cannot be fetched, Base64 that is no image, an unknown bank code, a national id whose check
digit is wrong). Those codes are business answers. What must never happen to a request the
document calls valid is the generic shape refusal: v2/admin `VALIDATION_ERROR`, v1
`invalid_request`. That is what this check fails on.
"""

import re

import schemathesis

SHAPE_REFUSALS = {"VALIDATION_ERROR", "invalid_request"}
# A batch is all or nothing: a slip refused for its content is reported as
# `slips[i]: CODE: message` inside VALIDATION_ERROR (docs/webhooks.md). Content codes there are
# business answers too.
BATCH_CONTENT = re.compile(r"^slips\[\d+\]: (?!VALIDATION_ERROR)[A-Z_]+: ")
# What the stored state does not allow is answered with VALIDATION_ERROR on some operations, as
# spec 4.2 rule 1 demands for a partner limit below the used quota: it depends on the record,
# not on the request's shape (each operation's description names it). By path and message.
STATE_ANSWERS = [
    (
        re.compile(r"^/v2/b2b/branch(es/[^/]+)?/quota"),
        re.compile(
            r"^(limitQuota: must not be below the current used quota"
            r"|amount: the branch has no limit of its own"
            r"|amount: the new limit would be out of range)"
        ),
    ),
    (re.compile(r"^/admin/services/[^/]+/credit$"), re.compile(r"^amount: the balance would go below zero")),
    (re.compile(r"^/admin/branches$"), re.compile(r"^main: the service already has a main branch$")),
]

# The document says "strings are trimmed before their lengths are checked": a value of only
# white space (`"\u0085"`, valid by `minLength: 1` alone) is refused for its length as
# documented. Such a refusal is expected when the value sent, trimmed, is out of its bounds.
LENGTH = re.compile(r"^([A-Za-z0-9_]+): must be (\d+) to (\d+) characters$")


REQUIRED = re.compile(r"^([A-Za-z0-9_]+): is required$")
# Rust's `str::trim` (Unicode White_Space): Python's `isspace` without U+001C..U+001F.
WHITE = "".join(c for c in map(chr, range(0x3001)) if c.isspace() and not "\x1c" <= c <= "\x1f")


def trim(value):
    return value.strip(WHITE)


def trimmed_out_of_bounds(case, message):
    """Every part of the refusal is a length (or, for a value that is only white space, a
    "required") refusal of a string the document says is trimmed first."""
    body = case.body if isinstance(case.body, dict) else {}
    for part in message.split("; "):
        r = REQUIRED.match(part)
        if r:
            value = body.get(r.group(1))
            if isinstance(value, str) and trim(value) == "":
                continue
            return False
        m = LENGTH.match(part)
        value = body.get(m.group(1)) if m else None
        if not isinstance(value, str):
            return False
        if int(m.group(2)) <= len(trim(value)) <= int(m.group(3)):
            return False
    return True


@schemathesis.check
def not_refused_as_malformed(ctx, response, case):
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive or response.status_code != 400:
        return None
    try:
        body = response.json()
    except Exception:
        return None
    if not isinstance(body, dict):
        return None
    error = body.get("error") if isinstance(body.get("error"), dict) else {}
    code = error.get("code") or body.get("message")
    message = error.get("message") or ""
    if code == "VALIDATION_ERROR" and message and all(
        BATCH_CONTENT.match(part) for part in message.split("; slips[")[:1]
    ) and message.count("slips[") == 1:
        return None
    if code == "VALIDATION_ERROR" and any(
        p.match(case.path) and m.match(message) for p, m in STATE_ANSWERS
    ):
        return None
    if code == "VALIDATION_ERROR" and message and trimmed_out_of_bounds(case, message):
        return None
    if code in SHAPE_REFUSALS:
        raise AssertionError(
            f"A request valid by the document was refused as malformed: {code}: "
            f"{error.get('message') or body.get('data')}"
        )
    return None


# The partner API (/v2/b2b) signs each request: X-Signature = hex HMAC-SHA256(secret,
# METHOD\nPATH\nTIMESTAMP\nNONCE\nSHA256_HEX(body)), PATH without /v2. The credentials come
# from scripts/api-fuzz (a partner it created); the body is hashed exactly as it is sent
# (schemathesis hands JSON to `requests`, which writes `json.dumps(body, allow_nan=False)`).
import hashlib
import hmac
import json
import os
import time
import uuid

if os.environ.get("API_FUZZ_PARTNER_KEY"):

    @schemathesis.auth().apply_to(path_regex="^/v2/b2b")
    class PartnerSignature:
        def get(self, case, ctx):
            return {
                "key": os.environ["API_FUZZ_PARTNER_KEY"],
                "secret": os.environ["API_FUZZ_PARTNER_SECRET"],
                "branch": os.environ["API_FUZZ_BRANCH_ID"],
            }

        def set(self, case, data, ctx):
            body = b""
            if isinstance(case.body, bytes):
                body = case.body
            elif case.body is not None and type(case.body).__name__ != "NotSet":
                body = json.dumps(case.body, allow_nan=False).encode("utf-8")
            path = case.formatted_path
            if path.startswith("/v2/"):
                path = path[3:]
            ts = str(int(time.time()))
            nonce = uuid.uuid4().hex
            canonical = "\n".join(
                [case.method.upper(), path, ts, nonce, hashlib.sha256(body).hexdigest()]
            )
            signature = hmac.new(data["secret"].encode(), canonical.encode(), hashlib.sha256).hexdigest()
            case.headers = case.headers or {}
            case.headers.update(
                {
                    "X-API-Key": data["key"],
                    "X-Branch-Key": data["branch"],
                    "X-Timestamp": ts,
                    "X-Nonce": nonce,
                    "X-Signature": signature,
                }
            )
