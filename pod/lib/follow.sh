# shellcheck shell=sh disable=SC2034,SC2154
# (A part of the steps: its names are set and read across the parts; each
# step is checked whole, with its parts in place.)
# Following a run: its output sent from the host's offsets until the command
# has ended and everything is sent, then the step exits with the command's
# code (write_done records the code and the sizes). A start's reader and
# every reattach run follow_run.

# Sends what the output files hold past the offsets, stdout to stdout and
# stderr to fd 6, each byte once; `moved` says whether anything moved. A
# reader whose stream was cut ends here: head dies of SIGPIPE. The files are
# read through $out_file and $err_file: their names, or, once the reader
# holds them open, its descriptors (/proc/self/fd/4 and 5, opened anew by
# each utility), so output still arrives when a command empties its temp
# folder, ours included.
send_new_output() {
	moved=0
	if [ -s "$out_file" ]; then
		size=$(($(wc -c <"$out_file")))
		if [ "$size" -gt "$sent_out" ]; then
			tail -c +$((sent_out + 1)) "$out_file" | head -c $((size - sent_out)) || exit "$POD_BROKE"
			sent_out=$size
			moved=1
		fi
	fi
	if [ -s "$err_file" ]; then
		size=$(($(wc -c <"$err_file")))
		if [ "$size" -gt "$sent_err" ]; then
			tail -c +$((sent_err + 1)) "$err_file" | head -c $((size - sent_err)) >&6 || exit "$POD_BROKE"
			sent_err=$size
			moved=1
		fi
	fi
}

# No code will come (what waits for the command was killed or stopped, or
# could not write it): what the files hold is sent, and the status says
# whether a relay failed (the output is incomplete) or not.
end_without_code() {
	send_new_output
	{ [ -e "$run_path.lost" ] || [ -n "$word_lost" ]; } && exit "$POD_OUTPUT_NOT_KEPT"
	exit "$POD_WATCHER_GONE"
}

# The run is done (another reader wrote `done`, or a kill did): what is left
# past the offsets is sent, and the step exits with the code if what was
# sent adds up to the sizes (counted now when the reader that wrote `done`
# did not count them: the files are whole once the code is written).
end_from_done() {
	read -r code size_out size_err <"$run_path.done"
	case "$code" in '' | *[!0-9]*) exit "$POD_BROKE" ;; esac
	if [ "$size_out" = - ]; then
		[ -f "$out_file" ] && [ -f "$err_file" ] || exit "$POD_BROKE"
		size_out=$(($(wc -c <"$out_file")))
		size_err=$(($(wc -c <"$err_file")))
	fi
	send_new_output
	[ "$size_out" = "$sent_out" ] && [ "$size_err" = "$sent_err" ] && exit "$code"
	exit "$POD_BROKE"
}

# The command has ended: its files are whole. A status that may be ours is
# confirmed by a finish step that compares the sizes with what arrived, so
# they are counted; any other is the command's, and what is left is sent
# as it is.
send_rest() {
	if status_may_be_ours "$code"; then
		send_new_output
		return
	fi
	[ -f "$out_file" ] && [ -f "$err_file" ] || exit "$POD_BROKE"
	[ -s "$out_file" ] && { tail -c +$((sent_out + 1)) "$out_file" || exit "$POD_BROKE"; }
	[ -s "$err_file" ] && { tail -c +$((sent_err + 1)) "$err_file" >&6 || exit "$POD_BROKE"; }
	sent_out=-
	sent_err=-
}

# One message from the wake FIFO, into `message` as it came and `word_kind`:
#   t          a tick
#   g          a reader's mark (read_last_word)
#   w          the waiter's last word with no code: none will come
#   wCCCL      the waiter's last word: the code in three digits, and 1 when
#              a relay failed (else 0), into word_code and word_lost
# dash reads a FIFO a byte at a time, so two readers that read at once may
# split a message between them: anything of another shape is read as a
# tick, and a part of a last word is never taken for a code (a split word
# leaves the reader with no code, as a waiter that could not say one does).
read_message() {
	read -r message <&3
	word_code=
	word_lost=
	case "$message" in
	w[0-9][0-9][0-9][01])
		word_kind=w
		word_code=${message#w}
		word_lost=${word_code#???}
		word_code=$((1${word_code%?} - 1000))
		[ "$word_lost" = 1 ] || word_lost=
		;;
	w | g) word_kind=$message ;;
	*) word_kind=t ;;
	esac
}

# The waiter's last word, read while the code's file is missing (removed,
# or never written: a full disk): the code it carries is the command's.
# With no code, none will come.
end_from_last_word() {
	case "$word_code" in '' | *[!0-9]*) end_without_code ;; esac
	[ -z "$word_lost" ] || end_without_code
	code=$word_code
	send_rest
	[ -s "$run_path.done" ] || write_done
	exit "$code"
}

# Several readers of one run may be alive at once: a cut stream leaves its
# reader running until it next writes (one with nothing to write never meets
# SIGPIPE), and each reattach starts another. They share the wake FIFO, so
# a reader may read a message meant for another. Two rules keep every
# message reaching the reader that needs it:
# - the newest reader is the one named in `reader` (a reader names itself
#   when it starts); a reader named out by a newer one passes on what it
#   read, if it was the waiter's last word or a reader's mark, and ends;
# - a tick is never killed: every reader waiting in `read` has a tick of
#   its own on the way (each round starts one, and reads one message), so
#   a tick another reader took is made up for by that reader's own.
# A `reader` that cannot be read (the temp folder emptied) names no one:
# the reader goes on.
is_named_out() {
	newest=
	{ read -r newest <"$run_path.reader"; } 2>/dev/null
	[ -n "$newest" ] && [ "$newest" != "$$" ]
}

