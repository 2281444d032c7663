'use strict';
// Tests for the loopback proxies (socks5-proxy.js, connect-proxy.js): raw
// sockets written here speak SOCKS5 and CONNECT to them, so what goes over
// the wire is checked byte by byte: the replies, the reply codes and
// statuses of a refused target, and that bytes are piped both ways.
// Run: node --test tests/support/proxies.test.js

const assert = require('node:assert/strict');
const net = require('node:net');
const { describe, it, before, after } = require('node:test');

const { startSocks5Proxy, replyCodeFor, REPLY } = require('./socks5-proxy');
const { startConnectProxy, parseAuthority, statusFor } = require('./connect-proxy');

const HOST = '127.0.0.1';
const WAIT_MS = 3000;

/**
 * A TCP target on 127.0.0.1 that greets every connection with `greeting`,
 * answers every chunk with "echo:" + chunk, and keeps what it received.
 */
async function startTarget(greeting = 'hello from target\n') {
  const received = [];
  const sockets = new Set();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    socket.write(greeting);
    socket.on('data', (chunk) => {
      received.push(chunk.toString('latin1'));
      socket.write(`echo:${chunk.toString('latin1')}`);
    });
  });
  await new Promise((resolve) => server.listen(0, HOST, resolve));
  return {
    port: server.address().port,
    received: () => received.join(''),
    close: () =>
      new Promise((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** A port on 127.0.0.1 nobody listens on (bound, then closed). */
async function closedPort() {
  const server = net.createServer();
  await new Promise((resolve) => server.listen(0, HOST, resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * A raw client: connect to the proxy, read with `until(bytes)` as the
 * condition. Every wait is bounded by WAIT_MS.
 */
async function rawClient(port) {
  const socket = net.connect(port, HOST);
  socket.on('error', () => {});
  let buffer = Buffer.alloc(0);
  let ended = false;
  const waiters = new Set();
  const wake = () => {
    for (const w of [...waiters]) w();
  };
  socket.on('data', (chunk) => {
    buffer = Buffer.concat([buffer, chunk]);
    wake();
  });
  socket.on('close', () => {
    ended = true;
    wake();
  });
  await new Promise((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  return {
    socket,
    /** Resolves the first `n` unread bytes (or what there is when the socket closed). */
    read(n, what = `${n} bytes`) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (buffer.length >= n || ended) {
            clearTimeout(timer);
            waiters.delete(check);
            const out = buffer.subarray(0, Math.min(n, buffer.length));
            buffer = buffer.subarray(out.length);
            resolve(out);
            return true;
          }
          return false;
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`timed out after ${WAIT_MS} ms waiting for ${what}`));
        }, WAIT_MS);
        if (!check()) waiters.add(check);
      });
    },
    /** Resolves every unread byte once `text` is among them. */
    readUntil(text) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const at = buffer.indexOf(text);
          if (at >= 0 || ended) {
            clearTimeout(timer);
            waiters.delete(check);
            const out = buffer;
            buffer = Buffer.alloc(0);
            resolve(out);
            return true;
          }
          return false;
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`timed out after ${WAIT_MS} ms waiting for ${JSON.stringify(text)}; have ${JSON.stringify(buffer.toString('latin1'))}`));
        }, WAIT_MS);
        if (!check()) waiters.add(check);
      });
    },
    /** Resolves true once the proxy closed the connection. */
    closed() {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (!ended) return false;
          clearTimeout(timer);
          waiters.delete(check);
          resolve(true);
          return true;
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`the proxy did not close the connection within ${WAIT_MS} ms`));
        }, WAIT_MS);
        if (!check()) waiters.add(check);
      });
    },
  };
}

// ---- SOCKS5 ------------------------------------------------------------------

/** VER CMD RSV ATYP ADDR PORT for an IPv4 address or a domain name. */
function socksRequest(host, port, command = 0x01) {
  const portBytes = [(port >> 8) & 0xff, port & 0xff];
  if (net.isIPv4(host)) return Buffer.from([0x05, command, 0x00, 0x01, ...host.split('.').map(Number), ...portBytes]);
  const name = Buffer.from(host, 'latin1');
  return Buffer.concat([Buffer.from([0x05, command, 0x00, 0x03, name.length]), name, Buffer.from(portBytes)]);
}

