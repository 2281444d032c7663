'use strict';
/**
 * A TCP echo server and pinging clients on 127.0.0.1, driven by JSON lines on
 * stdin and reporting JSON lines on stdout, for tests that run it inside a
 * network namespace (netns.js) and change the kernel's rules under it.
 *
 * Commands (one JSON object a line):
 *   { "op": "listen" }                          -> { "ev": "listening", "port" }
 *   { "op": "connect", "id", "port", "pingMs" } -> { "ev": "connected", "id" }, then
 *        a ping every pingMs (default 100) and { "ev": "pong", "id", "n" } per echo;
 *        { "ev": "error", "id", "code", "connected" } on an error; { "ev": "closed", "id" }
 *   { "op": "close", "id" }                     -> the client is destroyed
 * The process ends when its stdin ends, and after `maxRunMs` (argv[2], default 60000) in any case.
 */

const net = require('node:net');
const readline = require('node:readline');

const say = (event) => process.stdout.write(`${JSON.stringify(event)}\n`);
const clients = new Map();
const servers = [];

function listen() {
  const server = net.createServer((socket) => {
    socket.on('error', () => {});
    socket.on('data', (d) => socket.write(d));
  });
  server.listen(0, '127.0.0.1', () => say({ ev: 'listening', port: server.address().port }));
  servers.push(server);
}

function connect({ id, port, pingMs = 100 }) {
  const socket = net.connect({ port, host: '127.0.0.1' });
  const client = { socket, timer: null, connected: false, n: 0 };
  clients.set(id, client);
  socket.on('connect', () => {
    client.connected = true;
    say({ ev: 'connected', id });
    client.timer = setInterval(() => socket.write('p'), pingMs);
  });
  socket.on('data', (d) => {
    for (let i = 0; i < d.length; i++) say({ ev: 'pong', id, n: ++client.n });
  });
  socket.on('error', (err) => say({ ev: 'error', id, code: err.code, connected: client.connected }));
  socket.on('close', () => {
    clearInterval(client.timer);
    say({ ev: 'closed', id });
  });
}

function shutdown() {
  for (const c of clients.values()) {
    clearInterval(c.timer);
    c.socket.destroy();
  }
  for (const s of servers) s.close();
  process.exit(0);
}

readline.createInterface({ input: process.stdin }).on('line', (line) => {
  if (!line.trim()) return;
  const cmd = JSON.parse(line);
  if (cmd.op === 'listen') listen();
  else if (cmd.op === 'connect') connect(cmd);
  else if (cmd.op === 'close') {
    const c = clients.get(cmd.id);
    if (c) c.socket.destroy();
  }
});
process.stdin.on('end', shutdown);
setTimeout(shutdown, Number(process.argv[2]) || 60_000);
