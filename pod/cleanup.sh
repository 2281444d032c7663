#!/bin/sh
# Clean-up: remove the files of a run that has ended (`done`, or `lost`: a
# relay failed), leaving `done` and the claim's mark.
# shellcheck source=lib/table.sh
. ./lib/table.sh
# shellcheck source=lib/setup.sh
. ./lib/setup.sh
{ [ -s "$run_path.done" ] || [ -e "$run_path.lost" ]; } || exit 0
remove_run_files "$run_path"
