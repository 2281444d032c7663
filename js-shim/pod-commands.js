'use strict';
// The pod-side commands of a durable exec, one per step the core asks for
// (src/durable/action.rs, `PodStep`): `sh -c <script> k8s-auth-preflight
// <run id> <stdout offset> <stderr offset> <n> <n run ids> [<command>...]`
// (the run ids: delivered runs to clean up). Only `sh`, its
// builtins and the utilities the core lists (docs/CALLS.md) are used. The
// core reads the exit statuses (`StepEnd`): a start or an attach that has
// sent all of the command's output exits with the command's code; the
// statuses of our own (95 the command is not a program, 96 no folder can be
// made, 97 the step broke or the output sent does not add up, 98 the run has
// no folder, 94 the process that waits for the command ended without its
// code, 200 + i utility i missing) are confirmed by a finish step, since the
// command may exit with them too.
//
// A run's files are `<run id>.<name>` in `.k8s-auth-preflight` in the
// container's temp folder (a dot folder: `rm -rf "$TMPDIR"/*` leaves it),
// side by side: no folder is made per run (each `mkdir` is a process, paid
// by every healthy exec). When the command has ended and its output is
// sent, `done` holds the code and the sizes of stdout and stderr; once the
// code has reached the host, a clean-up removes everything else, and
// `done` stays (with the claim's mark): a start that arrives late finds the
// run claimed, and a reattach knows whether it got everything.

// A run's files but `done` and the claim's mark `c` (what a clean-up removes).
const FILES = ['out', 'err', 'ep', 'op', 'wake', 'pid', 'w', 'code', 'lost'];

// The run's path (its files' names without their last part) and the offsets; the files of the delivered runs named
// after them are removed, by one `rm` in the background (a start carries
// them: the clean-up of a run made in passing, or one the host could not
// wait for; run ids are hex, so the list splits into its names and no
// more); the command is left in "$@".
// Our utilities run in the C locale (a utility that loads a locale, as
// GNU coreutils does for LANG=C.UTF-8, takes about twice as long to start).
const C_LOCALE = 'lx=;la=;[ -n "${LC_ALL+x}" ]&&{ la=$LC_ALL;lx=1;};LC_ALL=C;export LC_ALL';
// What the command gets back: the caller's LC_ALL, set or unset as it was.
const RESTORE_ENV = 'if [ -n "$lx" ];then LC_ALL=$la;else unset LC_ALL;fi';

const FOLDER = [
  // (A relative temp folder is the exec's working folder's; "./" keeps a
  // name starting with "-" from reading as an option.)
  // The shell's own complaints (a job killed, a file not there) are not
  // the command's stderr: fd 2 goes to /dev/null, and the command's stderr
  // is written to fd 6, the exec's own; nothing started from here keeps 6.
  'exec 6>&2 2>/dev/null',
  // Options a shell may take from the environment (bash's SHELLOPTS:
  // errexit, nounset, pipefail, noclobber, allexport) would change what the
  // scripts do; they are turned off here (the command gets its environment
  // as it was).
  'set +a +e +f +u +v +x +C;command set +o pipefail 2>/dev/null',
  // A write past a file size limit fails instead of killing what writes
  // (SIGXFSZ): a waiter killed so would leave no word at all. The command
  // gets the signal's disposition back.
  "trap '' XFSZ",
  C_LOCALE,
  'b="${TMPDIR:-/tmp}";case "$b" in /*);;*)b="./$b";;esac;tf=${b%/};b="$b/.k8s-auth-preflight";r=$1;d="$b/$r";cm=/dev/shm/.k8s-auth-preflight;cv=/var/tmp/.k8s-auth-preflight;',
  // (The claims are kept apart from the temp folder, which a command may
  // empty: not in it, nor below it.)
  'case "$cv/" in "$tf"/*)cv=;;esac;case "$cm/" in "$tf"/*)cm=$cv;;esac;o=$(($2));e=$(($3));k=$(($4));shift 4;so="$d.out";se="$d.err";wp=',
  `clean(){ rm -f ${FILES.map((f) => `"$1.${f}"`).join(' ')};}`,
  `l=;while [ "$k" -gt 0 ];do { [ -s "$b/$1.done" ]||[ -e "$b/$1.lost" ];}&&l="$l ${FILES.map((f) => `$1.${f}`).join(' ')}";k=$((k-1));shift;done`,
  '[ -z "$l" ]||{ (cd "$b"&&exec rm -f $l) </dev/null >/dev/null 6>&- & }',
].join('\n');

