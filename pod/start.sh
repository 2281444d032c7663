#!/bin/sh
# Start: check that the utilities are there and that the command is a
# program, claim the run, and, if the claim is ours, launch the command and
# follow it; a run already claimed is only followed, never started again.
# shellcheck source=lib/table.sh
. ./lib/table.sh
# shellcheck source=lib/setup.sh
. ./lib/setup.sh

# Nothing is claimed before every utility is known to be there.
status=$POD_MISSING_UTILITY_FIRST
{
	for utility in $POD_UTILITIES; do
		command -v "$utility" || exit "$status"
		status=$((status + 1))
	done
} >/dev/null
# The command is a program: PATH is searched as exec searches it (a builtin
# of the same name is not the program).
case "$1" in
*/*) [ -f "$1" ] && [ -x "$1" ] || exit "$POD_NOT_A_PROGRAM" ;;
*)
	found=
	set -f
	IFS=:
	for path_dir in $PATH; do
		[ -f "${path_dir:-.}/$1" ] && [ -x "${path_dir:-.}/$1" ] && {
			found=1
			break
		}
	done
	unset IFS
	set +f
	[ -n "$found" ] || exit "$POD_NOT_A_PROGRAM"
	;;
esac

# shellcheck source=lib/done.sh
. ./lib/done.sh
# shellcheck source=lib/follow.sh
. ./lib/follow.sh
# shellcheck source=lib/claim.sh
. ./lib/claim.sh

if [ "$claim_is_ours" = 1 ]; then
	# A line written into `w` proves that the folder takes writes: a full
	# disk or a file size limit of 0 runs the exec plainly. The wake FIFO is
	# opened here, once, for the reader and the waiter: its name may be gone
	# by the time either would open it.
	if ! {
		true >"$run_path.out" && true >"$run_path.err" && echo >"$run_path.w" &&
			mkfifo "$run_path.wake" "$run_path.ep" "$run_path.op" &&
			command exec 3<>"$run_path.wake" &&
			{ [ ! -r /proc/self/stat ] || [ -p /proc/self/fd/3 ]; }
	}; then
		rm -f "$run_path.out" "$run_path.err" "$run_path.w" "$run_path.wake" "$run_path.ep" "$run_path.op" "$run_path.c"
		exit "$POD_NO_FOLDER"
	fi
	wake_open=1
	# shellcheck source=lib/launch.sh
	. ./lib/launch.sh
	exit $?
fi
follow_run
