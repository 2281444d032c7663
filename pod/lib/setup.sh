# shellcheck shell=sh disable=SC2034,SC2154
# (A part of the steps: its names are set and read across the parts; each
# step is checked whole, with its parts in place.)
# The start of every step: the shell made safe for our lines, the names of
# the run's files, the offsets the host has received, and the files of
# delivered runs removed. A step is run as
#   sh -c <step> k8s-auth-preflight <run id> <stdout offset> <stderr offset> \
#     <n> <n delivered run ids> [<command>...]
# (run ids are 32 hex digits); the command is left in "$@".

# The shell's own complaints (a job killed, a file not there) are not the
# command's stderr: fd 2 goes to /dev/null, and the command's stderr is
# written to fd 6, the exec's own; nothing started from here keeps 6.
exec 6>&2 2>/dev/null
# Options a shell may take from the environment (bash's SHELLOPTS: errexit,
# nounset, pipefail, noclobber, allexport) would change what these lines do.
# (The command gets its environment as it was.)
set +a +e +f +u +v +x +C
command set +o pipefail 2>/dev/null
# Bash run as sh rewrites SHELLOPTS and BASHOPTS when the environment sets
# them (posix added, the options above taken out) and exports what it made:
# the command would run with other options than the plain exec gives it.
# And it takes functions from the environment (BASH_FUNC_<name>%%), which
# would stand in for the utilities and builtins these lines use. Such an
# exec runs plainly. Bash can tell without a process, from the environment
# it was started with; other shells take neither from it.
if [ -n "${BASH_VERSION-}" ] && [ -r "/proc/$$/environ" ]; then
	# shellcheck disable=SC3045 # read -d is bash's, run only by bash
	while IFS= read -r -d '' entry; do
		case "$entry" in "SHELLOPTS="* | "BASHOPTS="* | "BASH_FUNC_"*) exit "$POD_NAME_TAKEN" ;; esac
	done <"/proc/$$/environ"
fi
# A write past a file size limit fails instead of killing what writes
# (SIGXFSZ): a waiter killed so would leave no word at all. The command gets
# the signal's disposition back.
trap '' XFSZ

# Our utilities run in the C locale: one that loads a locale (GNU coreutils
# under LANG=C.UTF-8) takes about twice as long to start. The command gets
# LC_ALL back, set or unset as it was.
lc_all_was_set=
lc_all_was=
[ -n "${LC_ALL+x}" ] && { lc_all_was=$LC_ALL; lc_all_was_set=1; }
LC_ALL=C
export LC_ALL
restore_lc_all() {
	if [ -n "$lc_all_was_set" ]; then LC_ALL=$lc_all_was; else unset LC_ALL; fi
}

# A run's files are <run id>.<name>, side by side in a dot folder of the
# container's temp folder (`rm -rf "$TMPDIR"/*` leaves a dot folder): no
# folder per run, since each mkdir is a process every healthy exec pays for.
# A relative temp folder is the exec's working folder's; "./" keeps a name
# that starts with "-" from reading as an option.
runs_dir="${TMPDIR:-/tmp}"
case "$runs_dir" in /*) ;; *) runs_dir="./$runs_dir" ;; esac
tmp_dir=${runs_dir%/}
runs_dir="$runs_dir/.k8s-auth-preflight"
run_id=$1
run_path="$runs_dir/$run_id"
# The claims are kept apart from the temp folder, which a command may empty:
# a mark in /dev/shm, witnessed by a second one in /var/tmp; neither is used
# when it is inside the temp folder.
claim_dir=/dev/shm/.k8s-auth-preflight
witness_dir=/var/tmp/.k8s-auth-preflight
case "$witness_dir/" in "$tmp_dir"/*) witness_dir= ;; esac
case "$claim_dir/" in "$tmp_dir"/*) claim_dir=$witness_dir ;; esac
sent_out=$(($2))
sent_err=$(($3))
cleanup_count=$(($4))
shift 4
out_file="$run_path.out"
err_file="$run_path.err"
waiter_pid=

# A run's files but `done` and the claim's mark `c`, which stay after a
# clean-up: a start that arrives late finds the run claimed, and a reattach
# knows whether it got everything.
#   out, err  the command's stdout and stderr, as the relays wrote them
#   op, ep    the FIFOs the command writes into, read by the relays
#   wake      the FIFO that wakes the reader: ticks, and the waiter's last word
#   pid       the command's pid (its session's and group's)
#   w         the waiter's pid and its two relays'
#   code      the command's exit code, once both relays have ended
#   lost      a relay could not write the output into its file
#   reader    the newest reader's id (its step's shell's pid)
remove_run_files() {
	rm -f "$1.out" "$1.err" "$1.op" "$1.ep" "$1.wake" "$1.pid" "$1.w" "$1.code" "$1.lost" "$1.reader"
}

# The delivered runs named after the offsets (the clean-up of a run done in
# passing, or of one the host could not wait for) are removed by one rm in
# the background. Run ids are hex, so the list splits into its names.
doomed=
while [ "$cleanup_count" -gt 0 ]; do
	{ [ -s "$runs_dir/$1.done" ] || [ -e "$runs_dir/$1.lost" ]; } &&
		doomed="$doomed $1.out $1.err $1.op $1.ep $1.wake $1.pid $1.w $1.code $1.lost $1.reader"
	cleanup_count=$((cleanup_count - 1))
	shift
done
# shellcheck disable=SC2086 # the list is split on purpose
[ -z "$doomed" ] || { (cd "$runs_dir" && exec rm -f $doomed) </dev/null >/dev/null 6>&- & }