// Sends what the output files hold past the offsets, stdout to stdout and
// stderr to stderr, each byte once; `m` says whether anything moved. A
// reader whose stream was cut ends here: `head` dies of SIGPIPE. The files
// are read through `$so` and `$se`: their names, or, once a reader holds
// them open, its descriptors (/proc/self/fd/4 and 5, opened anew by each
// utility), so a command that empties its temp folder, ours included,
// still has its output sent.
const DRAIN = [
  'drain(){ m=0',
  'if [ -s "$so" ];then n=$(($(wc -c <"$so")))',
  'if [ "$n" -gt "$o" ];then tail -c +$((o+1)) "$so"|head -c $((n-o))||exit 97;o=$n;m=1;fi;fi',
  'if [ -s "$se" ];then n=$(($(wc -c <"$se")))',
  'if [ "$n" -gt "$e" ];then tail -c +$((e+1)) "$se"|head -c $((n-e)) >&6||exit 97;e=$n;m=1;fi;fi',
  '}',
].join('\n');

// The run is done: its code and the sizes of its output ("-" when the
// reader did not count them), in one write (a reader looks for a file that
// is not empty: `-s`).
const DONE = 'printf "%s %s %s\\n" "$c" "$o" "$e" >"$d.done"';

// The sizes of the output files, into `zo` and `ze`, when `done` did not
// give them: the files are whole once the code is written.
const SIZES = '[ "$zo" = - ]&&{ [ -f "$so" ]&&[ -f "$se" ]||exit 97;zo=$(($(wc -c <"$so")));ze=$(($(wc -c <"$se")));}';

