"""What one Hugging Face transformers Llama decoder layer costs on one GPU when eager PyTorch runs
it, as the S3 source's runs did (Hugging Face + DeepSpeed, docs/validation.md): Llama-3.1-8B's
layer (hidden 4096, FFN 14336, 32 heads, 8 KV heads, head 128, RMSNorm, RoPE, SwiGLU), BF16,
attention through transformers' "sdpa" implementation (the backend PyTorch picks), micro batch 1.

Per sequence length:
  - forward and forward+backward time of the layer (weights' gradients included), without and
    with activation checkpointing (torch.utils.checkpoint around the layer, as transformers'
    gradient_checkpointing); medians of batches queued behind heater matmuls (sustained power
    state, --heat-s);
  - the GPU kernel time of one forward+backward by kind, from the PyTorch profiler: GEMM
    (cuBLAS/CUTLASS/nvjet), attention (flash/cuDNN/memory-efficient SDPA kernels) and the rest
    (element-wise, reductions, copies);
  - memory above the layer's weights and input: held after the forward (saved activations) and
    the peak of forward+backward.
Not a table the cost model reads: a check of what the simulator's layer costs miss for an eager
framework (docs/calibration.md, run 19).

Usage: python3 hf_layer.py --device 0 --heat-s 20 --seqs 2048,4096,8192 --out hf_layer.csv
"""

import argparse
import importlib.metadata
import re

import torch
import torch.utils.checkpoint as ckpt

from probe_common import CsvWriter, add_heat_argument, fmt, open_device, time_fwd_bwd

GEMM = re.compile(r"gemm|nvjet|cutlass|xmma|sm90_|cublas", re.I)
ATTN = re.compile(r"flash|fmha|cudnn|attention|attn|sdpa", re.I)


def version(pkg):
    try:
        return importlib.metadata.version(pkg)
    except importlib.metadata.PackageNotFoundError:
        return "absent"


def build_layer(dev):
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaDecoderLayer, LlamaRotaryEmbedding
    cfg = LlamaConfig(hidden_size=4096, intermediate_size=14336, num_attention_heads=32,
                      num_key_value_heads=8, head_dim=128, rms_norm_eps=1e-5, rope_theta=500000.0,
                      max_position_embeddings=131072, attention_dropout=0.0, hidden_act="silu")
    cfg._attn_implementation = "sdpa"
    layer = LlamaDecoderLayer(cfg, layer_idx=0).to(device=dev, dtype=torch.bfloat16)
    for p in layer.parameters():  # random weights of the scale of a trained layer
        torch.nn.init.normal_(p, std=0.02) if p.dim() > 1 else torch.nn.init.ones_(p)
    return layer, LlamaRotaryEmbedding(cfg).to(dev)


def layer_forward(layer, rope, seq, checkpointed):
    pos = torch.arange(seq, device=layer.self_attn.q_proj.weight.device).unsqueeze(0)

    def run(h):
        cos, sin = rope(h, pos)
        out = layer(h, position_ids=pos, position_embeddings=(cos, sin))
        return out[0] if isinstance(out, tuple) else out

    if checkpointed:
        return lambda h: ckpt.checkpoint(run, h, use_reentrant=False)
    return run


def kernel_split(fn, inputs, grad_out):
    """GPU kernel seconds of one forward+backward by kind (gemm, attention, other)."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        torch.autograd.grad(fn(), inputs, grad_out)
        torch.cuda.synchronize()
    split = {"gemm": 0.0, "attention": 0.0, "other": 0.0}
    names = {"gemm": set(), "attention": set()}
    for e in prof.events():
        if e.device_type != torch.autograd.DeviceType.CUDA:
            continue
        kind = "attention" if ATTN.search(e.name) else "gemm" if GEMM.search(e.name) else "other"
        split[kind] += e.time_range.elapsed_us() * 1e-6
        if kind in names:
            names[kind].add(e.name[:60])
    return split, names


def measure(layer, rope, seq, checkpointed, dev, cps, heater, budget):
    h = torch.randn(1, seq, 4096, device=dev, dtype=torch.bfloat16, requires_grad=True)
    go = torch.randn(1, seq, 4096, device=dev, dtype=torch.bfloat16)
    inputs = [h] + list(layer.parameters())
    f = layer_forward(layer, rope, seq, checkpointed)
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated(dev)
    torch.cuda.reset_peak_memory_stats(dev)
    out = f(h)
    held = torch.cuda.memory_allocated(dev) - base
    torch.autograd.grad(out, inputs, go)
    del out
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated(dev) - base
    fw, bw, batches, calls = time_fwd_bwd(lambda: f(h), inputs, go, budget, cps, heater)
    split, names = kernel_split(lambda: f(h), inputs, go)
    return dict(fwd=fw, bwd=bw, batches=batches, calls=calls, held=held, peak=peak,
                split=split, names=names)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="hf_layer.csv")
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--seqs", default="2048,4096,8192,16384,32768,65536")
    ap.add_argument("--budget-s", type=float, default=2.0)
    add_heat_argument(ap)
    args = ap.parse_args()
    dev, cps, heater = open_device(args)
    layer, rope = build_layer(dev)
    csv = CsvWriter(args.out, "hf_layer (transformers LlamaDecoderLayer, eager PyTorch)",
                    [args.device], {
                        "packages": " ".join(f"{p}={version(p)}" for p in (
                            "transformers", "accelerate", "deepspeed", "liger-kernel",
                            "flash-attn", "transformer-engine", "megatron-core")),
                        "layer": "Llama-3.1-8B: hidden 4096, ffn 14336, heads 32, kv_heads 8, "
                                 "head_dim 128, bf16, attn_implementation sdpa, micro batch 1",
                        "timing": "median of batches queued behind heater matmuls (fwd: forward "
                                  "calls; bwd: autograd.grad to the input and every weight)",
                        "kernel_split": "PyTorch profiler, one forward+backward, CUDA kernel "
                                        "time by name: gemm / attention / other"})
    csv.header(["seq", "checkpointed", "fwd_s", "bwd_s", "fwd_bwd_s", "batches", "calls",
                "held_after_fwd_bytes", "peak_fwd_bwd_bytes", "kernels_gemm_s",
                "kernels_attention_s", "kernels_other_s"])
    for seq in (int(s) for s in args.seqs.split(",")):
        for checkpointed in (False, True):
            r = measure(layer, rope, seq, checkpointed, dev, cps, heater, args.budget_s)
            sp = r["split"]
            csv.row([seq, int(checkpointed), fmt(r["fwd"]), fmt(r["bwd"]), fmt(r["fwd"] + r["bwd"]),
                     r["batches"], r["calls"], r["held"], r["peak"], fmt(sp["gemm"]),
                     fmt(sp["attention"]), fmt(sp["other"])])
            print(seq, checkpointed, {k: len(v) for k, v in r["names"].items()}, flush=True)
            torch.cuda.empty_cache()
    csv.close()


if __name__ == "__main__":
    main()
