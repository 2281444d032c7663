# The check of a copy's bytes, shared by copy-in.sh and copy-out.sh: POSIX
# cksum (a CRC-32 and the count in one pass; coreutils' runs at several
# GB/s) where the container has it, or else sha256sum, with wc for the
# count (coreutils' sha256sum runs at about 275 MB/s without OpenSSL).
# src/copy/report.rs reads what read_check prints.
if command -v cksum >/dev/null; then
	check='cksum'
elif command -v sha256sum >/dev/null && command -v wc >/dev/null; then
	check='sha256'
else
	echo "k8s-auth-preflight: the container has neither cksum nor sha256sum and wc" >&2
	exit 127
fi

# Makes the FIFOs in the folder $1 and starts what reads them.
start_check() {
	if [ "$check" = cksum ]; then
		mkfifo "$1/to-check" || return 1
		cksum <"$1/to-check" >"$1/check" &
	else
		mkfifo "$1/to-check" "$1/to-count" || return 1
		sha256sum <"$1/to-check" >"$1/check" &
		wc -c <"$1/to-count" >"$1/count" &
	fi
}

# Copies stdin to stdout and into the FIFOs of the folder $1.
tee_check() {
	if [ "$check" = cksum ]; then
		tee "$1/to-check"
	else
		tee "$1/to-check" "$1/to-count"
	fi
}

# Prints what the check wrote in the folder $1: "<bytes> cksum <crc>" or
# "<bytes> sha256 <hash>".
read_check() {
	sum=
	count=
	if [ "$check" = cksum ]; then
		read -r sum count <"$1/check"
	else
		read -r sum <"$1/check"
		sum=${sum%% *}
		read -r count <"$1/count"
	fi
	echo "$count $check $sum"
}
