#!/usr/bin/env bash
# calib/scripts/append_run.py, which appends a run that extends a committed table's axes (run 72):
# the table's comments and rows stay in order, the run's comments follow the table's with the
# prefix and the run's file name, its rows follow the table's; a run with a point the table
# already holds, or of another header, is an error that leaves the table as it was.
source "$(dirname "$0")/script_test.sh"
cat >"$D/t.csv" <<'CSV'
# probe: attention
backend,set,seq,flops,time_s,tflops
flash,gqa,1024,1e+09,1e-05,100
CSV
printf '# date_utc: today\nbackend,set,seq,flops,time_s,tflops\nflash,gqa,2048,4e+09,2e-05,200\n' >"$D/new.csv"
"$PY" "$S/append_run.py" "$D/t.csv" "$D/new.csv" "run 9 (flash)" >/dev/null || fail "exit status"
expected=$(printf '# probe: attention\n# run 9 (flash), new.csv: date_utc: today\nbackend,set,seq,flops,time_s,tflops\nflash,gqa,1024,1e+09,1e-05,100\nflash,gqa,2048,4e+09,2e-05,200')
[[ $(cat "$D/t.csv") == "$expected" ]] || fail "comments, header and rows in order"
cp "$D/t.csv" "$D/before.csv"
printf 'backend,set,seq,flops,time_s,tflops\nflash,gqa,1024,1e+09,3e-05,33\n' >"$D/clash.csv"
"$PY" "$S/append_run.py" "$D/t.csv" "$D/clash.csv" x 2>/dev/null && fail "a point the table holds"
printf 'backend,set,seq,time_s\nflash,gqa,4096,1e-04\n' >"$D/other.csv"
"$PY" "$S/append_run.py" "$D/t.csv" "$D/other.csv" x 2>/dev/null && fail "another header"
cmp -s "$D/t.csv" "$D/before.csv" || fail "the table changed by a refused run"
echo ok
