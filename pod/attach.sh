#!/bin/sh
# Attach: follow the run from the offsets the host has received.
# shellcheck source=lib/table.sh
. ./lib/table.sh
# shellcheck source=lib/setup.sh
. ./lib/setup.sh
# shellcheck source=lib/done.sh
. ./lib/done.sh
# shellcheck source=lib/follow.sh
. ./lib/follow.sh
follow_run
