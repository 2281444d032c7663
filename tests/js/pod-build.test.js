'use strict';
// The pod program (pod/*.sh) and its build (scripts/build-pod.js): the
// source is shellcheck clean, the compact form is what the package sends and
// parses under dash, BusyBox sh and bash, the status table is the core's,
// and each rule of the build refuses what would change the program's
// meaning.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const build = require('../../scripts/build-pod');
const core = require('../../pkg/k8s_auth_preflight.js');

const ROOT = path.join(__dirname, '..', '..');
const read = (name) => fs.readFileSync(path.join(build.POD, name), 'utf8');
const table = () => core.podShellTable();

/** Each step's source with its libraries in place, as shellcheck should see it. */
function expanded(step) {
  return build.inline(read(`${step}.sh`), (name) => (name === build.TABLE ? table() : read(name)));
}

/** A program to run, or a skip (a failure on CI, where setup.sh installs it). */
function needs(t, program) {
  const found = spawnSync('sh', ['-c', `command -v ${program}`], { encoding: 'utf8' }).stdout.trim();
  if (found) return found;
  if (process.env.CI === 'true') assert.fail(`${program} is missing: scripts/setup.sh --for-tests installs it`);
  t.skip(`${program} is not installed (scripts/setup.sh --for-tests installs it)`);
  return null;
}

test('the status table in pod/lib/table.sh is the core\'s, written by it (node scripts/build-pod.js --write)', () => {
  assert.equal(read(build.TABLE), table());
  assert.match(table(), /^POD_BROKE=97$/m);
});

test('the scripts the package sends are the build of the pod program\'s source, as it is now', () => {
  const shipped = require('../../pkg/pod-program.js');
  assert.deepEqual(Object.keys(shipped).sort(), [...build.STEPS].sort());
  assert.deepEqual(shipped, build.buildAll(table()));
  // The tarball carries them.
  const files = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')).files;
  assert.ok(files.includes('pkg/pod-program.js'));
});

test('the pod program\'s source is shellcheck clean as sh, each step with its libraries in place', (t) => {
  const shellcheck = needs(t, 'shellcheck');
  if (!shellcheck) return;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pod-shellcheck-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  for (const step of build.STEPS) {
    const file = path.join(dir, `${step}.sh`);
    fs.writeFileSync(file, expanded(step));
    const r = spawnSync(shellcheck, ['-s', 'sh', file], { encoding: 'utf8' });
    assert.equal(r.status, 0, `${step}: ${r.stdout}${r.stderr}`);
  }
  // Each file alone too, as a reviewer's editor checks it (pod/.shellcheckrc).
  const files = ['.', 'lib'].flatMap((dir) => fs.readdirSync(path.join(build.POD, dir)).filter((f) => f.endsWith('.sh')).map((f) => path.join(dir, f)));
  for (const file of files) {
    const r = spawnSync(shellcheck, ['-s', 'sh', file], { cwd: build.POD, encoding: 'utf8' });
    assert.equal(r.status, 0, `${file}: ${r.stdout}${r.stderr}`);
  }
  // And it can fail: an unquoted expansion is reported.
  const bad = path.join(dir, 'bad.sh');
  fs.writeFileSync(bad, `${expanded('attach')}\necho $run_path\n`);
  assert.notEqual(spawnSync(shellcheck, ['-s', 'sh', bad]).status, 0);
});

test('every compact script parses under dash, BusyBox sh and bash', (t) => {
  const shells = [
    ['dash', needs(t, 'dash')],
    ['busybox', needs(t, 'busybox')],
    ['bash', needs(t, 'bash')],
  ].filter(([, found]) => found);
  const scripts = build.buildAll(table());
  for (const [name, shell] of shells) {
    const argv = (script) => (name === 'busybox' ? [shell, ['sh', '-n', '-c', script]] : [shell, ['-n', '-c', script]]);
    for (const [step, script] of Object.entries(scripts)) {
      const [program, args] = argv(script);
      const r = spawnSync(program, args, { encoding: 'utf8' });
      assert.equal(r.status, 0, `${name}, ${step}: ${r.stderr}`);
    }
    // (A script that does not parse is refused: the check can fail.)
    const [program, args] = argv('if true; then');
    assert.notEqual(spawnSync(program, args).status, 0, name);
  }
});

