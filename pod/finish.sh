#!/bin/sh
# Finish: print the run's `done` (the code and the sizes sent), with the
# sizes counted when the reader did not count them; BROKE when the run is not
# done, NO_RECORD when it has no files, or its output files went first.
# shellcheck source=lib/table.sh
. ./lib/table.sh
# shellcheck source=lib/setup.sh
. ./lib/setup.sh
[ -s "$run_path.done" ] || {
	[ -f "$run_path.out" ] || exit "$POD_NO_RECORD"
	exit "$POD_BROKE"
}
read -r code size_out size_err <"$run_path.done"
# (Sizes that cannot be counted stay "-": the core reads no record.)
[ "$size_out" = - ] && [ -f "$out_file" ] && [ -f "$err_file" ] && {
	size_out=$(($(wc -c <"$out_file")))
	size_err=$(($(wc -c <"$err_file")))
}
echo "$code $size_out $size_err"
