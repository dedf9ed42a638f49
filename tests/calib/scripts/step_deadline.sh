#!/usr/bin/env bash
# The calibration scripts' `step` (calib/scripts/common.sh) under CALIB_DEADLINE: a step runs with
# its limit shrunk to the time left, and a step with no time left is skipped and logged, so that
# run_all.sh ends inside one device call. Runs without a GPU: the commands are plain shell.
set -u
OUT_DIR=$(mktemp -d)
trap 'rm -rf "$OUT_DIR"' EXIT
source "$1/calib/scripts/common.sh"
calib_start test
fail() { echo "FAIL: $*"; cat "$LOG"; exit 1; }

CALIB_DEADLINE=$(($(date +%s) + 3600))
step quick 60 true
grep -q 'quick: rc=0' "$LOG" || fail "a step inside the deadline runs"

CALIB_DEADLINE=$(($(date +%s) + 6))
t0=$SECONDS
step long 60 sleep 30
((SECONDS - t0 <= 10)) || fail "the limit was not shrunk to the deadline"
grep -q 'long: rc=124' "$LOG" || fail "a step cut at the deadline reports rc=124"

CALIB_DEADLINE=$(($(date +%s) - 1))
step late 60 touch "$OUT_DIR/ran"
[[ ! -e $OUT_DIR/ran ]] || fail "a step after the deadline ran"
grep -q 'late: rc=124 in 0 s (skipped: deadline)' "$LOG" || fail "a skipped step is logged"
echo "ok"
