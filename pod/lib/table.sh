# Generated from src/durable/pod_status.rs: the exit statuses of the pod
# program's own, and the utilities it needs. Do not edit: the build
# fails when this file and the core disagree (node scripts/build-pod.js
# --write makes it again).
# shellcheck shell=sh disable=SC2034
# the container's environment sets a variable named as one of the program's own (_K...), or, with bash as sh, SHELLOPTS, BASHOPTS or an exported function: nothing was claimed
POD_NAME_TAKEN=92
# a relay could not write the command's output into its file (a full disk, a file size limit): the output is incomplete
POD_OUTPUT_NOT_KEPT=93
# the process that waits for the command ended without writing its code: the code will never come
POD_WATCHER_GONE=94
# the command is not a program on the container's PATH: nothing was claimed
POD_NOT_A_PROGRAM=95
# the run's files cannot be made (no temp folder that takes writes): nothing was started
POD_NO_FOLDER=96
# the step broke (its stream was cut), the run is not done, or what was sent does not add up to the run's sizes
POD_BROKE=97
# the run has no record (never claimed, or its files were removed before its end)
POD_NO_RECORD=98
# The utilities the steps use besides sh's builtins; a missing one is
# the start's status 200 + its place in this list.
POD_UTILITIES='mkdir mkfifo setsid tail head wc cat rm sleep'
POD_MISSING_UTILITY_FIRST=200
# Whether status $1 may be one of ours, or a shell's or a signal's, rather
# than the command's own code: the core confirms such a status with a
# finish step.
status_may_be_ours() {
	case "$1" in
	9[2-8]|12[6-9]|1[3-9][0-9]|2[0-4][0-9]|25[0-5]) return 0 ;;
	esac
	return 1
}
