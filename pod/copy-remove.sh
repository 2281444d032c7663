#!/bin/sh
# Remove, before a copy is made again, what the attempt before may have
# written in the folder $1: files it may have half written, links where
# the source may now hold a folder (src/copy/listing.rs). The same script
# runs in the pod (a copy into it) and on the runner (a copy out of it).
#
# The names come on stdin, relative to $1, one a line, deepest first: a
# backslash in a name is written \\ and a newline \n. A line holding only
# / ends them (no name is /), and the last line on stdout says it was
# read (src/copy/removal.rs):
#   k8s-auth-preflight-removed
# A file is removed, and a folder only when it is empty: a folder that
# still holds something holds what is not the copy's. Nothing is removed
# through a link: a name under a folder that is now a link names what the
# copy never wrote.
for utility in rm rmdir; do
	command -v "$utility" >/dev/null || {
		echo "k8s-auth-preflight: the container has no $utility" >&2
		exit 127
	}
done
cd -- "$1" || exit 1
failed=0
while IFS= read -r line; do
	case $line in
	/)
		echo "k8s-auth-preflight-removed"
		exit "$failed"
		;;
	*\\*)
		# printf %b reads \\ and \n back; the x keeps a newline at the end
		# of the name from being taken off by $(...).
		name=$(printf '%bx' "$line")
		name=${name%x}
		;;
	*)
		name=$line
		;;
	esac
	through=
	parent=$name
	while :; do
		case $parent in
		*/*) parent=${parent%/*} ;;
		*) break ;;
		esac
		if [ -h "$parent" ]; then
			through=yes
			break
		fi
	done
	if [ -n "$through" ]; then
		continue
	fi
	if [ -d "$name" ] && [ ! -h "$name" ]; then
		rmdir -- "$name" 2>/dev/null
	elif [ -e "$name" ] || [ -h "$name" ]; then
		rm -f -- "$name" || failed=1
	fi
done
echo "k8s-auth-preflight: the names ended before their end line" >&2
exit 1
