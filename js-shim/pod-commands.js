'use strict';
// The pod-side commands of a durable exec, one per step the core asks for
// (src/durable/action.rs, `PodStep`): `sh -c <script> k8s-auth-preflight
// <run id> <stdout offset> <stderr offset> [<command>...]`. Only `sh`, its
// builtins and the utilities the core lists (docs/CALLS.md) are used. The
// exit statuses are the ones the core reads (`StepEnd`): 0 done, 96 no
// folder can be made, 98 the run has no folder, 200 + i utility i missing;
// every other status is the step breaking. The command's own output and
// exit code never pass through these statuses.

// The run's folder, in the container's temp folder.
const FOLDER = 'b="${TMPDIR:-/tmp}/k8s-auth-preflight"; d="$b/$1"; o=$(($2)); e=$(($3)); shift 3';

// Sends what the output files hold past the offsets: stdout to stdout,
// stderr to stderr, each exactly once. A reader that went away (the stream
// was cut) ends this exec: `head` dies of SIGPIPE.
const DRAIN = [
  'drain() {',
  '  n=$(($(wc -c <"$d/out")))',
  '  if [ "$n" -gt "$o" ]; then tail -c +$((o + 1)) "$d/out" 2>/dev/null | head -c $((n - o)) || exit 1; o=$n; fi',
  '  n=$(($(wc -c <"$d/err")))',
  '  if [ "$n" -gt "$e" ]; then tail -c +$((e + 1)) "$d/err" 2>/dev/null | head -c $((n - e)) >&2 || exit 1; e=$n; fi',
  '}',
].join('\n');

// Streams until the command has ended and all its output is sent. The wake
// FIFO is opened read-write (never blocks) before the end is looked for, so
// an end written after the look wakes the read; a tick each second bounds
// the wait otherwise.
const ATTACH = [
  DRAIN,
  '[ -d "$d" ] || exit 98',
  'exec 3<>"$d/wake"',
  'while :; do',
  '  [ -d "$d" ] || exit 98',
  '  if [ -f "$d/code" ]; then drain; exit 0; fi',
  '  drain',
  '  ( sleep 1; echo t 1<>"$d/wake" ) >/dev/null 2>&1 &',
  '  t=$!',
  '  read -r _ <&3',
  '  kill "$t" 2>/dev/null',
  'done',
].join('\n');

// The detached command: a session of its own (so a cut stream neither
// signals nor blocks it, and its group can be stopped), stdin from
// /dev/null, output to files, its exit code written when it ends (moved into
// place whole), then the attach is woken.
const LAUNCH =
  `setsid sh -c 'echo $$ >"$0/pid"; "$@" </dev/null >>"$0/out" 2>>"$0/err"; echo $? >"$0/code.tmp"; mv "$0/code.tmp" "$0/code"; echo w 1<>"$0/wake"' "$d" "$@" </dev/null >/dev/null 2>&1 &`;

function startScript(utilities) {
  const names = utilities.map((u) => {
    if (!/^[a-z0-9-]+$/.test(u)) throw new TypeError(`not a utility name: ${JSON.stringify(u)}`);
    return u;
  });
  return [
    FOLDER,
    // Nothing is claimed before every utility is known to be there.
    `i=200; for u in ${names.join(' ')}; do command -v "$u" >/dev/null 2>&1 || exit "$i"; i=$((i + 1)); done`,
    'mkdir -p "$b" 2>/dev/null',
    // The claim: only one mkdir of the run's folder succeeds, ever.
    'if mkdir "$d" 2>/dev/null; then',
    '  : >"$d/out" && : >"$d/err" && mkfifo "$d/wake" || { rm -rf "$d"; exit 96; }',
    `  ${LAUNCH}`,
    'elif [ ! -d "$d" ]; then exit 96',
    'fi',
    ATTACH,
  ].join('\n');
}

const SCRIPTS = {
  look: () => [FOLDER, '[ -d "$d" ] || exit 98'].join('\n'),
  attach: () => [FOLDER, ATTACH].join('\n'),
  finish: () => [FOLDER, '[ -f "$d/code" ] || exit 98', 'cat "$d/code"'].join('\n'),
  cleanup: () => [FOLDER, 'rm -rf "$d"'].join('\n'),
  // TERM to the command's group, up to 2 s for it to end, then KILL.
  kill: () =>
    [
      FOLDER,
      '[ -d "$d" ] || exit 0',
      'p=$(cat "$d/pid" 2>/dev/null)',
      'if [ -n "$p" ]; then',
      '  kill -TERM -"$p" 2>/dev/null',
      '  i=0; while [ ! -f "$d/code" ] && [ "$i" -lt 2 ]; do sleep 1; i=$((i + 1)); done',
      '  kill -KILL -"$p" 2>/dev/null',
      'fi',
      'rm -rf "$d"',
    ].join('\n'),
};

/**
 * The exec command of `action` (an `exec` action of the core): `received`
 * holds the bytes of stdout and stderr received so far, `command` is the
 * caller's command (only a start step runs it).
 */
function podCommand(action, received, command) {
  if (!/^[0-9a-f]{32}$/.test(action.run)) throw new TypeError(`not a run id: ${JSON.stringify(action.run)}`);
  const script = action.step === 'start' ? startScript(action.utilities) : SCRIPTS[action.step] && SCRIPTS[action.step]();
  if (!script) throw new TypeError(`not a pod step: ${JSON.stringify(action.step)}`);
  const args = [action.run, String(received.out), String(received.err)];
  return ['sh', '-c', script, 'k8s-auth-preflight', ...args, ...(action.step === 'start' ? command : [])];
}

module.exports = { podCommand };
