"""GPU power by activity class: what one GPU draws while it runs GEMMs, attention, memory-bound
kernels, NCCL collectives, spins in a collective waiting for a peer, or sits idle.

Feeds the `power:` figures of the platform catalog (docs/energy.md, "GPU power model"). Needs 2
GPUs of one host (NCCL phases), PyTorch and nvidia-ml-py. Usage:
    python3 energy/probes/power_by_activity.py OUT.json [--phase-s 20]
The parent process samples NVML (no CUDA context of its own) every 50 ms: the board's cumulative
energy counter (nvmlDeviceGetTotalEnergyConsumption, mJ), instantaneous power, SM/memory clocks and
temperature. Each phase's power is energy counted over the phase's steady window (its first
`settle` seconds dropped) divided by that window's length, per GPU.
"""
import json
import os
import sys
import time

import pynvml
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

PHASE_S = 20.0
SETTLE_S = 4.0


def _loop(seconds, body, sync_every):
    """Runs body() until `seconds` have passed; returns iterations and elapsed time."""
    torch.cuda.synchronize()
    t0 = time.time()
    n = 0
    while True:
        for _ in range(sync_every):
            body()
        n += sync_every
        torch.cuda.synchronize()
        if time.time() - t0 >= seconds:
            return n, time.time() - t0


def worker(rank, world, q, phase_s):
    torch.cuda.set_device(rank)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    dist.init_process_group("nccl", rank=rank, world_size=world)
    dev = torch.device("cuda", rank)
    n = 8192
    a = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    a8 = a.to(torch.float8_e4m3fn)
    b8 = b.to(torch.float8_e4m3fn)
    one = torch.tensor(1.0, device=dev)
    big = 1 << 30  # elements: 2 GiB of bf16 per tensor
    x = torch.randn(big, device=dev, dtype=torch.bfloat16)
    y = torch.randn(big, device=dev, dtype=torch.bfloat16)
    z = torch.empty_like(x)
    qk = [torch.randn(4, 32, 4096, 128, device=dev, dtype=torch.bfloat16) for _ in range(3)]
    ar = torch.randn(1 << 29, device=dev, dtype=torch.bfloat16)  # 1 GiB
    small = torch.ones(1, device=dev)
    side = torch.cuda.Stream(device=dev)
    dist.all_reduce(small)
    torch.cuda.synchronize()
    results = {}

    def phase(name, fn):
        dist.barrier()
        torch.cuda.synchronize()
        t0 = time.time()
        out = fn()
        torch.cuda.synchronize()
        t1 = time.time()
        dist.barrier()
        if rank == 0:
            q.put(("phase", name, t0, t1))
        results[name] = out

    def idle():
        time.sleep(phase_s * 0.75)
        return {}

    def gemm_bf16():
        it, el = _loop(phase_s, lambda: torch.mm(a, b), 20)
        return {"tflops": 2 * n ** 3 * it / el / 1e12}

    def gemm_fp8():
        f = lambda: torch._scaled_mm(a8, b8.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
        it, el = _loop(phase_s, f, 20)
        return {"tflops": 2 * n ** 3 * it / el / 1e12}

    def attention():
        f = lambda: torch.nn.functional.scaled_dot_product_attention(*qk, is_causal=True)
        it, el = _loop(phase_s, f, 10)
        flops = 4 * 4 * 32 * 4096 * 4096 * 128 / 2  # QK^T and PV, causal half
        return {"tflops": flops * it / el / 1e12}

    def membound():
        it, el = _loop(phase_s, lambda: torch.add(x, y, out=z), 10)
        return {"gbps": 3 * x.numel() * 2 * it / el / 1e9}  # two reads, one write

    def allreduce():
        it, el = _loop(phase_s, lambda: dist.all_reduce(ar), 5)
        return {"busbw_gbps": ar.numel() * 2 * it / el / 1e9}  # 2(n-1)/n = 1 for n = 2

    def gemm_and_allreduce():
        def body():
            with torch.cuda.stream(side):
                dist.all_reduce(ar)
            for _ in range(6):
                torch.mm(a, b)
            torch.cuda.current_stream().wait_stream(side)
        it, el = _loop(phase_s, body, 2)
        return {"tflops": 6 * 2 * n ** 3 * it / el / 1e12}

    def spin_wait():
        # Rank 0's GPU sits in an NCCL kernel waiting for rank 1, which arrives phase_s later.
        if rank == 1:
            time.sleep(phase_s * 0.75)
        dist.all_reduce(small)
        return {}

    def spin_wait_other():
        if rank == 0:
            time.sleep(phase_s * 0.75)
        dist.all_reduce(small)
        return {}

    phase("idle_context", idle)
    phase("gemm_bf16", gemm_bf16)
    phase("gemm_fp8", gemm_fp8)
    phase("attention_bf16", attention)
    phase("membound_add", membound)
    phase("nccl_allreduce", allreduce)
    phase("gemm_bf16_plus_allreduce", gemm_and_allreduce)
    phase("idle_after_load", idle)
    phase("nccl_spin_wait_rank0", spin_wait)
    phase("nccl_spin_wait_rank1", spin_wait_other)
    q.put(("result", rank, results))
    dist.destroy_process_group()


def sample(handles):
    row = {"t": time.time()}
    for i, h in enumerate(handles):
        row[f"e{i}"] = pynvml.nvmlDeviceGetTotalEnergyConsumption(h)
        row[f"p{i}"] = pynvml.nvmlDeviceGetPowerUsage(h)
        row[f"sm{i}"] = pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM)
        row[f"mem{i}"] = pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_MEM)
        row[f"temp{i}"] = pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU)
    return row


