#!/usr/bin/env node
// A minimal slipverify webhook receiver: Node 20, built-in modules only.
//
//   CERT_FILE=cert.pem KEY_FILE=key.pem PORT=8443 WEBHOOK_SECRET=whsec_... \
//   OUT_FILE=deliveries.jsonl node receiver.js
//
// It verifies X-Service-Signature over the RAW request bytes (never over re-serialised
// JSON), answers 401 on a missing or wrong signature, de-duplicates on jobId (delivery is at
// least once), appends one JSON line per new delivery to OUT_FILE and answers 200.
// PORT=0 picks a free port; the chosen one is printed as `listening <port>`. HOST (optional,
// default 127.0.0.1) is the address to listen on.
// Without WEBHOOK_SECRET signatures are not checked (only for branches without a secret).
'use strict';

const https = require('https');
const crypto = require('crypto');
const fs = require('fs');

const env = (name, fallback) => {
  const v = process.env[name];
  if (v === undefined || v === '') {
    if (fallback !== undefined) return fallback;
    console.error(`${name} is required`);
    process.exit(2);
  }
  return v;
};

const certFile = env('CERT_FILE');
const keyFile = env('KEY_FILE');
const port = Number(env('PORT', '0'));
const secret = process.env.WEBHOOK_SECRET || '';
const outFile = env('OUT_FILE');
const host = env('HOST', '127.0.0.1'); // optional; 0.0.0.0 to accept from other hosts
const MAX_BODY = 1024 * 1024; // callbacks are small; refuse anything larger

// jobIds already accepted. In production keep this in your database (a unique key on
// jobId), so it survives restarts and is shared by every instance.
const seen = new Set();

function signatureOk(raw, header) {
  if (!secret) return true;
  if (typeof header !== 'string') return false;
  const expected = Buffer.from(
    'sha256=' + crypto.createHmac('sha256', secret).update(raw).digest('hex'),
    'utf8',
  );
  const given = Buffer.from(header, 'utf8');
  // timingSafeEqual throws on different lengths: check the length first.
  return given.length === expected.length && crypto.timingSafeEqual(given, expected);
}

function answer(res, status, text) {
  res.writeHead(status, { 'content-type': 'text/plain' });
  res.end(text);
}

const server = https.createServer(
  { cert: fs.readFileSync(certFile), key: fs.readFileSync(keyFile) },
  (req, res) => {
    if (req.method !== 'POST') return answer(res, 405, 'POST only\n');
    const chunks = [];
    let size = 0;
    let tooLarge = false;
    req.on('data', (chunk) => {
      size += chunk.length;
      if (size > MAX_BODY) {
        tooLarge = true;
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (tooLarge) return answer(res, 413, 'too large\n');
      const raw = Buffer.concat(chunks); // the exact bytes that were signed
      if (!signatureOk(raw, req.headers['x-service-signature'])) {
        return answer(res, 401, 'bad signature\n');
      }
      let body;
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        return answer(res, 400, 'not JSON\n');
      }
      const jobId = body && typeof body.jobId === 'string' ? body.jobId : null;
      if (!jobId) return answer(res, 400, 'no jobId\n');
      if (seen.has(jobId)) return answer(res, 200, 'duplicate\n');
      try {
        fs.appendFileSync(outFile, JSON.stringify(body) + '\n');
      } catch (e) {
        console.error(`cannot record ${jobId}: ${e.message}`);
        return answer(res, 500, 'cannot record\n'); // non-2xx: the service retries
      }
      seen.add(jobId);
      // Answer quickly (the service waits 5 s); do slow work after answering.
      answer(res, 200, 'ok\n');
    });
    req.on('error', () => answer(res, 400, 'bad request\n'));
  },
);

server.listen(port, host, () => {
  console.log(`listening ${server.address().port}`);
});

for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => server.close(() => process.exit(0)));
}
