#!/bin/sh
# Kill: TERM to the command's group, up to 2 s for it to end, then KILL; then
# the run is left as a clean-up leaves it. A run not yet claimed is claimed
# here, so that no start that arrives later starts it: NO_RECORD, nothing
# was started.
# shellcheck source=lib/table.sh
. ./lib/table.sh
# shellcheck source=lib/setup.sh
. ./lib/setup.sh
# shellcheck source=lib/done.sh
. ./lib/done.sh
# shellcheck source=lib/claim.sh
. ./lib/claim.sh
[ "$claim_is_ours" = 1 ] && {
	code=killed
	sent_out=-
	sent_err=-
	write_done
	exit "$POD_NO_RECORD"
}
# Marked done before the pid is looked for: a start that writes its pid
# later finds the mark and starts nothing.
[ -d "$runs_dir" ] || exit 0
[ -s "$run_path.done" ] || {
	code=killed
	sent_out=-
	sent_err=-
	write_done
}
# (The pid is written a moment after the claim.)
tries=0
while [ ! -s "$run_path.pid" ] && [ ! -s "$claim_dir/$run_id" ] && [ ! -s "$run_path.code" ] && [ "$tries" -lt 10 ]; do
	sleep 0.1 2>/dev/null || break
	tries=$((tries + 1))
done
[ -d "$runs_dir" ] || exit 0
target_pid=$(cat "$run_path.pid" 2>/dev/null)
[ -n "$target_pid" ] || target_pid=$(cat "$claim_dir/$run_id" 2>/dev/null)
if [ -n "$target_pid" ]; then
	# (The pid is written a moment before its session is made: then the
	# process itself, which would become the command.)
	kill -TERM -"$target_pid" 2>/dev/null || { [ -s "$run_path.code" ] || kill -TERM "$target_pid" 2>/dev/null; }
	tries=0
	while [ ! -s "$run_path.code" ] && [ "$tries" -lt 2 ]; do
		sleep 1
		tries=$((tries + 1))
	done
	kill -KILL -"$target_pid" 2>/dev/null || { [ -s "$run_path.code" ] || kill -KILL "$target_pid" 2>/dev/null; }
fi
code=killed
[ -s "$run_path.code" ] && read -r code <"$run_path.code"
sent_out=-
sent_err=-
[ -s "$run_path.done" ] || write_done
remove_run_files "$run_path"