/** Greeting (no auth), then the request; resolves { client, reply } with the 10-byte reply. */
async function socksConnect(proxy, host, port, { command = 0x01, split = false } = {}) {
  const client = await rawClient(proxy.port);
  client.socket.write(Buffer.from([0x05, 0x01, 0x00]));
  const method = await client.read(2, 'the method selection');
  assert.deepEqual([...method], [0x05, 0x00], 'no authentication chosen');
  const request = socksRequest(host, port, command);
  if (split) {
    // The request in two writes: the proxy must wait for the whole of it.
    client.socket.write(request.subarray(0, 3));
    await new Promise((resolve) => setTimeout(resolve, 20));
    client.socket.write(request.subarray(3));
  } else client.socket.write(request);
  const reply = await client.read(10, 'the SOCKS reply');
  return { client, reply };
}

describe('socks5-proxy', () => {
  let proxy;
  let target;
  before(async () => {
    proxy = await startSocks5Proxy({});
    target = await startTarget();
  });
  after(async () => {
    await proxy.close();
    await target.close();
  });

  it('listens on 127.0.0.1 and names itself socks5://127.0.0.1:PORT', () => {
    assert.ok(proxy.port > 0);
    assert.equal(proxy.url, `socks5://127.0.0.1:${proxy.port}`);
  });

  it('CONNECT to an IPv4 target: reply 0x00 with the bound address, then bytes piped both ways', async () => {
    const before = proxy.connections.length;
    const { client, reply } = await socksConnect(proxy, HOST, target.port);
    assert.equal(reply[0], 0x05, 'version');
    assert.equal(reply[1], REPLY.SUCCEEDED, `reply code ${reply[1]}`);
    assert.equal(reply[3], 0x01, 'bound address is IPv4');
    assert.deepEqual([...reply.subarray(4, 8)], [127, 0, 0, 1]);
    assert.ok(reply.readUInt16BE(8) > 0, 'bound port');
    // target -> client
    assert.equal((await client.readUntil('\n')).toString('latin1'), 'hello from target\n');
    // client -> target, and its answer back
    client.socket.write('ping-1');
    assert.equal((await client.readUntil('echo:ping-1')).toString('latin1'), 'echo:ping-1');
    assert.ok(target.received().includes('ping-1'), `target got ${JSON.stringify(target.received())}`);
    assert.equal(proxy.connections.length, before + 1);
    assert.deepEqual(proxy.connections.at(-1), { host: HOST, port: target.port, reply: 0x00, error: null });
    client.socket.destroy();
  });

  it('CONNECT to the domain name localhost (address type 0x03), the request split over writes: piped', async () => {
    const { client, reply } = await socksConnect(proxy, 'localhost', target.port, { split: true });
    assert.equal(reply[1], REPLY.SUCCEEDED);
    await client.readUntil('hello from target\n');
    client.socket.write('ping-2');
    await client.readUntil('echo:ping-2');
    assert.ok(target.received().includes('ping-2'));
    assert.equal(proxy.connections.at(-1).host, 'localhost');
    client.socket.destroy();
  });

  it('bytes sent right after the request, before the reply, reach the target', async () => {
    const client = await rawClient(proxy.port);
    client.socket.write(Buffer.concat([Buffer.from([0x05, 0x01, 0x00]), socksRequest(HOST, target.port), Buffer.from('early-bytes')]));
    await client.read(2);
    const reply = await client.read(10);
    assert.equal(reply[1], REPLY.SUCCEEDED);
    await client.readUntil('echo:early-bytes');
    client.socket.destroy();
  });

  it('a refused target: reply 0x05 (connection refused), then the connection is closed', async () => {
    const port = await closedPort();
    const { client, reply } = await socksConnect(proxy, HOST, port);
    assert.equal(reply[0], 0x05);
    assert.equal(reply[1], REPLY.CONNECTION_REFUSED, `reply code ${reply[1]}`);
    assert.equal(reply[1], 0x05);
    assert.equal(await client.closed(), true);
    assert.deepEqual(proxy.connections.at(-1), { host: HOST, port, reply: 0x05, error: 'ECONNREFUSED' });
  });

  it('a target other than 127.0.0.1 is never connected to: reply 0x02 (not allowed)', async () => {
    const { client, reply } = await socksConnect(proxy, '10.255.255.1', 443);
    assert.equal(reply[1], REPLY.NOT_ALLOWED);
    assert.equal(await client.closed(), true);
  });

  it('BIND (0x02) gets reply 0x07 (command not supported)', async () => {
    const { client, reply } = await socksConnect(proxy, HOST, target.port, { command: 0x02 });
    assert.equal(reply[1], REPLY.COMMAND_NOT_SUPPORTED);
    assert.equal(await client.closed(), true);
  });

  it('IPv6 (address type 0x04) gets reply 0x08 (address type not supported)', async () => {
    const client = await rawClient(proxy.port);
    client.socket.write(Buffer.from([0x05, 0x01, 0x00]));
    await client.read(2);
    client.socket.write(Buffer.concat([Buffer.from([0x05, 0x01, 0x00, 0x04]), Buffer.alloc(15), Buffer.from([1, 0x01, 0xbb])]));
    const reply = await client.read(10);
    assert.equal(reply[1], REPLY.ADDRESS_TYPE_NOT_SUPPORTED);
  });

  it('a client that offers no "no authentication" method gets 0xFF and is closed', async () => {
    const client = await rawClient(proxy.port);
    client.socket.write(Buffer.from([0x05, 0x01, 0x02]));
    assert.deepEqual([...(await client.read(2))], [0x05, 0xff]);
    assert.equal(await client.closed(), true);
  });

  it('replyCodeFor: the reply codes of target errors, as a real proxy answers them', () => {
    const code = (c) => replyCodeFor(Object.assign(new Error(c), { code: c }));
    assert.equal(code('ECONNREFUSED'), 0x05);
    assert.equal(code('EHOSTUNREACH'), 0x04);
    assert.equal(code('ENETUNREACH'), 0x03);
    assert.equal(code('ETIMEDOUT'), 0x06);
    assert.equal(code('ECONNRESET'), 0x01);
    assert.equal(replyCodeFor(null), 0x01);
  });

  it('close() ends open tunnels and the listener', async () => {
    const own = await startSocks5Proxy({});
    const { client, reply } = await socksConnect(own, HOST, target.port);
    assert.equal(reply[1], 0x00);
    await own.close();
    assert.equal(await client.closed(), true);
    await assert.rejects(rawClient(own.port), (e) => e.code === 'ECONNREFUSED');
  });
});