def summarize(rows, t0, t1, ngpu):
    w = [r for r in rows if t0 + SETTLE_S <= r["t"] <= t1]
    if len(w) < 2:
        return None
    out = {"window_s": w[-1]["t"] - w[0]["t"]}
    for i in range(ngpu):
        dt = w[-1]["t"] - w[0]["t"]
        out[f"gpu{i}"] = {
            "energy_avg_w": (w[-1][f"e{i}"] - w[0][f"e{i}"]) / 1000.0 / dt,
            "power_mean_w": sum(r[f"p{i}"] for r in w) / len(w) / 1000.0,
            "sm_mhz_mean": sum(r[f"sm{i}"] for r in w) / len(w),
            "mem_mhz_mean": sum(r[f"mem{i}"] for r in w) / len(w),
            "temp_c_max": max(r[f"temp{i}"] for r in w),
        }
    return out


def main():
    out_path = sys.argv[1]
    phase_s = float(sys.argv[sys.argv.index("--phase-s") + 1]) if "--phase-s" in sys.argv else PHASE_S
    pynvml.nvmlInit()
    ngpu = min(2, pynvml.nvmlDeviceGetCount())
    handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(ngpu)]
    info = {
        "gpu": pynvml.nvmlDeviceGetName(handles[0]),
        "driver": pynvml.nvmlSystemGetDriverVersion(),
        "power_limit_w": [pynvml.nvmlDeviceGetEnforcedPowerLimit(h) / 1000.0 for h in handles],
        "torch": torch.__version__,
        "phase_s": phase_s,
        "settle_s": SETTLE_S,
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    rows = []
    t_idle0 = time.time()
    while time.time() - t_idle0 < phase_s * 0.75:
        rows.append(sample(handles))
        time.sleep(0.05)
    phases = [("idle_no_context", t_idle0, time.time())]
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=worker, args=(r, ngpu, q, phase_s)) for r in range(ngpu)]
    for p in procs:
        p.start()
    results = {}
    while any(p.is_alive() for p in procs) or not q.empty():
        rows.append(sample(handles))
        while not q.empty():
            msg = q.get()
            if msg[0] == "phase":
                phases.append(msg[1:])
                print("phase", msg[1], round(msg[3] - msg[2], 1), "s", flush=True)
            else:
                results[f"rank{msg[1]}"] = msg[2]
        time.sleep(0.05)
    summary = {name: summarize(rows, t0, t1, ngpu) for name, t0, t1 in phases}
    doc = {"info": info, "phases": summary, "rates": results}
    with open(out_path, "w") as f:
        json.dump(doc, f, indent=1)
    with open(out_path + ".samples.json", "w") as f:
        json.dump({"phases": phases, "samples": rows}, f)
    print(json.dumps(doc, indent=1))


if __name__ == "__main__":
    main()
