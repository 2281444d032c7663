#!/bin/sh
# Copy out: the folder $2 of the folder $1 is packed to stdout, and the
# bytes are counted and hashed as they leave, in this same exec. The last
# line on stderr reports them (src/copy/report.rs), after tar's own words:
#   k8s-auth-preflight-copy <tar's exit status> <bytes> <sha256>
# The host unpacks what it got only when they are the bytes it counted.
#
# Nothing is packed unless the bytes can be counted and hashed: the
# utilities are looked for first.
for utility in tar sha256sum tee wc mkfifo mktemp rm; do
	command -v "$utility" >/dev/null || {
		echo "k8s-auth-preflight: the container has no $utility" >&2
		exit 127
	}
done
parent=$1
name=$2
# One new folder of this exec's own for the two FIFOs (see copy-in.sh).
work=
for place in "${TMPDIR:-/tmp}" /tmp /dev/shm /var/tmp; do
	work=$(mktemp -d -- "$place/.k8s-auth-preflight-copy.XXXXXX" 2>/dev/null) && break
done
if [ -z "$work" ] || ! mkfifo "$work/to-hash" "$work/to-count"; then
	echo "k8s-auth-preflight: no folder in the container takes the copy's two FIFOs (TMPDIR, /tmp, /dev/shm, /var/tmp)" >&2
	exit 1
fi
sha256sum <"$work/to-hash" >"$work/hash" &
wc -c <"$work/to-count" >"$work/count" &
# (No --exclude: BusyBox's tar may have none. The runner's tar leaves out
# what must not be unpacked over the runner's own files.)
{
	tar cf - -C "$parent" -- "$name"
	echo "$?" >"$work/tar"
} | tee "$work/to-hash" "$work/to-count"
wait
tar_status=
hash=
count=
read -r tar_status <"$work/tar"
read -r hash <"$work/hash"
hash=${hash%% *}
read -r count <"$work/count"
rm -rf "$work"
echo "k8s-auth-preflight-copy $tar_status $count $hash" >&2
exit "$tar_status"