// Streams until the command has ended and all its output is sent, writes
// `done`, and exits with the command's code. A run already done sends what
// is left past the offsets and exits with its code, or 97 when what was
// sent does not add up to its sizes (its files are gone). The wake
// FIFO is opened read-write (never blocks) before the end is looked for, so
// an end written after the look wakes the read; otherwise a tick, written
// through the open descriptor (the folder may have been removed), wakes it:
// every 0.1 s for 2 s after output moved (or after the start), then every
// second (a `sleep` without fractions sleeps 1 s). The process that waits
// for the command and its relays (their pids in `w`) are looked at on each
// round: when the waiter has ended without writing the code (something
// killed it), waiting longer would never end.
const ATTACH = [
  DRAIN,
  // No code will come (what waits for the command was killed or stopped,
  // or could not write it): what the files hold is sent, and the status
  // says whether a relay failed (93: the output is incomplete) or not (94).
  'gone(){ drain;{ [ -e "$d.lost" ]||[ -n "$lw" ];}&&exit 93;exit 94;}',
  // The run is done (another reader wrote it, or a kill): send what is left
  // past the offsets, and exit with the code if that adds up.
  `over(){ read -r c zo ze <"$d.done";case "$c" in ''|*[!0-9]*)exit 97;;esac;${SIZES};drain;[ "$zo" = "$o" ]&&[ "$ze" = "$e" ]&&exit "$c";exit 97;}`,
  // The command ended: its files are whole. A status of ours is confirmed
  // by a finish step that compares the sizes with what arrived, so they are
  // counted; any other is the command's, and what is left is sent as is.
  'rest(){ case "$c" in 9[3-8]|12[67]|1[2-9][0-9]|2[0-5][0-9])drain;return;;esac',
  '[ -f "$so" ]&&[ -f "$se" ]||exit 97;[ -s "$so" ]&&{ tail -c +$((o+1)) "$so"||exit 97;};[ -s "$se" ]&&{ tail -c +$((e+1)) "$se" >&6||exit 97;};o=-;e=-;}',
  // The waiter's last word (w, the code and whether a relay failed, after
  // the code's file), read with the code's file gone (removed, or never
  // written: a full disk): the code it carries is the command's; with no
  // code, none will come.
  `word(){ case "$v" in ''|*[!0-9]*)gone;;esac;[ -z "$lw" ]||gone;c=$v;rest;[ -s "$d.done" ]||${DONE};exit "$c";}`,
  // The waiter has ended with no code's file: its last word, if it said
  // one, is in the wake FIFO, maybe behind ticks. A mark of our own put
  // after them bounds the read (it never waits).
  'lastword(){ echo g >&3;while read -r k v lw <&3;do case "$k" in w)word;;g)gone;;esac;done;gone;}',
  'attach(){',
  '[ -s "$d.done" ]&&over',
  // Files removed before the end: the record is gone. (A redirection that
  // fails ends a shell at `exec`: the files are looked at first.)
  '[ -f "$d.out" ]&&[ -f "$d.err" ]||exit 98',
  // (A start's reader has it already, as its waiter does: opened once.)
  '[ -n "$wf" ]||exec 3<>"$d.wake"',
  'exec 4<"$d.out" 5<"$d.err"',
  '[ -r /proc/self/fd/4 ]&&[ -r /proc/self/fd/5 ]&&{ so=/proc/self/fd/4;se=/proc/self/fd/5;}',
  'q=0',
  'while :;do',
  '[ -s "$d.done" ]&&over',
  // (A relay that could not write the output into its file left `lost`:
  // the output is incomplete, and no `done` says otherwise.)
  `if [ -s "$d.code" ];then read -r c <"$d.code";[ -e "$d.lost" ]&&gone;rest;[ -s "$d.done" ]||${DONE};exit "$c";fi`,
  'drain',
  '[ -n "$ry" ]||{ read -r wp rc ry <"$d.w";} 2>/dev/null',
  // A relay stopped (by the command, or one of its children) would never
  // end, nor would the waiter's wait for it: it is let go on.
  'for p in $rc $ry;do l=;{ read -r l <"/proc/$p/stat";} 2>/dev/null;l=${l##*) };case "${l%% *}" in T|t)kill -CONT "$p" 2>/dev/null;;esac;done',
  'if [ -n "$wp" ]&&[ -r /proc/$$/stat ];then z=;{ read -r _ _ z _ <"/proc/$wp/stat";} 2>/dev/null',
  'if [ -z "$z" ]||[ "$z" = Z ];then [ -s "$d.code" ]||lastword;fi;fi',
  // Nor will it when the command has ended and its parent (which holds its
  // status) is stopped, or it is gone and the waiter is stopped: a command
  // may stop what waits for it. (The command's state follows the last ")"
  // of its stat's first line; a zombie is confirmed by its status, whose
  // name is escaped: a name may hold a newline and a ") Z ".)
  '[ -n "$cp" ]||{ read -r cp <"$d.pid";} 2>/dev/null',
  'if [ -n "$cp" ]&&[ -r /proc/$$/stat ];then l=;z=;{ read -r l <"/proc/$cp/stat";} 2>/dev/null',
  'if [ -z "$l" ];then { read -r _ _ z _ <"/proc/$wp/stat";} 2>/dev/null',
  'else l=${l##*) };z=${l%% *};pp=',
  'if [ "$z" = Z ];then z=;{ while read -r k l _;do case "$k" in State:)z=$l;;PPid:)pp=$l;break;;esac;done <"/proc/$cp/status";} 2>/dev/null;fi',
  'if [ "$z" = Z ]&&[ -n "$pp" ];then z=;{ read -r _ _ z _ <"/proc/$pp/stat";} 2>/dev/null;else z=;fi;fi',
  // (The stopped waiter, or the command's parent where the waiter's pid is
  // not known, is killed: the step's shell waits for it.)
  'case "$z" in T|t)[ -s "$d.code" ]||{ kill -KILL "${wp:-$pp}" 2>/dev/null;gone;};;esac;fi',
  '[ "$m" = 1 ]&&q=0',
  'if [ "$q" -lt 20 ];then s=0.1;else s=1;fi;q=$((q+1))',
  '(sleep $s||sleep 1;echo t >&3) >/dev/null 6>&- &',
  't=$!',
  'read -r k v lw <&3',
  'kill "$t" 2>/dev/null',
  '[ "$k" = w ]&&[ ! -s "$d.code" ]&&[ ! -s "$d.done" ]&&word',
  'done',
  '}',
].join('\n');