# After a read: a reader named out passes the message on and ends (its
# stream is most likely gone: a newer reader follows the run).
end_if_named_out() {
	is_named_out || return 0
	case "$word_kind" in w | g) echo "$message" >&3 ;; esac
	exit "$POD_BROKE"
}

# The waiter has ended with no code's file: its last word, if it said one,
# is in the wake FIFO, maybe behind ticks. A mark of our own put after them
# bounds the read: ticks started before it come first, and no reader that
# takes the mark keeps it.
read_last_word() {
	echo g >&3
	while read_message; do
		end_if_named_out
		case "$word_kind" in
		w) end_from_last_word ;;
		g) end_without_code ;;
		esac
	done
	end_without_code
}

follow_run() {
	[ -s "$run_path.done" ] && end_from_done
	# Files removed before the end: the record is gone. (A redirection that
	# fails ends a shell at `exec`: the files are looked at first.)
	[ -f "$run_path.out" ] && [ -f "$run_path.err" ] || exit "$POD_NO_RECORD"
	# The wake FIFO is opened read-write (never blocks) before the end is
	# looked for, so an end written after the look wakes the read. (A start's
	# reader has it already, as its waiter does: opened once.)
	[ -n "$wake_open" ] || exec 3<>"$run_path.wake"
	exec 4<"$run_path.out" 5<"$run_path.err"
	[ -r /proc/self/fd/4 ] && [ -r /proc/self/fd/5 ] && {
		out_file=/proc/self/fd/4
		err_file=/proc/self/fd/5
	}
	echo "$$" >"$run_path.reader"
	round=0
	while :; do
		[ -s "$run_path.done" ] && end_from_done
		# (A relay that could not write the output into its file left `lost`:
		# the output is incomplete, and no `done` says otherwise.)
		if [ -s "$run_path.code" ]; then
			read -r code <"$run_path.code"
			[ -e "$run_path.lost" ] && end_without_code
			send_rest
			[ -s "$run_path.done" ] || write_done
			exit "$code"
		fi
		send_new_output
		[ -n "$relay_out_pid" ] || { read -r waiter_pid relay_err_pid relay_out_pid <"$run_path.w"; } 2>/dev/null
		# A relay stopped (by the command, or one of its children) would never
		# end, nor would the waiter's wait for it: it is let go on.
		for pid in $relay_err_pid $relay_out_pid; do
			stat_line=
			{ read -r stat_line <"/proc/$pid/stat"; } 2>/dev/null
			stat_line=${stat_line##*) }
			case "${stat_line%% *}" in T | t) kill -CONT "$pid" 2>/dev/null ;; esac
		done
		# When the waiter has ended without writing the code (something killed
		# it), waiting longer would never end.
		if [ -n "$waiter_pid" ] && [ -r /proc/$$/stat ]; then
			state=
			{ read -r unused unused state unused <"/proc/$waiter_pid/stat"; } 2>/dev/null
			if [ -z "$state" ] || [ "$state" = Z ]; then
				[ -s "$run_path.code" ] || read_last_word
			fi
		fi
		# Nor will it when the command has ended and its parent (which holds
		# its status) is stopped, or it is gone and the waiter is stopped: a
		# command may stop what waits for it. (The command's state follows the
		# last ")" of its stat's first line; a zombie is confirmed by its
		# status, whose name is escaped: a name may hold a newline and a
		# ") Z ".)
		[ -n "$command_pid" ] || { read -r command_pid <"$run_path.pid"; } 2>/dev/null
		if [ -n "$command_pid" ] && [ -r /proc/$$/stat ]; then
			stat_line=
			state=
			{ read -r stat_line <"/proc/$command_pid/stat"; } 2>/dev/null
			if [ -z "$stat_line" ]; then
				{ read -r unused unused state unused <"/proc/$waiter_pid/stat"; } 2>/dev/null
			else
				stat_line=${stat_line##*) }
				state=${stat_line%% *}
				parent_pid=
				if [ "$state" = Z ]; then
					state=
					{
						while read -r field value unused; do
							case "$field" in
							State:) state=$value ;;
							PPid:)
								parent_pid=$value
								break
								;;
							esac
						done <"/proc/$command_pid/status"
					} 2>/dev/null
				fi
				if [ "$state" = Z ] && [ -n "$parent_pid" ]; then
					state=
					{ read -r unused unused state unused <"/proc/$parent_pid/stat"; } 2>/dev/null
				else
					state=
				fi
			fi
			# (The stopped waiter, or the command's parent where the waiter's
			# pid is not known, is killed: the step's shell waits for it.)
			case "$state" in T | t) [ -s "$run_path.code" ] || {
				kill -KILL "${waiter_pid:-$parent_pid}" 2>/dev/null
				end_without_code
			} ;; esac
		fi
		# A tick, written through the open descriptor (the folder may have
		# been removed), wakes the read: every 0.1 s for 2 s after output
		# moved (or after the start), then every second (a sleep without
		# fractions sleeps 1 s).
		[ "$moved" = 1 ] && round=0
		if [ "$round" -lt 20 ]; then tick_s=0.1; else tick_s=1; fi
		round=$((round + 1))
		(sleep "$tick_s" || sleep 1; echo t >&3) >/dev/null 6>&- &
		read_message
		end_if_named_out
		[ "$word_kind" = w ] && [ ! -s "$run_path.code" ] && [ ! -s "$run_path.done" ] && end_from_last_word
	done
}
