#!/usr/bin/env bash
# Runs a command and passes only if BOTH its exit status is STATUS and its output (stdout + stderr) matches the
# extended regular expression REGEX; CTest's PASS_REGULAR_EXPRESSION alone ignores the exit status.
# Usage: expect-status.sh STATUS REGEX COMMAND [ARG...]
set -uo pipefail
if [ $# -lt 3 ]; then
  echo "usage: expect-status.sh STATUS REGEX COMMAND [ARG...]" >&2
  exit 2
fi
want=$1 regex=$2
shift 2
out=$("$@" 2>&1)
got=$?
printf '%s\n' "$out"
if [ "$got" != "$want" ]; then
  echo "expect-status: '$1' exited $got, expected $want" >&2
  exit 1
fi
if ! printf '%s\n' "$out" | grep -qE -- "$regex"; then
  echo "expect-status: the output of '$1' does not match: $regex" >&2
  exit 1
fi
