# shellcheck shell=sh disable=SC2034,SC2154
# (A part of the steps: its names are set and read across the parts; each
# step is checked whole, with its parts in place.)
# The command, launched detached:
# - in a session of its own (a cut stream neither signals nor blocks it, and
#   its group can be stopped), apart from the waiter and the relays (a
#   command that signals its own group, `kill 0`, stops only itself);
# - with stdin from /dev/null, run as a program (`exec`: never a builtin);
# - its stdout and stderr through relays into the files, so that output of
#   children that outlive it still arrives, as a runtime's pipes wait for it.
# The waiter writes the exit code (in one write, into the folder made again
# if the command removed it) once both relays have ended, `lost` before it
# when a relay failed (a full disk, a file size limit), and then its last
# word into the wake FIFO (lib/follow.sh, read_message), which carries the
# code too: it arrives when the temp folder has been emptied.
#
# Neither the waiter nor the command is an asynchronous list (`&`): a shell
# starts those with SIGINT and SIGQUIT ignored, and no shell can undo that.
# The waiter is the left side of a pipeline whose right side is the reader;
# this step's own shell stays until both have ended. The command is a
# subshell of the waiter that writes its pid (its own, read from
# /proc/self/stat: $$ is the step's shell), opens the files (so that the
# waiter's note of how it ended never lands in the output) and becomes
# setsid and then the command, keeping its pid; without /proc, a shell in
# the new session writes its pid and becomes the command. Between writing
# its pid and becoming the command it looks for `done`: a kill writes it
# before it looks for the pid, so either the kill finds the pid, or the
# command finds `done` and never starts.
#
# With /proc, each output FIFO is opened once by name (read-write: never
# blocks) and handed on through /proc/self/fd, so a relay reads and the
# command writes the FIFO that was made even if its name is removed
# meanwhile (a relay waiting in open for a writer that never comes would
# hold the waiter for ever); the waiter keeps only write ends while the
# command runs (a relay that dies still leaves the command a pipe with no
# reader), and closes them when it has ended. A FIFO gone before that
# starts nothing: the last word carries no code.
#
# Every process started here is a fork or a small utility: each costs about
# a millisecond, paid by every healthy exec.
(
	# The waiter and the relays outlive a `pkill cat` or `pkill sh` (TERM) in
	# the container, which the plain exec's command would: the command gets
	# the dispositions back (one ignored when the step started stays so).
	trap '' TERM HUP
	my_pid=
	[ -r /proc/self/stat ] && read -r my_pid stat_rest </proc/self/stat
	command_code=
	if [ -n "$my_pid" ]; then
		if command exec 7<>"$run_path.op" 9<>"$run_path.ep" && [ -p /proc/self/fd/7 ] && [ -p /proc/self/fd/9 ]; then
			cat </proc/self/fd/9 >>"$run_path.err" 3>&- 7<&- 9<&- &
			relay_err=$!
			cat </proc/self/fd/7 >>"$run_path.out" 3>&- 7<&- 9<&- &
			relay_out=$!
			exec 7>/proc/self/fd/7 9>/proc/self/fd/9
			echo "$my_pid $relay_err $relay_out" >"$run_path.w"
			(
				read -r my_pid stat_rest </proc/self/stat
				echo "$my_pid" >"$run_path.pid"
				[ -w "$claim_dir/$run_id" ] && echo "$my_pid" >"$claim_dir/$run_id"
				exec </dev/null >&7 2>&9 3>&- 7>&- 9>&-
				[ -s "$run_path.done" ] && exit "$POD_NO_RECORD"
				restore_lc_all
				trap - XFSZ TERM HUP
				exec setsid "$@"
			)
			command_code=$?
			exec 7>&- 9>&-
		fi
	else
		cat <"$run_path.ep" >>"$run_path.err" 3>&- &
		relay_err=$!
		cat <"$run_path.op" >>"$run_path.out" 3>&- &
		relay_out=$!
		(
			set -- "$run_path" "$@"
			restore_lc_all
			trap - XFSZ TERM HUP
			# shellcheck disable=SC2016 # expanded by the new session's shell
			exec setsid sh -c 'exec </dev/null >"$0.op" 2>"$0.ep" 3>&-; echo $$ >"$0.pid"; [ -s "$0.done" ] && exit '"$POD_NO_RECORD"'; exec "$@"' "$@"
		)
		command_code=$?
	fi
	[ -n "$command_code" ] || {
		echo w >&3
		exit
	}
	output_lost=
	wait "$relay_out" || output_lost=1
	wait "$relay_err" || output_lost=1
	[ -d "$runs_dir" ] || mkdir -p "$runs_dir"
	[ -z "$output_lost" ] || : >"$run_path.lost"
	echo "$command_code" >"$run_path.code"
	printf 'w%03d%s\n' "$command_code" "${output_lost:-0}" >&3
) </dev/null >/dev/null 6>&- | follow_run
