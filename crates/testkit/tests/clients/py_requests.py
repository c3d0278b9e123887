"""A real client of another ecosystem: Python `requests`, one keep-alive Session.

Usage: python3 py_requests.py <cases.json>. Prints one JSON object: per case, how many answers
were complete and as expected, and how many requests failed at the connection level.
"""
import json
import sys

import requests

plan = json.load(open(sys.argv[1]))
session = requests.Session()
results = {}
for c in plan["cases"]:
    body = open(c["file"], "rb").read() if c.get("file") else None
    ok, errors, other = 0, [], []
    for _ in range(c["count"]):
        headers = {"Authorization": "Bearer " + c["key"]}
        try:
            if c["kind"] == "multipart":
                r = session.post(plan["base"] + c["path"], headers=headers,
                                 files={c["field"]: ("slip.png", body, "image/png")}, timeout=30)
            else:
                headers["Content-Type"] = "application/json"
                r = session.post(plan["base"] + c["path"], headers=headers,
                                 data=c["json"].encode(), timeout=30)
            try:
                j = r.json()
            except ValueError:
                j = None
            code = (j.get("error") or {}).get("code") if j and "error" in j else (j or {}).get("message")
            if r.status_code == c["status"] and j is not None and ("code" not in c or code == c["code"]):
                ok += 1
            else:
                other.append("%d %s" % (r.status_code, r.text[:120]))
        except requests.RequestException as e:
            errors.append(type(e).__name__ + ": " + str(e)[:200])
    results[c["name"]] = {"ok": ok, "errors": len(errors),
                          "firstError": errors[0] if errors else None, "other": other[:3]}
print(json.dumps(results))