// The detached command: a session of its own (a cut stream neither signals
// nor blocks it, and its group can be stopped), apart from the process that
// waits for it and the relays (a command that signals its own group, `kill
// 0`, stops only itself), stdin from /dev/null, run as a program (`exec`:
// never a builtin), stdout and stderr through relays into the files, so
// that output of children that outlive it still arrives, as a runtime's
// pipes wait for it. The exit code is written (in one write, into the
// folder made again if the command removed it) once both relays have ended,
// and before it `lost` when a relay failed (a full disk, a file size limit:
// the output is incomplete); then the reader is woken. Neither the waiter
// nor the command is an asynchronous list (`&`): a shell starts those with
// SIGINT and SIGQUIT ignored, and no shell can undo that. The waiter is a
// subshell (its pid and its relays' in `w`), the left
// side of a pipeline whose right side is the reader; this step's own shell
// stays until both have ended. The command is a subshell of the waiter that
// writes its pid (its own, read from /proc/self/stat: `$$` is the step's
// shell), opens the files (so that the waiter's note of how it ended never
// lands in the output) and becomes `setsid` and then the command, keeping
// its pid; without /proc, a shell in the new session writes its pid and
// becomes the command. Between writing its pid and becoming the command it
// looks for `done`: a kill writes it before it looks for the pid, so either
// the kill finds the pid, or the command finds `done` and never starts.
// With /proc, each output FIFO is opened once by name (read-write: never
// blocks) and handed on through /proc/self/fd, so a relay reads and the
// command writes the FIFO that was made even if its name is removed
// meanwhile (a relay waiting in `open` for a writer that never comes would
// hold the waiter for ever); the waiter keeps only write ends while the
// command runs (a relay that dies still leaves the command a pipe with no
// reader), and closes them when it has ended. A FIFO gone before that
// starts nothing: the last word carries no code. The last word goes
// through the wake FIFO the step's shell opened for the waiter and the
// reader alike, and carries the code: it arrives when the temp folder has
// been emptied.
// Every process started here is a fork or a small
// utility: each costs about a millisecond, paid by every healthy exec.
const LAUNCH = `(i=;[ -r /proc/self/stat ]&&read -r i iz </proc/self/stat
x=;if [ -n "$i" ];then
if command exec 7<>"$d.op" 9<>"$d.ep"&&[ -p /proc/self/fd/7 ]&&[ -p /proc/self/fd/9 ];then
cat </proc/self/fd/9 >>"$d.err" 3>&- 7<&- 9<&- & c=$!;cat </proc/self/fd/7 >>"$d.out" 3>&- 7<&- 9<&- & y=$!
exec 7>/proc/self/fd/7 9>/proc/self/fd/9;echo "$i $c $y" >"$d.w"
(read -r i iz </proc/self/stat;echo "$i" >"$d.pid";[ -w "$cm/$r" ]&&echo "$i" >"$cm/$r";exec </dev/null >&7 2>&9 3>&- 7>&- 9>&-;[ -s "$d.done" ]&&exit 98;${RESTORE_ENV};trap - XFSZ;exec setsid "$@");x=$?;exec 7>&- 9>&-;fi
else cat <"$d.ep" >>"$d.err" 3>&- & c=$!;cat <"$d.op" >>"$d.out" 3>&- & y=$!
(set -- "$d" "$@";${RESTORE_ENV};trap - XFSZ;exec setsid sh -c 'exec </dev/null >"$0.op" 2>"$0.ep" 3>&-;echo $$ >"$0.pid";[ -s "$0.done" ]&&exit 98;exec "$@"' "$@");x=$?;fi
[ -n "$x" ]||{ echo w >&3;exit;}
lo=;wait $y||lo=1;wait $c||lo=1
[ -d "$b" ]||mkdir -p "$b";[ -z "$lo" ]||: >"$d.lost";echo $x >"$d.code";echo "w $x $lo" >&3) </dev/null >/dev/null 6>&-|attach`;

