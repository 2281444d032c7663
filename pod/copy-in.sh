#!/bin/sh
# Copy in: the archive on stdin is unpacked into the folder $1 (made if
# missing), and the bytes that arrive are counted and checked as tar reads
# them, in this same exec. The last line on stdout reports them
# (src/copy/report.rs):
#   k8s-auth-preflight-copy <tar's exit status> <bytes> cksum <crc>
#   k8s-auth-preflight-copy <tar's exit status> <bytes> sha256 <hash>
# The host accepts the copy only when they are the bytes it sent, so no
# listing of the files is needed after. (The modes the hooks give, u+rw and
# u+x on folders, come in the archive: nothing here walks the folder, which
# may hold more than the copy brought, or be /.)
#
# Nothing is unpacked unless the bytes can be counted and checked: the
# utilities are looked for first.
for utility in tar tee mkfifo mkdir mktemp rm cat; do
	command -v "$utility" >/dev/null || {
		echo "k8s-auth-preflight: the container has no $utility" >&2
		exit 127
	}
done
. ./lib/copy-check.sh
into=$1
mkdir -p -- "$into" || exit 1
# One new folder of this exec's own for the FIFOs and what reads them
# writes (mktemp: a copy beside it, in this container or in another that
# shares the folder, gets another), in the first place that takes one: a
# read-only root file system still has /dev/shm, and the destination.
work=
for place in "${TMPDIR:-/tmp}" /tmp /dev/shm /var/tmp "$into"; do
	work=$(mktemp -d -- "$place/.k8s-auth-preflight-copy.XXXXXX" 2>/dev/null) && break
done
if [ -z "$work" ] || ! start_check "$work"; then
	echo "k8s-auth-preflight: no folder in the container takes the copy's FIFOs (TMPDIR, /tmp, /dev/shm, /var/tmp, $into)" >&2
	exit 1
fi
# tar stops reading at the archive's end marker; what follows it (a
# packer's padding) is read too, so that tee sees the whole stream and the
# count is of every byte sent.
tee_check "$work" | {
	tar xf - --no-same-owner -C "$into"
	echo "$?" >"$work/tar"
	cat >/dev/null
}
wait
tar_status=
read -r tar_status <"$work/tar"
checked=$(read_check "$work")
rm -rf "$work"
echo "k8s-auth-preflight-copy $tar_status $checked"
exit "$tar_status"
