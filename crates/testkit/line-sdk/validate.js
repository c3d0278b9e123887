#!/usr/bin/env node
// The signature cross-check's other side: LINE's own SDK (`@line/bot-sdk`, pinned in
// package.json / package-lock.json) judges each case the Rust test generated.
//
// stdin: a JSON array of {secret, body (Base64 of the raw bytes), signature}
// stdout: a JSON array of booleans, validateSignature's answer for each case.
'use strict';

const { validateSignature } = require('@line/bot-sdk');

let input = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => { input += chunk; });
process.stdin.on('end', () => {
  const cases = JSON.parse(input);
  const answers = cases.map((c) =>
    validateSignature(Buffer.from(c.body, 'base64'), c.secret, c.signature));
  process.stdout.write(JSON.stringify(answers));
});