// The claim: only one start ever makes it. Its mark is a file made with
// O_EXCL (`set -C`: the shell's own, no process; `true`, not `:`, whose
// failed redirection would end the shell) among the claims in /dev/shm, or
// else in /var/tmp, apart from the temp folder a command may empty, else
// (neither a folder that can be written) beside the run's files (`c`).
// The command writes its pid into the mark too, where a kill finds it when
// the command has removed the run's files. `own` is 1 when the claim is
// this step's; then the folder of the run's files exists, or the step
// exits 96. (Each folder is made once per container.)
const CLAIM = [
  '[ -z "$cm" ]||[ -d "$cm" ]||mkdir -p "$cm" 2>/dev/null',
  '{ [ -n "$cm" ]&&[ -d "$cm" ]&&[ -w "$cm" ];}||{ cm=$cv;[ -z "$cm" ]||[ -d "$cm" ]||mkdir -p "$cm" 2>/dev/null;}',
  '[ -d "$b" ]||mkdir -p "$b" 2>/dev/null',
  'own=0;if [ -n "$cm" ]&&[ -d "$cm" ]&&[ -w "$cm" ];then set -C;true >"$cm/$r"&&own=1;set +C',
  // (A mark that could not be made, and is not there, claims nothing: a
  // folder with no room for it.)
  '[ "$own" = 1 ]||[ -e "$cm/$r" ]||exit 96',
  // A second mark, in /var/tmp, witnesses the claim where the first one
  // is in /dev/shm: a temp folder that is /dev/shm by another name (a
  // link, "/dev//shm") may be emptied, first mark included, and a start
  // that arrives after that must not claim the run again.
  'if [ "$own" = 1 ]&&[ -n "$cv" ]&&[ "$cv" != "$cm" ];then [ -d "$cv" ]||mkdir -p "$cv" 2>/dev/null;if [ -e "$cv/$r" ];then own=0;else true >"$cv/$r";fi;fi',
  'if [ "$own" = 1 ];then [ -d "$b" ]||exit 96;fi',
  'else set -C;true >"$d.c"&&own=1;set +C;[ "$own" = 1 ]||[ -e "$d.c" ]||exit 96;fi',
].join('\n');

// Whether the run was claimed: its mark, or its files.
const CLAIMED = '{ { [ -n "$cm" ]&&[ -e "$cm/$r" ];}||{ [ -n "$cv" ]&&[ -e "$cv/$r" ];}||[ -e "$d.c" ]||[ -e "$d.done" ]||[ -e "$d.out" ];}';

function startScript(utilities) {
  const names = utilities.map((u) => {
    if (!/^[a-z0-9-]+$/.test(u)) throw new TypeError(`not a utility name: ${JSON.stringify(u)}`);
    return u;
  });
  return [
    FOLDER,
    // Nothing is claimed before every utility is known to be there, and the
    // command is known to be a program.
    `i=200;{ for u in ${names.join(' ')};do command -v "$u"||exit "$i";i=$((i+1));done;} >/dev/null`,
    // (PATH searched as exec searches it: a builtin of the same name is not the program.)
    'case "$1" in */*)[ -f "$1" ]&&[ -x "$1" ]||exit 95;;*)f=;set -f;IFS=:;for x in $PATH;do [ -f "${x:-.}/$1" ]&&[ -x "${x:-.}/$1" ]&&{ f=1;break;};done;unset IFS;set +f;[ -n "$f" ]||exit 95;;esac',
    ATTACH,
    CLAIM,
    'if [ "$own" = 1 ];then',
    // (A line written into `w`, where the waiter's pid goes, proves that the
    // folder takes writes: a full disk or a file size limit of 0 runs the
    // exec plainly.)
    // (The wake FIFO is opened here, once, for the reader and the waiter:
    // its name may be gone by the time either would open it.)
    'true >"$d.out"&&true >"$d.err"&&echo >"$d.w"&&mkfifo "$d.wake" "$d.ep" "$d.op"&&command exec 3<>"$d.wake"&&{ [ ! -r /proc/self/stat ]||[ -p /proc/self/fd/3 ];}||{ rm -f "$d.out" "$d.err" "$d.w" "$d.wake" "$d.ep" "$d.op" "$d.c";exit 96;}',
    'wf=1',
    LAUNCH,
    'exit $?',
    'fi',
    'attach',
  ].join('\n');
}

