#!/usr/bin/env bash
# calib/scripts/mean_points.py, which folds repeated measurements of some points into a committed
# table (run 61): a point both NEW files hold takes exp((A log t_table + B mean log t_new) / (A+B))
# with tflops recomputed; other rows, the header and the comments stay; a provenance line is
# added; a table none of whose points NEW holds, or NEW files of different points, are errors.
source "$(dirname "$0")/script_test.sh"
cat >"$D/t.csv" <<'CSV'
# probe: gemm
dtype,layout,m,n,k,flops,time_s,tflops,sm_mhz
bf16,fwd,1024,512,512,1e+09,8e-06,125,1500
bf16,fwd,2048,512,512,2e+09,1e-05,200,1500
CSV
printf 'dtype,layout,m,n,k,flops,time_s,tflops,sm_mhz\nbf16,fwd,2048,512,512,2e+09,2e-05,100,1600\nfp8,tn,2048,512,512,2e+09,1e-05,200,1600\n' >"$D/a.csv"
printf 'dtype,layout,m,n,k,flops,time_s,tflops,sm_mhz\nbf16,fwd,2048,512,512,2e+09,4e-05,50,1700\nfp8,tn,2048,512,512,2e+09,1e-05,200,1600\n' >"$D/b.csv"
"$PY" "$S/mean_points.py" "$D/t.csv" --weights 1:2 "$D/a.csv" "$D/b.csv" 2>/dev/null || fail "exit status"
# exp((log 1e-5 + 2 log sqrt(2e-5 * 4e-5)) / 3) = (1e-5 * 2e-5 * 4e-5)^(1/3) = 2e-5
grep -qx 'bf16,fwd,2048,512,512,2e+09,2e-05,100,1500' "$D/t.csv" || fail "the three-run mean"
grep -qx 'bf16,fwd,1024,512,512,1e+09,8e-06,125,1500' "$D/t.csv" || fail "an untouched row"
grep -q '^# probe: gemm$' "$D/t.csv" || fail "the provenance kept"
grep -q '^# mean_points: at 1 points' "$D/t.csv" || fail "the provenance line"
[[ $(grep -c '^fp8' "$D/t.csv") == 0 ]] || fail "a row TABLE lacks was added"
printf 'dtype,layout,m,n,k,flops,time_s,tflops,sm_mhz\nbf16,fwd,4096,512,512,4e+09,1e-05,400,1600\n' >"$D/c.csv"
"$PY" "$S/mean_points.py" "$D/t.csv" --weights 1:1 "$D/c.csv" 2>/dev/null && fail "no point matched"
"$PY" "$S/mean_points.py" "$D/t.csv" --weights 1:2 "$D/a.csv" "$D/c.csv" 2>/dev/null && fail "NEW files of other points"
echo ok
