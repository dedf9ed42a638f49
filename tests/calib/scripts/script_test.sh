# Shared set-up of the calibration-script tests; sourced with the repository root as $1: a
# temporary directory D (removed on exit), the Python to run (PY, from $PYTHON), the scripts'
# directory S, and fail MESSAGE, which prints the table under test ($D/t.csv) and exits 1.
set -u
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
PY=${PYTHON:-python3}
S=$1/calib/scripts
fail() { echo "FAIL: $*"; cat "$D/t.csv"; exit 1; }
