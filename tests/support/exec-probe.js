'use strict';
/**
 * One exec against the loopback apiserver, from a process of its own (for
 * tests that run it inside a network namespace, netns.js): creates the pod
 * (a 409 is fine), opens the exec stream with `ws`, pings it every 100 ms (so
 * that a dead path shows), and reports JSON lines on stdout:
 *   { ev: 'open' }, { ev: 'stdout' | 'stderr', text }, { ev: 'status', status },
 *   { ev: 'error', code, message }, { ev: 'close', code }
 * Usage: node exec-probe.js <url> <ca.pem> <token> <pod> <command as JSON array>
 * It exits once the stream closed, and after 30 s in any case.
 */

const fs = require('node:fs');
const https = require('node:https');

const WebSocket = require('ws');

const [url, caFile, token, pod, commandJson] = process.argv.slice(2);
const ca = fs.readFileSync(caFile, 'utf8');
const say = (event) => process.stdout.write(`${JSON.stringify(event)}\n`);
setTimeout(() => process.exit(2), 30_000).unref();

function createPod() {
  const body = JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: pod },
    spec: { containers: [{ name: 'job', image: 'node:20' }] },
  });
  return new Promise((resolve, reject) => {
    const req = https.request(`${url}/api/v1/namespaces/ci/pods`, {
      method: 'POST',
      ca,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    });
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => (res.statusCode === 201 || res.statusCode === 409 ? resolve() : reject(new Error(`create: ${res.statusCode}`))));
    });
    req.on('error', reject);
    req.end(body);
  });
}

createPod().then(
  () => {
    const q = new URLSearchParams();
    for (const part of JSON.parse(commandJson)) q.append('command', part);
    for (const [k, v] of [['container', 'job'], ['stdout', 'true'], ['stderr', 'true']]) q.set(k, v);
    const ws = new WebSocket(`${url.replace(/^https/, 'wss')}/api/v1/namespaces/ci/pods/${pod}/exec?${q}`, ['v5.channel.k8s.io'], {
      ca,
      headers: { authorization: `Bearer ${token}` },
    });
    let pinger = null;
    // ws reports a dead connection only as a close with 1006; the socket's own error says which.
    ws.on('upgrade', (res) => res.socket.on('error', (err) => say({ ev: 'error', code: err.code || null, message: err.message })));
    ws.on('open', () => {
      say({ ev: 'open' });
      pinger = setInterval(() => ws.ping(), 100);
    });
    ws.on('message', (data) => {
      const buf = Buffer.from(data);
      const text = buf.subarray(1).toString('utf8');
      if (buf[0] === 1) say({ ev: 'stdout', text });
      else if (buf[0] === 2) say({ ev: 'stderr', text });
      else if (buf[0] === 3) say({ ev: 'status', status: JSON.parse(text) });
    });
    ws.on('error', (err) => say({ ev: 'error', code: err.code || null, message: err.message }));
    ws.on('close', (code) => {
      clearInterval(pinger);
      say({ ev: 'close', code });
      process.exit(0);
    });
  },
  (err) => {
    say({ ev: 'error', code: err.code || null, message: err.message });
    process.exit(1);
  },
);