const SCRIPTS = {
  look: () => [FOLDER, `${CLAIMED}||exit 98`].join('\n'),
  attach: () => [FOLDER, ATTACH, 'attach'].join('\n'),
  // Prints `done` (the code and the sizes sent); 97 when the run is not
  // done, 98 when it has no files, or its output files went away first.
  finish: () =>
    [
      FOLDER,
      '[ -s "$d.done" ]||{ [ -f "$d.out" ]||exit 98;exit 97;}',
      // (Sizes that cannot be counted stay "-": the core reads no record.)
      'read -r c zo ze <"$d.done";[ "$zo" = - ]&&[ -f "$so" ]&&[ -f "$se" ]&&{ zo=$(($(wc -c <"$so")));ze=$(($(wc -c <"$se")));}',
      'echo "$c $zo $ze"',
    ].join('\n'),
  // (A run whose relay failed, `lost`, has ended too.)
  cleanup: () => [FOLDER, '{ [ -s "$d.done" ]||[ -e "$d.lost" ];}||exit 0', 'clean "$d"'].join('\n'),
  // TERM to the command's group, up to 2 s for it to end, then KILL. A run
  // not yet claimed is claimed here, so that no start that arrives later
  // starts it: 98, nothing was started.
  kill: () =>
    [
      FOLDER,
      CLAIM,
      '[ "$own" = 1 ]&&{ c=killed;o=-;e=-;' + DONE + ';exit 98;}',
      // Marked done before the pid is looked for: a start that writes its
      // pid later finds the mark and starts nothing.
      '[ -d "$b" ]||exit 0',
      `[ -s "$d.done" ]||{ c=killed;o=-;e=-;${DONE};}`,
      // (The pid is written a moment after the claim.)
      'i=0;while [ ! -s "$d.pid" ]&&[ ! -s "$cm/$r" ]&&[ ! -s "$d.code" ]&&[ "$i" -lt 10 ];do sleep 0.1 2>/dev/null||break;i=$((i+1));done',
      '[ -d "$b" ]||exit 0',
      'p=$(cat "$d.pid" 2>/dev/null);[ -n "$p" ]||p=$(cat "$cm/$r" 2>/dev/null)',
      'if [ -n "$p" ];then',
      // (The pid is written a moment before its session is made: then the
      // process itself, which would become the command.)
      'kill -TERM -"$p" 2>/dev/null||{ [ -s "$d.code" ]||kill -TERM "$p" 2>/dev/null;}',
      'i=0;while [ ! -s "$d.code" ]&&[ "$i" -lt 2 ];do sleep 1;i=$((i+1));done',
      'kill -KILL -"$p" 2>/dev/null||{ [ -s "$d.code" ]||kill -KILL "$p" 2>/dev/null;}',
      'fi',
      'c=killed;[ -s "$d.code" ]&&read -r c <"$d.code";o=-;e=-',
      `[ -s "$d.done" ]||${DONE}`,
      'clean "$d"',
    ].join('\n'),
};

