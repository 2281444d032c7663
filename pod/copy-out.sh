#!/bin/sh
# Copy out: the folder $2 of the folder $1 is packed to stdout, and the
# bytes are counted and checked as they leave, in this same exec. The last
# line on stderr reports them (src/copy/report.rs), after tar's own words:
#   k8s-auth-preflight-copy <tar's exit status> <bytes> cksum <crc>
#   k8s-auth-preflight-copy <tar's exit status> <bytes> sha256 <hash>
# The host unpacks what it got only when they are the bytes it counted.
#
# Nothing is packed unless the bytes can be counted and checked: the
# utilities are looked for first.
for utility in tar tee mkfifo mktemp rm; do
	command -v "$utility" >/dev/null || {
		echo "k8s-auth-preflight: the container has no $utility" >&2
		exit 127
	}
done
. ./lib/copy-check.sh
parent=$1
name=$2
# One new folder of this exec's own for the FIFOs (see copy-in.sh).
work=
for place in "${TMPDIR:-/tmp}" /tmp /dev/shm /var/tmp; do
	work=$(mktemp -d -- "$place/.k8s-auth-preflight-copy.XXXXXX" 2>/dev/null) && break
done
if [ -z "$work" ] || ! start_check "$work"; then
	echo "k8s-auth-preflight: no folder in the container takes the copy's FIFOs (TMPDIR, /tmp, /dev/shm, /var/tmp)" >&2
	exit 1
fi
# (No --exclude: BusyBox's tar may have none. The runner's tar leaves out
# what must not be unpacked over the runner's own files.)
{
	tar cf - -C "$parent" -- "$name"
	echo "$?" >"$work/tar"
} | tee_check "$work"
wait
tar_status=
read -r tar_status <"$work/tar"
checked=$(read_check "$work")
rm -rf "$work"
echo "k8s-auth-preflight-copy $tar_status $checked" >&2
exit "$tar_status"
