'use strict';
// The loopback apiserver of one whole job, run INSIDE a test's network
// namespace (`ns.spawnNode([this file, configJson])`, tests/support/netns.js),
// so that iptables rules on its port cut the job's real connections. It
// serves pods, secrets and exec with `podRoot` (every exec a real local
// process in the pod's folder, tests/support/apiserver-container.js) and
// grants the 13 default permissions.
//
// Config (argv[2], JSON): { podRoot, kubeconfig (a path to write),
// podRunningAfterMs?, maxRunMs?, podMounts? (the pods' volumes: apiserver.js) }.
//
// It prints one JSON line when it listens: { ev: 'ready', port, url,
// kubeconfig }, then answers requests, one JSON line each on stdin
// ({ id, op, ... }), with one JSON line on stdout ({ id, ok, result } or
// { id, ok: false, error }):
//   execs                    the exec log (stdin shortened to stdinHead, its
//                            first 200 characters; stdinBytes says how much came)
//   requests                 [{ route, status }] of every request so far
//   objects { resource }     'namespace/name' of the pods or secrets now
//   pids { pod }             the live processes of pod `pod` (namespace ci):
//                            [{ pid, ppid, pgid, sid, wchan (where it sleeps
//                            in the kernel), cmdline }], found by
//                            LOOPBACK_POD in /proc (zombies are not listed)
//   deletePod { name }       DELETE of the pod through the API (its processes
//                            are killed as the server deletes it): the HTTP status
//   closeOnceWithoutStatus { contains }
//                            the next exec whose command (joined with spaces)
//                            contains `contains` ends with a WebSocket close
//                            1000 and no status frame; later execs are healthy
//                            again (the setting is cleared as soon as one such
//                            exec has closed that way)
//   stall { ms, route? }     refuses every connection (the listener closed,
//                            open ones destroyed) for `ms`, then healthy
//                            again: at once, or when the first request on
//                            `route` ('create pods', 'get pods', 'exec pods',
//                            ...) arrives, before it is answered
//   phases                   [{ phase, atMs }] of every phase change so far
//   disarm                   drops a stall whose route never came
//   close                    closes the server (kills its processes) and exits
// Its stdin ending closes it too.

const fs = require('node:fs');
const https = require('node:https');
const readline = require('node:readline');

const { startApiServer } = require('../../support/apiserver');
const { MARKER } = require('../../support/apiserver-container');
const { fullRole } = require('./roles');

const TOKEN = 'job-run-token';
const NAMESPACE = 'ci';
const ONE_SHOT_POLL_MS = 5;

function livePids(pod) {
  // apiserver-container.js marks each process <server id>/<namespace>/<pod>/ (percent-encoded names).
  const suffix = `/${encodeURIComponent(NAMESPACE)}/${encodeURIComponent(pod)}/`;
  const out = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    let environ;
    let cmdline = '';
    let stat = '';
    let wchan = '';
    try {
      environ = fs.readFileSync(`/proc/${entry}/environ`, 'latin1');
      cmdline = fs.readFileSync(`/proc/${entry}/cmdline`, 'latin1').split('\0').filter(Boolean).join(' ');
      stat = fs.readFileSync(`/proc/${entry}/stat`, 'latin1');
      wchan = fs.readFileSync(`/proc/${entry}/wchan`, 'latin1');
    } catch {
      continue; // gone, or a zombie
    }
    const mark = environ.split('\0').find((kv) => kv.startsWith(`${MARKER}=`));
    if (!mark || !mark.endsWith(suffix)) continue;
    // After "(comm)": state ppid pgrp session ...
    const [, ppid, pgid, sid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    out.push({ pid: Number(entry), ppid: Number(ppid), pgid: Number(pgid), sid: Number(sid), wchan, cmdline });
  }
  return out;
}

function deletePod(server, name) {
  return new Promise((resolve, reject) => {
    const url = new URL(`${server.url}/api/v1/namespaces/${NAMESPACE}/pods/${encodeURIComponent(name)}?gracePeriodSeconds=0`);
    const req = https.request(url, { method: 'DELETE', ca: server.caPem, headers: { authorization: `Bearer ${TOKEN}` }, timeout: 5000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    });
    req.on('timeout', () => req.destroy(new Error('delete timed out')));
    req.on('error', reject);
    req.end();
  });
}

async function main() {
  const config = JSON.parse(process.argv[2]);
  const server = await startApiServer({
    token: TOKEN,
    namespace: NAMESPACE,
    role: fullRole(),
    podRunningAfterMs: config.podRunningAfterMs ?? 1500,
    podRoot: config.podRoot,
    podMounts: config.podMounts || [],
  });
  server.writeKubeconfig(config.kubeconfig);
  let closing = null;
  const close = () => {
    if (!closing) closing = server.close().finally(() => setImmediate(() => process.exit(0)));
    return closing;
  };
  setTimeout(() => {
    process.stderr.write('netns-job-server: maxRunMs reached, stopping\n');
    close();
  }, config.maxRunMs ?? 600_000).unref();

  const ops = {
    execs: () => server.execs.map(({ stdin, ...rest }) => ({ ...rest, stdinHead: typeof stdin === 'string' ? stdin.slice(0, 200) : stdin })),
    requests: () => server.requests.map((r) => ({ route: r.route, status: r.status })),
    objects: ({ resource }) => server.objects(resource),
    pids: ({ pod }) => livePids(pod),
    deletePod: ({ name }) => deletePod(server, name),
    stall: ({ ms, route }) => {
      const timeline = [{ phase: 'refuse', ms }, { phase: 'healthy' }];
      if (route) server.armTrigger({ route }, timeline);
      else server.runTimeline(timeline);
      return true;
    },
    phases: () => server.phaseHistory.map(({ phase, atMs }) => ({ phase, atMs })),
    disarm: () => {
      server.disarmTriggers();
      return true;
    },
    closeOnceWithoutStatus: ({ contains }) => {
      server.configure({ execResults: [{ contains, closeWithoutStatus: true }] });
      const from = server.execs.length;
      const timer = setInterval(() => {
        const hit = server.execs.slice(from).some((e) => e.outcome === 'closed-without-status');
        if (hit) {
          server.configure({ execResults: [] });
          clearInterval(timer);
        }
      }, ONE_SHOT_POLL_MS);
      return true;
    },
    close: async () => {
      await close();
      return true;
    },
  };

  const rl = readline.createInterface({ input: process.stdin });
  rl.on('line', async (line) => {
    let id = null;
    try {
      const msg = JSON.parse(line);
      id = msg.id;
      const op = ops[msg.op];
      if (!op) throw new Error(`unknown op ${JSON.stringify(msg.op)}`);
      const result = await op(msg);
      process.stdout.write(`${JSON.stringify({ id, ok: true, result })}\n`);
    } catch (error) {
      process.stdout.write(`${JSON.stringify({ id, ok: false, error: String((error && error.stack) || error) })}\n`);
    }
  });
  rl.on('close', () => close());
  process.stdout.write(`${JSON.stringify({ ev: 'ready', port: server.port, url: server.url, kubeconfig: config.kubeconfig })}\n`);
}

main().catch((error) => {
  process.stderr.write(`netns-job-server: ${(error && error.stack) || error}\n`);
  process.exit(1);
});