test('the compact form keeps no comment, blank line or indentation, and no space around ; && || | outside quotes', () => {
  assert.equal(build.compact('# a comment\n\n\tif a ; then\n\t\tb && c || d | e\n\tfi\n'), 'if a;then\nb&&c||d|e\nfi');
  // Quoted text is the program's data: left as it is.
  assert.equal(build.compact(`printf '%s ; %s\\n' "a | b" ;  echo "x  &&  y"`), `printf '%s ; %s\\n' "a | b";echo "x  &&  y"`);
  assert.equal(build.compact('case $x in a | b) y ;; esac'), 'case $x in a|b) y;;esac');
  // A comment after code would need a shell's reading of words to strip.
  assert.throws(() => build.compact('echo a # why'), /a comment after code/);
  assert.throws(() => build.compact("echo 'a"), /quote is never closed/);
});

test('the libraries are put in place once each, and the table\'s constants in place of their names', () => {
  const files = { 'a.sh': '. ./lib/x.sh\n. ./lib/y.sh\n', 'lib/x.sh': 'x\n', 'lib/y.sh': '. ./lib/x.sh\n' };
  assert.throws(() => build.inline(files['a.sh'], (n) => files[n]), /lib\/x.sh is sourced twice/);
  assert.equal(build.inline('a\n. ./lib/x.sh\nb', (n) => files[n]), 'a\nx\n\nb');
  assert.equal(build.constants('POD_A=97\nPOD_L=\'x y\'\nexit "$POD_A"\nfor u in $POD_L; do :; done\necho ${POD_A}'), '\n\nexit 97\nfor u in x y; do :; done\necho 97');
  assert.throws(() => build.constants('exit "$POD_NONE"'), /POD_NONE is not in the table/);
  assert.throws(() => build.constants('POD_A=1\necho POD_A'), /a POD_ name is left/);
});

test('our names become short _K names in order of first appearance; one set and not ours, or a function named where no command starts, fails the build', () => {
  const named = build.ownNames('count=1\nread -r first second <f\nfor item in $list; do echo "${count}x $((count + second))"; done\nshow() {\necho "$item.count"\n}\nshow\n[ -n "$x" ]&&show');
  assert.equal(named, '_Ka=1\nread -r _Kb _Kc <f\nfor _Kd in $_Ke; do echo "${_Ka}x $((_Ka + _Kc))"; done\n_Kf() {\necho "$_Kd.count"\n}\n_Kf\n[ -n "$_Kg" ]&&_Kf');
  assert.equal(build.letters(0), 'a');
  assert.equal(build.letters(25), 'z');
  assert.equal(build.letters(26), 'ba');
  // The environment's names are not renamed, and only LC_ALL and IFS may be set.
  assert.equal(build.ownNames('LC_ALL=C\nIFS=:\necho "$PATH"'), 'LC_ALL=C\nIFS=:\necho "$PATH"');
  assert.throws(() => build.ownNames('PATH=/bin'), /sets PATH, which is not a name of its own/);
  assert.throws(() => build.ownNames('read -r HOME <f'), /sets HOME/);
  // A read's options before its names (bash's -d '') leave the names renamed, and checked.
  assert.equal(build.ownNames("read -r -d '' entry <f\necho \"$entry\""), "read -r -d '' _Ka <f\necho \"$_Ka\"");
  assert.throws(() => build.ownNames("read -r -d '' HOME <f"), /sets HOME/);
  assert.throws(() => build.ownNames('show() {\n:\n}\necho show'), /function show is named where no command starts/);
  assert.throws(() => build.ownNames('show() {\n:\n}\nshow=1'), /show is a function and a variable/);
});