// ---- HTTP CONNECT ------------------------------------------------------------

/** Sends `CONNECT authority` (plus `extra` bytes in the same write); resolves { client, head, rest }. */
async function httpConnect(proxy, authority, extra = '') {
  const client = await rawClient(proxy.port);
  client.socket.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n${extra}`);
  const bytes = (await client.readUntil('\r\n\r\n')).toString('latin1');
  const end = bytes.indexOf('\r\n\r\n');
  assert.ok(end >= 0, `no answer head: ${JSON.stringify(bytes)}`);
  return { client, head: bytes.slice(0, end), rest: bytes.slice(end + 4) };
}

describe('connect-proxy', () => {
  let proxy;
  let target;
  before(async () => {
    proxy = await startConnectProxy();
    target = await startTarget();
  });
  after(async () => {
    await proxy.close();
    await target.close();
  });

  it('listens on 127.0.0.1 and names itself http://127.0.0.1:PORT', () => {
    assert.ok(proxy.port > 0);
    assert.equal(proxy.url, `http://127.0.0.1:${proxy.port}`);
  });

  it('CONNECT to a listening target: "HTTP/1.1 200 Connection established", then bytes piped both ways', async () => {
    const before = proxy.connections.length;
    const { client, head, rest } = await httpConnect(proxy, `${HOST}:${target.port}`);
    assert.equal(head, 'HTTP/1.1 200 Connection established');
    const greeting = rest.length > 0 ? rest : (await client.readUntil('\n')).toString('latin1');
    assert.equal(greeting, 'hello from target\n');
    client.socket.write('ping-3');
    assert.equal((await client.readUntil('echo:ping-3')).toString('latin1'), 'echo:ping-3');
    assert.ok(target.received().includes('ping-3'));
    assert.equal(proxy.connections.length, before + 1);
    assert.deepEqual(proxy.connections.at(-1), { host: HOST, port: target.port, status: 200, error: null });
    client.socket.destroy();
  });

  it('bytes sent with the CONNECT head (before the 200) reach the target', async () => {
    const { client } = await httpConnect(proxy, `localhost:${target.port}`, 'early-bytes');
    await client.readUntil('echo:early-bytes');
    assert.ok(target.received().includes('early-bytes'));
    client.socket.destroy();
  });

  it('a refused target: "HTTP/1.1 503 Service Unavailable" with a short body, then closed', async () => {
    const port = await closedPort();
    const { client, head, rest } = await httpConnect(proxy, `${HOST}:${port}`);
    const lines = head.split('\r\n');
    assert.equal(lines[0], 'HTTP/1.1 503 Service Unavailable');
    const length = Number(/^content-length: (\d+)$/im.exec(head)[1]);
    assert.ok(length > 0 && length < 200, `body length ${length}`);
    let body = rest;
    if (body.length < length) body += (await client.read(length - body.length)).toString('latin1');
    assert.match(body, /refused/);
    assert.equal(await client.closed(), true);
    assert.deepEqual(proxy.connections.at(-1), { host: HOST, port, status: 503, error: 'ECONNREFUSED' });
  });

  it('statusFor: 503 for a refused target, 502 Bad Gateway for any other target error', () => {
    const status = (c) => statusFor(Object.assign(new Error(c), { code: c }));
    assert.deepEqual(status('ECONNREFUSED'), { status: 503, reason: 'Service Unavailable' });
    assert.deepEqual(status('EHOSTUNREACH'), { status: 502, reason: 'Bad Gateway' });
    assert.deepEqual(status('ETIMEDOUT'), { status: 502, reason: 'Bad Gateway' });
    assert.deepEqual(status('ECONNRESET'), { status: 502, reason: 'Bad Gateway' });
  });

  it('a target other than 127.0.0.1 is never connected to: 403', async () => {
    const { client, head } = await httpConnect(proxy, '10.255.255.1:443');
    assert.match(head, /^HTTP\/1\.1 403 Forbidden/);
    assert.equal(await client.closed(), true);
  });

  it('a CONNECT target that is not host:port: 400', async () => {
    const { head } = await httpConnect(proxy, 'no-port-here');
    assert.match(head, /^HTTP\/1\.1 400 /);
  });

  it('a plain GET is not proxied: 405', async () => {
    const client = await rawClient(proxy.port);
    client.socket.write(`GET http://${HOST}:${target.port}/ HTTP/1.1\r\nHost: ${HOST}\r\n\r\n`);
    const head = (await client.readUntil('\r\n\r\n')).toString('latin1');
    assert.match(head, /^HTTP\/1\.1 405 /);
    assert.equal(target.received().includes('GET'), false);
  });

  it('parseAuthority: host:port and [v6]:port; anything else null', () => {
    assert.deepEqual(parseAuthority('127.0.0.1:6443'), { host: '127.0.0.1', port: 6443 });
    assert.deepEqual(parseAuthority('[::1]:443'), { host: '::1', port: 443 });
    assert.equal(parseAuthority('127.0.0.1'), null);
    assert.equal(parseAuthority('127.0.0.1:0'), null);
    assert.equal(parseAuthority('127.0.0.1:70000'), null);
  });

  it('close() ends open tunnels and the listener', async () => {
    const own = await startConnectProxy();
    const { client, head } = await httpConnect(own, `${HOST}:${target.port}`);
    assert.equal(head, 'HTTP/1.1 200 Connection established');
    await own.close();
    assert.equal(await client.closed(), true);
    await assert.rejects(rawClient(own.port), (e) => e.code === 'ECONNREFUSED');
  });
});
