set -u
t0=$(date +%s)
source bench/_gpu_env.sh
GREP='-y 3 -x 3' CASES=FP32-W-NCHW,FP32-W-NHWC SOLVERS='ConvTritonImplicitGemmTf32x3Wrw' CANDIDATES=48 PER_SOLVER=4 TUNE_S=150 TUNE_TIMEOUT_S=200 bash bench/gpu_tune_bench.sh /tmp/t3 2>&1 | tail -4
cp /tmp/t3/tune_bench.tgz $OUT/t3.tgz; echo "t3 $(( $(date +%s)-t0 ))s"
mkdir -p /tmp/t3x && tar xzf /tmp/t3/tune_bench.tgz -C /tmp/t3x
miopenkernels db merge /tmp/t3x/tune/sm9084.HIP.fdb.txt /tmp/t3x/tune/sm9084.db.txt --out dbs/sm9084 2>&1 | tail -2
git diff --stat dbs/ | tail -1
bash bench/gpu_kernels.sh /tmp/kk h100 --types FP16,FP32,TF32,BF16 --batches 32,1,64 --budget-s 330 > /tmp/kk.log 2>&1; echo "kernels $(( $(date +%s)-t0 ))s"; tail -3 /tmp/kk.log
tar czf $OUT/kk.tgz -C /tmp/kk .