// The variables the scripts are written with. Each is given a prefix of
// its own when the script is built (`ownNames`): a variable of the
// container's environment that shares a name with one of ours would
// otherwise reach the command with our value (the shell exports every
// variable that came from the environment, under any shell). The scripts
// set nothing else but LC_ALL (given back) and IFS (which no shell takes
// from the environment).
const OURS = new Set(['lx', 'la', 'b', 'r', 'd', 'cm', 'cv', 'y', 'o', 'e', 'k', 'so', 'se', 'wp', 'rc', 'ry', 'cp', 'tf', 'wf', 'v', 'lw', 'pp', 'l', 'lo', 'i', 'iz', 'u', 'f', 'x', 'm', 'n', 'zo', 'ze', 'c', 'q', 'z', 's', 't', 'own', 'p', '_']);
const PREFIX = '_K';
const THEIRS = new Set(['LC_ALL', 'IFS']);
const NAME = '[A-Za-z_][A-Za-z0-9_]*';

function ownNames(script) {
  const own = (name) => (OURS.has(name) ? PREFIX + name : name);
  const named = script
    // Expansions: $name, ${name...}.
    .replace(new RegExp(`\\$(\\{?)(${NAME})`, 'g'), (_all, brace, name) => `$${brace}${own(name)}`)
    // Names in arithmetic: $((o+1)).
    .replace(/\$\(\(([^()]*)\)\)/g, (_all, body) => `$((${body.replace(new RegExp(`(^|[^$A-Za-z0-9_])(${NAME})`, 'g'), (_m, before, name) => before + own(name))}))`)
    // Assignments, and the names `read` and `for` set.
    .replace(new RegExp(`(^|[\\s;(){&|])(${NAME})=`, 'g'), (_all, before, name) => `${before}${own(name)}=`)
    .replace(new RegExp(`read -r ((?:${NAME} )*${NAME})`, 'g'), (_all, names) => `read -r ${names.split(' ').map(own).join(' ')}`)
    .replace(new RegExp(`for (${NAME}) in`, 'g'), (_all, name) => `for ${own(name)} in`);
  // Nothing set may be left unprefixed: a name added to a script but not
  // to OURS would be the container's.
  for (const m of named.matchAll(new RegExp(`(?:^|[\\s;(){&|])(${NAME})=|read -r ((?:${NAME} )*${NAME})|for (${NAME}) in`, 'g'))) {
    for (const name of (m[1] || m[3] || m[2]).split(' ')) {
      if (!name.startsWith(PREFIX) && !THEIRS.has(name)) throw new Error(`pod-commands: the script sets ${name}, which is not one of its own names`);
    }
  }
  return named;
}

// The scripts as sent, built once per process: the same for every run (a
// start's differs only by the utilities it looks for), and a hook process
// that makes six execs would otherwise build and rename each six times.
const built = new Map();

function scriptOf(action) {
  const key = action.step === 'start' ? `start ${JSON.stringify(action.utilities)}` : String(action.step);
  let script = built.get(key);
  if (script === undefined) {
    const written = action.step === 'start' ? startScript(action.utilities) : Object.hasOwn(SCRIPTS, action.step) && SCRIPTS[action.step]();
    if (!written) throw new TypeError(`not a pod step: ${JSON.stringify(action.step)}`);
    script = ownNames(written);
    built.set(key, script);
  }
  return script;
}

/**
 * The exec command of `action` (an `exec` action of the core): `received`
 * holds the bytes of stdout and stderr received so far, `command` is the
 * caller's command (only a start step runs it).
 */
function podCommand(action, received, command) {
  const runId = (id) => {
    if (!/^[0-9a-f]{32}$/.test(id)) throw new TypeError(`not a run id: ${JSON.stringify(id)}`);
    return id;
  };
  runId(action.run);
  const script = scriptOf(action);
  const cleanups = action.step === 'start' && Array.isArray(action.cleanup) ? action.cleanup.map(runId) : [];
  const args = [action.run, String(received.out), String(received.err), String(cleanups.length), ...cleanups];
  return ['sh', '-c', script, 'k8s-auth-preflight', ...args, ...(action.step === 'start' ? command : [])];
}

module.exports = { podCommand };
