# shellcheck shell=sh disable=SC2034,SC2154
# (A part of the steps: its names are set and read across the parts; each
# step is checked whole, with its parts in place.)
# The run is done: its code and the sizes of its output ("-" when the reader
# did not count them), in one write (a reader looks for a file that is not
# empty).
write_done() {
	printf '%s %s %s\n' "$code" "$sent_out" "$sent_err" >"$run_path.done"
}