test('the whole pod program builds with every rule, and its scripts name no variable the container could have set', () => {
  for (const [step, script] of Object.entries(build.buildAll(table()))) {
    for (const m of script.matchAll(/\$\{?([A-Za-z_][A-Za-z0-9_]*)/g)) {
      assert.ok(m[1].startsWith('_K') || ['LC_ALL', 'TMPDIR', 'PATH', 'BASH_VERSION'].includes(m[1]), `${step} reads $${m[1]}`);
    }
    assert.doesNotMatch(script, /^\s*#|POD_/m, step);
  }
});

test('the waiter\'s last word is read only whole: any part of it, split between two readers, is never taken for a code', (t) => {
  const shells = [needs(t, 'dash'), needs(t, 'bash')].filter(Boolean);
  const busybox = needs(t, 'busybox');
  const cases = {
    w1370: 'w|137|',
    w0031: 'w|3|1',
    w2550: 'w|255|',
    w0000: 'w|0|',
    w: 'w||',
    g: 'g||',
    t: 't||',
  };
  // Parts of "w1370" and "w0031" as a reader that lost bytes to another
  // would see them, and the old shape: never a code.
  for (const part of ['w137', 'w13', 'w1', '1370', 'w370', 'w13701', 'w1370w', '0031', 'w031', 'w 137 ', 'w 3 1', 'ww1370', '']) cases[part] = 't||';
  const script = `. ./lib/table.sh; . ./lib/follow.sh; read_message; echo "$word_kind|$word_code|$word_lost"`;
  for (const [line, expected] of Object.entries(cases)) {
    for (const [program, args] of [...shells.map((s) => [s, ['-c', script]]), ...(busybox ? [[busybox, ['sh', '-c', script]]] : [])]) {
      // (read_message reads fd 3: the input is handed to it there.)
      const s = spawnSync(program, [...args.slice(0, -1), `exec 3<&0; ${args[args.length - 1]}`], { cwd: build.POD, input: `${line}\n`, encoding: 'utf8', timeout: 5000 });
      assert.equal(s.stdout.trim(), expected, `${program} read ${JSON.stringify(line)}: ${s.stderr}`);
    }
  }
});

test('each script starts by exiting NAME_TAKEN when any of its variables is set on entry, which only the environment can do', (t) => {
  assert.equal(build.nameGuard('_Ka() {\n:\n}\n_Kb=1\necho "$_Kc"', 92), '{ set +vx;} 2>/dev/null\n[ -z "${_Kb+x}${_Kc+x}" ]||exit 92\n_Ka() {\n:\n}\n_Kb=1\necho "$_Kc"');
  assert.throws(() => build.nameGuard('_Ka=1', undefined), /no POD_NAME_TAKEN/);
  const dash = needs(t, 'dash');
  if (!dash) return;
  const scripts = build.buildAll(table());
  const taken = Number(table().match(/^POD_NAME_TAKEN=(\d+)$/m)[1]);
  for (const [step, script] of Object.entries(scripts)) {
    const names = [...new Set(script.match(/_K[a-z]+/g))];
    const guard = script.split('\n')[1];
    const variable = guard.match(/_K[a-z]+/)[0];
    // Every variable the script reads or sets is in its guard.
    for (const name of names) {
      if (!new RegExp(`^${name}\\(\\) *\\{`, 'm').test(script)) assert.ok(guard.includes(`\${${name}+x}`), `${step}: ${name} is not guarded`);
    }
    const r = spawnSync(dash, ['-c', script, 'k8s-auth-preflight', 'a'.repeat(32), '0', '0', '0', 'true'], { env: { PATH: process.env.PATH, [variable]: 'x' }, encoding: 'utf8', timeout: 5000 });
    assert.equal(r.status, taken, `${step} with ${variable} set: ${r.stderr}`);
  }
});
