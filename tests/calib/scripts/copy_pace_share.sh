#!/usr/bin/env bash
# calib/scripts/copy_pace_share.py, which derives calib/data/h200/copy_pace_share.csv (the cost
# model's shares beside paced host copies) from the profiled steps of runs 84, 88, 89, 91 and 97:
# first on a small step whose answer is known, then the committed table must be exactly what the
# script makes of the committed runs (its date and command lines aside), so table and data cannot drift apart.
source "$(dirname "$0")/script_test.sh"
mkdir -p "$D/run1"
# Alone: two GEMMs of 100 us, one attention of 50 us. Paced: the first GEMM apart from the copy
# at 99 us (the step's rate 0.99), the second wholly beside it at 110 us: s = (110 / 0.99 - 100)
# / 100 = 0.111111; the attention kernel has no kernel of its class apart: no point.
{
  echo "# gpu0: NVIDIA H200 sms=132 cc=9.0"
  echo "seq,run,kind,name,class,start_us,dur_us"
  echo "4096,alone,kernel,g1,gemm,0,100"
  echo "4096,alone,kernel,g2,gemm,200,100"
  echo "4096,alone,kernel,a1,attention,400,50"
  echo "4096,paced,kernel,g1,gemm,0,99"
  echo "4096,paced,kernel,g2,gemm,200,110"
  echo "4096,paced,kernel,a1,attention,400,60"
  echo "4096,paced,memcpy,Memcpy DtoH,copy,150,2000"
  echo "4096,paced,memcpy,Memcpy HtoD small,copy,0,10"
} >"$D/run1/copy_pace_kernels_64.csv"
cp "$D/run1/copy_pace_kernels_64.csv" "$D/t.csv"
"$PY" "$S/copy_pace_share.py" "$D/run1" >"$D/o.csv" || fail "exit status"
grep -q '^run1,NVIDIA H200,64,4096,gemm,1,0.0001,0.990000,0.111111$' "$D/o.csv" || fail "the GEMM point: $(cat "$D/o.csv")"
[[ $(grep -c ',attention,' "$D/o.csv") == 0 ]] || fail "a class without kernels apart made a point"
R=$1/calib/data
"$PY" "$S/copy_pace_share.py" "$R/h200/run84" "$R/h100/run88" "$R/h100/run89" "$R/h100/run91" "$R/h100/run97" >"$D/all.csv" ||
  fail "the committed runs"
cp "$R/h200/copy_pace_share.csv" "$D/t.csv"
diff <(grep -v '^# d[ae]' "$D/all.csv") <(grep -v '^# d[ae]' "$R/h200/copy_pace_share.csv") ||
  fail "copy_pace_share.csv is not what copy_pace_share.py makes of runs 84, 88, 89, 91 and 97"
echo ok
