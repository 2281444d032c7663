#!/bin/sh
# Copy in: the archive on stdin is unpacked into the folder $1 (made if
# missing), and the bytes that arrive are counted and hashed as tar reads
# them, in this same exec. The last line on stdout reports them
# (src/copy/report.rs):
#   k8s-auth-preflight-copy <tar's exit status> <bytes> <sha256>
# The host accepts the copy only when they are the bytes it sent, so no
# listing of the files is needed after. Then each file gets u+rw and each
# folder u+rwx where it lacks them, as the hooks' own copy leaves them.
#
# Nothing is unpacked unless the bytes can be counted and hashed: the
# utilities are looked for first.
for utility in tar sha256sum tee wc mkfifo mkdir rm cat find chmod; do
	command -v "$utility" >/dev/null || {
		echo "k8s-auth-preflight: the container has no $utility" >&2
		exit 127
	}
done
into=$1
# (A folder named like an option is named as a path, for find.)
case $into in -*) into=./$into ;; esac
# One folder of this exec's own for the two FIFOs and what reads them
# writes: a copy beside it (the hooks copy in parallel) has another pid.
work=${TMPDIR:-/tmp}/k8s-auth-preflight-copy.$$
rm -rf "$work"
mkdir -p -- "$into" && mkdir -m 700 "$work" && mkfifo "$work/to-hash" "$work/to-count" || exit 1
sha256sum <"$work/to-hash" >"$work/hash" &
wc -c <"$work/to-count" >"$work/count" &
# tar stops reading at the archive's end marker; what follows it (a
# packer's padding) is read too, so that tee sees the whole stream and the
# count is of every byte sent.
tee "$work/to-hash" "$work/to-count" | {
	tar xf - --no-same-owner -C "$into"
	echo "$?" >"$work/tar"
	cat >/dev/null
}
wait
tar_status=
hash=
count=
read -r tar_status <"$work/tar"
read -r hash <"$work/hash"
hash=${hash%% *}
read -r count <"$work/count"
rm -rf "$work"
find "$into" -type f ! -perm -u+rw -exec chmod u+rw {} + 2>/dev/null
find "$into" -type d ! -perm -u+rwx -exec chmod u+rwx {} + 2>/dev/null
echo "k8s-auth-preflight-copy $tar_status $count $hash"
exit "$tar_status"
