# shellcheck shell=sh disable=SC2034,SC2154
# (A part of the steps: its names are set and read across the parts; each
# step is checked whole, with its parts in place.)
# The claim: only one start ever makes it. Its mark is a file made with
# O_EXCL (`set -C`, the shell's own: no process; `true`, not `:`, whose failed
# redirection would end the shell) among the claims in /dev/shm, or else in
# /var/tmp, apart from the temp folder a command may empty; else (no such
# folder takes writes) beside the run's files (`c`). The command writes its
# pid into the mark too, where a kill finds it when the command has removed
# the run's files. `claim_is_ours` is 1 when the claim is this step's; then
# the run's folder exists, or the step exits. (Each folder is made once per
# container.)
[ -z "$claim_dir" ] || [ -d "$claim_dir" ] || mkdir -p "$claim_dir" 2>/dev/null
{ [ -n "$claim_dir" ] && [ -d "$claim_dir" ] && [ -w "$claim_dir" ]; } || {
	claim_dir=$witness_dir
	[ -z "$claim_dir" ] || [ -d "$claim_dir" ] || mkdir -p "$claim_dir" 2>/dev/null
}
[ -d "$runs_dir" ] || mkdir -p "$runs_dir" 2>/dev/null
claim_is_ours=0
if [ -n "$claim_dir" ] && [ -d "$claim_dir" ] && [ -w "$claim_dir" ]; then
	set -C
	true >"$claim_dir/$run_id" && claim_is_ours=1
	set +C
	# (A mark that could not be made, and is not there, claims nothing: a
	# folder with no room for it.)
	[ "$claim_is_ours" = 1 ] || [ -e "$claim_dir/$run_id" ] || exit "$POD_NO_FOLDER"
	# The second mark, in /var/tmp, witnesses a claim made in /dev/shm: a
	# temp folder that is /dev/shm by another name (a link, "/dev//shm") may
	# be emptied, first mark included, and a start that arrives after that
	# must not claim the run again.
	if [ "$claim_is_ours" = 1 ] && [ -n "$witness_dir" ] && [ "$witness_dir" != "$claim_dir" ]; then
		[ -d "$witness_dir" ] || mkdir -p "$witness_dir" 2>/dev/null
		if [ -e "$witness_dir/$run_id" ]; then claim_is_ours=0; else true >"$witness_dir/$run_id"; fi
	fi
	if [ "$claim_is_ours" = 1 ]; then [ -d "$runs_dir" ] || exit "$POD_NO_FOLDER"; fi
else
	set -C
	true >"$run_path.c" && claim_is_ours=1
	set +C
	[ "$claim_is_ours" = 1 ] || [ -e "$run_path.c" ] || exit "$POD_NO_FOLDER"
fi
