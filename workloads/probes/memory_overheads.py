#!/usr/bin/env python3
"""Measures the device-memory overheads that the memory model (docs/memory-model.md) adds on top
of tensors: CUDA context, cuBLAS workspace, NCCL communicator buffers, and the caching allocator's
reserved/allocated ratio over a training loop. Needs PyTorch with CUDA and >= 2 GPUs for NCCL.
Prints one JSON object. Usage: python3 memory_overheads.py
"""
import json
import os
import subprocess

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

MIB = 1024 * 1024


def smi_used_mib(index):
    out = subprocess.check_output(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits",
                                   "-i", str(index)])
    return float(out.decode().strip())


def single_gpu(result):
    base = smi_used_mib(0)
    torch.cuda.set_device(0)
    torch.empty(1, device="cuda")
    torch.cuda.synchronize()
    result["context_mib"] = smi_used_mib(0) - base - torch.cuda.memory_reserved() / MIB
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    before = smi_used_mib(0) - torch.cuda.memory_reserved() / MIB
    for _ in range(3):
        c = a @ b
    torch.cuda.synchronize()
    after = smi_used_mib(0) - torch.cuda.memory_reserved() / MIB
    result["cublas_non_allocator_mib"] = after - before
    del a, b, c
    torch.cuda.empty_cache()
    result["allocator"] = fragmentation()


class Layer(torch.nn.Module):
    """A Llama-shaped block (RMSNorm, GQA attention through SDPA, SwiGLU MLP)."""

    def __init__(self, h, ffn, heads, kv_heads):
        super().__init__()
        d = h // heads
        self.heads, self.kv_heads, self.d = heads, kv_heads, d
        self.n1 = torch.nn.RMSNorm(h)
        self.qkv = torch.nn.Linear(h, (heads + 2 * kv_heads) * d, bias=False)
        self.proj = torch.nn.Linear(heads * d, h, bias=False)
        self.n2 = torch.nn.RMSNorm(h)
        self.fc1 = torch.nn.Linear(h, 2 * ffn, bias=False)
        self.fc2 = torch.nn.Linear(ffn, h, bias=False)

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.qkv(self.n1(x)).split(
            [self.heads * self.d, self.kv_heads * self.d, self.kv_heads * self.d], dim=-1)
        q = q.view(b, s, self.heads, self.d).transpose(1, 2)
        k = k.view(b, s, self.kv_heads, self.d).transpose(1, 2)
        v = v.view(b, s, self.kv_heads, self.d).transpose(1, 2)
        o = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        x = x + self.proj(o.transpose(1, 2).reshape(b, s, h))
        g, u = self.fc1(self.n2(x)).chunk(2, dim=-1)
        return x + self.fc2(torch.nn.functional.silu(g) * u)


def fragmentation():
    torch.cuda.reset_peak_memory_stats()
    h, ffn, heads, kv, layers, seq = 4096, 14336, 32, 8, 4, 8192
    model = torch.nn.Sequential(*[Layer(h, ffn, heads, kv) for _ in range(layers)]).cuda().bfloat16()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ratios = []
    for step in range(4):
        torch.cuda.reset_peak_memory_stats()
        x = torch.randn(1, seq, h, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        loss = model(x).float().pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        ratios.append(torch.cuda.max_memory_reserved() / torch.cuda.max_memory_allocated())
    params = sum(p.numel() for p in model.parameters())
    return {"steps_reserved_over_allocated": ratios, "params": params, "seq": seq,
            "peak_allocated_gib": torch.cuda.max_memory_allocated() / 2**30}


def nccl_worker(rank, world, queue):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = "29511"
    torch.cuda.set_device(rank)
    torch.empty(1, device="cuda")
    torch.cuda.synchronize()
    before = smi_used_mib(rank) - torch.cuda.memory_reserved() / MIB
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=torch.device("cuda", rank))
    t = torch.ones(64 * MIB // 2, device="cuda", dtype=torch.bfloat16)
    out = torch.empty(world * t.numel(), device="cuda", dtype=torch.bfloat16)
    a2a = torch.empty_like(t)
    steps = {}

    def mark(name):
        torch.cuda.synchronize()
        steps[name] = smi_used_mib(rank) - torch.cuda.memory_reserved() / MIB - before

    dist.all_reduce(t)
    mark("after_all_reduce")
    dist.all_gather_into_tensor(out, t)
    dist.reduce_scatter_tensor(t, out)
    mark("after_all_gather_reduce_scatter")
    dist.all_to_all_single(a2a, t)
    mark("after_all_to_all")
    ops = [dist.P2POp(dist.isend, t, 1 - rank), dist.P2POp(dist.irecv, a2a, 1 - rank)]
    for req in dist.batch_isend_irecv(ops):
        req.wait()
    mark("after_batched_p2p")
    # A second communicator over the same ranks: what each further communicator costs.
    group = dist.new_group([0, 1])
    dist.all_reduce(t, group=group)
    mark("after_second_communicator_all_reduce")
    dist.all_to_all_single(a2a, t, group=group)
    mark("after_second_communicator_all_to_all")
    after = smi_used_mib(rank) - torch.cuda.memory_reserved() / MIB
    queue.put({"rank": rank, "nccl_non_allocator_mib": after - before, "cumulative": steps})
    dist.destroy_process_group()


def main():
    result = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
              "cuda": torch.version.cuda, "nccl_version": ".".join(map(str, torch.cuda.nccl.version())),
              "NCCL_NVLS_ENABLE": os.environ.get("NCCL_NVLS_ENABLE")}
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    world = min(2, torch.cuda.device_count())
    procs = [ctx.Process(target=nccl_worker, args=(r, world, queue)) for r in range(world)]
    for p in procs:
        p.start()
    result["nccl_communicator"] = sorted([queue.get() for _ in procs], key=lambda r: r["rank"])
    for p in procs:
        p.join()
    single_gpu(result)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
