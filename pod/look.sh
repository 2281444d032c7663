#!/bin/sh
# Look: exit 0 when the run was claimed (its mark, or its files), and
# NO_RECORD when not. Made before another start when a start may have
# reached the pod.
# shellcheck source=lib/table.sh
. ./lib/table.sh
# shellcheck source=lib/setup.sh
. ./lib/setup.sh
{
	{ [ -n "$claim_dir" ] && [ -e "$claim_dir/$run_id" ]; } ||
		{ [ -n "$witness_dir" ] && [ -e "$witness_dir/$run_id" ]; } ||
		[ -e "$run_path.c" ] || [ -e "$run_path.done" ] || [ -e "$run_path.out" ]
} || exit "$POD_NO_RECORD"
