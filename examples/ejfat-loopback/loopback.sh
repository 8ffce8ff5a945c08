#!/bin/sh
# EJFAT on one machine, with the shipped tables: nsc send -> nsc lb ->
# nsc recv over 127.0.0.1. Prints the receiver's counters; exits non-zero
# unless every event arrived whole.
#
#   NSC      the nsc binary (default: nsc on PATH)
#   EVENTS   events to send (default 100)
#   LB_PORT  the LB's port (default 19522)
#   RECV_PORT, TABLES  the receiver's port and a table script naming it
#            (default 19000 and lb-2025.tables beside this script)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
NSC=${NSC:-nsc}
EVENTS=${EVENTS:-100}
LB_PORT=${LB_PORT:-19522}
RECV_PORT=${RECV_PORT:-19000}
TABLES=${TABLES:-$here/lb-2025.tables}

"$NSC" recv --listen "127.0.0.1:$RECV_PORT" --events "$EVENTS" --duration 20s --verify &
recv=$!
"$NSC" lb --tables "$TABLES" --listen "127.0.0.1:$LB_PORT" --workers 1 --duration 25s >&2 &
lb=$!
trap 'kill $recv $lb 2>/dev/null || true' EXIT
sleep 1 # both listening
"$NSC" send --to "127.0.0.1:$LB_PORT" --events "$EVENTS" --size 100000 --rate 1000 >&2
wait $recv
kill -INT $lb
wait $lb || true
