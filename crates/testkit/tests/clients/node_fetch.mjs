// A real client of another ecosystem: Node's built-in fetch (undici), one keep-alive pool.
// Usage: node node_fetch.mjs <cases.json>. Prints one JSON object: per case, how many answers
// were complete and as expected, and how many requests failed at the connection level.
import { readFileSync } from 'node:fs';
import diagnostics from 'node:diagnostics_channel';

// New connections undici opens, per case (a kept-alive connection opens none).
let connects = 0;
diagnostics.channel('undici:client:connected').subscribe(() => { connects++; });

const plan = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const results = {};
for (const c of plan.cases) {
  const body = c.file ? readFileSync(c.file) : null;
  let ok = 0;
  const connectsBefore = connects;
  const errors = [];
  const other = [];
  for (let i = 0; i < c.count; i++) {
    const headers = { Authorization: `Bearer ${c.key}` };
    let payload;
    if (c.kind === 'multipart') {
      payload = new FormData();
      payload.append(c.field, new Blob([body], { type: 'image/png' }), 'slip.png');
    } else {
      headers['Content-Type'] = 'application/json';
      payload = c.json;
    }
    try {
      const r = await fetch(plan.base + c.path, { method: 'POST', headers, body: payload });
      const text = await r.text();
      let j = null;
      try { j = JSON.parse(text); } catch { /* counted below */ }
      const code = j && (j.error ? j.error.code : j.message);
      if (r.status === c.status && j && (c.code === undefined || code === c.code)) ok++;
      else other.push(`${r.status} ${text.slice(0, 120)}`);
    } catch (e) {
      errors.push(String((e.cause && (e.cause.code || e.cause.message)) || e.message));
    }
  }
  results[c.name] = { ok, connects: connects - connectsBefore, errors: errors.length, firstError: errors[0] ?? null, other: other.slice(0, 3) };
}
console.log(JSON.stringify(results));
