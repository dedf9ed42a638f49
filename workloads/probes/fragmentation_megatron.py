"""Caching-allocator overhead of a Megatron-shaped training loop, split into persistent and
transient memory.

Megatron-core keeps parameters and gradients in persistent contiguous buffers (DDP
param_and_grad_buffer) and the distributed optimizer's FP32 master weights and moments in
tensors allocated once; activations, gradients in flight and temporaries come and go every step.
The PyTorch caching allocator rounds large blocks to 2 MiB and gives a persistent allocation a
segment of its own size, so its overhead (reserved - allocated) comes from the transient part.
This probe measures, per configuration, from the third step on:

  static     = allocated bytes after setup (flat BF16 parameters, flat FP32 gradient buffer,
               FP32 master weights and AdamW moments)
  transient  = peak allocated - static
  factor     = (peak reserved - static) / transient

Model: Llama-shaped blocks (RMSNorm, GQA attention through SDPA, SwiGLU MLP), BF16, one
sequence per step; gradients accumulate into the flat FP32 buffer from post-accumulate hooks
(param.grad freed at once, as Megatron's gradient-accumulation fusion avoids it); fused AdamW
on the flat FP32 master; master copied back into the BF16 parameters. Also the plain-PyTorch
loop of memory_overheads.py (per-tensor AdamW, grads set to None) for comparison. Each
configuration runs in its own process (PYTORCH_CUDA_ALLOC_CONF must be set before CUDA starts).
Writes JSON. Needs PyTorch with CUDA.
"""

import argparse
import json
import os
import subprocess
import sys

GIB = 2**30


def run_one(mode, layers, seq):
    import torch
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from memory_overheads import Layer

    torch.manual_seed(0)
    h, ffn, heads, kv = 4096, 14336, 32, 8
    model = torch.nn.Sequential(*[Layer(h, ffn, heads, kv) for _ in range(layers)]).cuda().bfloat16()
    params = list(model.parameters())
    numel = sum(p.numel() for p in params)
    if mode == "megatron":
        flat = torch.empty(numel, dtype=torch.bfloat16, device="cuda")
        grad = torch.zeros(numel, dtype=torch.float32, device="cuda")
        off = 0
        views = []
        for p in params:
            n = p.numel()
            flat[off:off + n].copy_(p.data.flatten())
            p.data = flat[off:off + n].view_as(p)
            views.append(grad[off:off + n].view_as(p))
            off += n
        for p, g in zip(params, views):
            def hook(param, g=g):
                g.add_(param.grad)
                param.grad = None
            p.register_post_accumulate_grad_hook(hook)
        master = flat.float()
        master.grad = grad
        opt = torch.optim.AdamW([master], lr=1e-4, fused=True)
    else:
        opt = torch.optim.AdamW(params, lr=1e-4)
    torch.cuda.synchronize()
    rows = []
    static = None
    for step in range(5):
        torch.cuda.reset_peak_memory_stats()
        x = torch.randn(1, seq, h, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        loss = model(x).float().pow(2).mean()
        loss.backward()
        opt.step()
        if mode == "megatron":
            flat.copy_(master)
            grad.zero_()
        else:
            opt.zero_grad(set_to_none=True)
        del x, loss
        torch.cuda.synchronize()
        if step == 1:  # after the optimizer states exist
            static = torch.cuda.memory_allocated()
        if step >= 2:
            alloc, res = torch.cuda.max_memory_allocated(), torch.cuda.max_memory_reserved()
            rows.append({"step": step, "peak_allocated_gib": alloc / GIB, "peak_reserved_gib": res / GIB,
                         "static_gib": static / GIB,
                         "factor_transient": (res - static) / (alloc - static),
                         "reserved_over_allocated": res / alloc})
    return {"mode": mode, "layers": layers, "seq": seq, "params": numel,
            "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""), "steps": rows}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="fragmentation_megatron.json")
    ap.add_argument("--one", default="")  # internal: mode,layers,seq
    args = ap.parse_args()
    if args.one:
        mode, layers, seq = args.one.split(",")
        print(json.dumps(run_one(mode, int(layers), int(seq))))
        return
    configs = [("megatron", 4, 8192), ("megatron", 8, 8192), ("megatron", 4, 4096),
               ("megatron", 4, 16384), ("megatron", 2, 32768), ("plain", 4, 8192)]
    results = []
    for conf in ("", "expandable_segments:True"):
        for mode, layers, seq in configs:
            env = dict(os.environ)
            if conf:
                env["PYTORCH_CUDA_ALLOC_CONF"] = conf
            else:
                env.pop("PYTORCH_CUDA_ALLOC_CONF", None)
            out = subprocess.run([sys.executable, __file__, "--one", f"{mode},{layers},{seq}"],
                                 env=env, capture_output=True, text=True, timeout=300)
            if out.returncode != 0:
                results.append({"mode": mode, "layers": layers, "seq": seq, "alloc_conf": conf,
                                "error": out.stderr[-2000:]})
                continue
            results.append(json.loads(out.stdout.strip().splitlines()[-1]))
            print(json.dumps(results[-1]), flush=True)
    import torch
    meta = {"probe": "fragmentation_megatron", "torch": torch.__version__, "cuda": torch.version.cuda,
            "gpu": torch.cuda.get_device_name(0), "command": " ".join(sys.argv)}
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump({"meta": meta, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
