#!/bin/sh
# Copy out: the folder $2 of the folder $1 is packed to stdout, and the
# bytes are counted and hashed as they leave, in this same exec. The last
# line on stderr reports them (src/copy/report.rs), after tar's own words:
#   k8s-auth-preflight-copy <tar's exit status> <bytes> <sha256>
# The host unpacks what it got only when they are the bytes it counted.
#
# Nothing is packed unless the bytes can be counted and hashed: the
# utilities are looked for first.
for utility in tar sha256sum tee wc mkfifo mkdir rm; do
	command -v "$utility" >/dev/null || {
		echo "k8s-auth-preflight: the container has no $utility" >&2
		exit 127
	}
done
parent=$1
name=$2
work=${TMPDIR:-/tmp}/k8s-auth-preflight-copy.$$
rm -rf "$work"
mkdir -m 700 "$work" && mkfifo "$work/to-hash" "$work/to-count" || exit 1
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
