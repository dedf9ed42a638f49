"""Element-wise modules of a Hugging Face transformers Llama layer as eager PyTorch runs them, each
a chain of unfused kernels where Megatron/Transformer Engine run one fused kernel: LlamaRMSNorm
(to float32, pow, mean, rsqrt, mul, to bfloat16, weight mul), apply_rotary_pos_emb on q and k
(slices, neg, cat, two muls, add, on the heads-transposed views HF passes) and the SwiGLU of
LlamaMLP (act_fn(gate) * up). Forward and backward (autograd to every input and the norm's
weight), Llama-3.1-8B widths (hidden 4096, 32 + 8 heads of 128, FFN 14336), BF16, tokens 512 to
128k in 1.5x/2x steps. Medians of batches queued behind heater matmuls (sustained power state).

`bytes` is what the simulator's workload generator writes for the fused op of the same tokens
(docs/trace-format.md): norm 2 (forward) / 3 (backward) x tokens x hidden x 2 B; RoPE 2 x tokens x
(heads + kv_heads) x head_dim x 2 B both ways; SwiGLU 3 / 5 x tokens x ffn x 2 B. The cost model
looks these tables up by that figure for `training.elementwise: eager` (docs/cost-model.md).
Spot check: max relative error of each forward against a float32 evaluation of the formula.

Usage: python3 eager_ops.py --device 0 --heat-s 20 --out membound_eager.csv
"""

import argparse

import torch

from probe_common import CsvWriter, add_heat_argument, fmt, median, open_device, timed

HIDDEN, HEADS, KV_HEADS, HEAD_DIM, FFN = 4096, 32, 8, 128, 14336
TOKENS = [512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152,
          65536, 98304, 131072]


def rel_err(got, ref):
    return ((got.float() - ref).abs().max() / ref.abs().max().clamp_min(1e-30)).item()


def rmsnorm_case(s, dev):
    from transformers.models.llama.modeling_llama import LlamaRMSNorm
    norm = LlamaRMSNorm(HIDDEN, eps=1e-5).to(dev, torch.bfloat16)
    torch.nn.init.normal_(norm.weight, 1.0, 0.1)
    x = torch.randn(1, s, HIDDEN, device=dev, dtype=torch.bfloat16, requires_grad=True)
    xf = x.detach().float()
    ref = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-5) * norm.weight.float()
    err = rel_err(norm(x), ref)
    x_bytes = s * HIDDEN * 2
    return (lambda: (norm(x),)), [x, norm.weight], (2 * x_bytes, 3 * x_bytes), err


def rope_case(s, dev):
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding, apply_rotary_pos_emb
    cfg = LlamaConfig(hidden_size=HIDDEN, num_attention_heads=HEADS, num_key_value_heads=KV_HEADS,
                      head_dim=HEAD_DIM, rope_theta=500000.0, max_position_embeddings=262144)
    rope = LlamaRotaryEmbedding(cfg).to(dev)
    q = torch.randn(1, s, HEADS * HEAD_DIM, device=dev, dtype=torch.bfloat16, requires_grad=True)
    k = torch.randn(1, s, KV_HEADS * HEAD_DIM, device=dev, dtype=torch.bfloat16, requires_grad=True)
    pos = torch.arange(s, device=dev).unsqueeze(0)
    cos, sin = rope(q, pos)

    def forward():  # HF's layout: [b, s, n*d] -> view [b, s, n, d] -> transpose [b, n, s, d]
        qh = q.view(1, s, HEADS, HEAD_DIM).transpose(1, 2)
        kh = k.view(1, s, KV_HEADS, HEAD_DIM).transpose(1, 2)
        return apply_rotary_pos_emb(qh, kh, cos, sin)

    qf = q.detach().float().view(1, s, HEADS, HEAD_DIM).transpose(1, 2)
    c, sn = cos.float().unsqueeze(1), sin.float().unsqueeze(1)
    rot = torch.cat([-qf[..., HEAD_DIM // 2:], qf[..., :HEAD_DIM // 2]], dim=-1)
    err = rel_err(forward()[0], qf * c + rot * sn)
    rope_bytes = 2 * s * (HEADS + KV_HEADS) * HEAD_DIM * 2
    return forward, [q, k], (rope_bytes, rope_bytes), err


def swiglu_case(s, dev):
    act = torch.nn.SiLU()
    g = torch.randn(1, s, FFN, device=dev, dtype=torch.bfloat16, requires_grad=True)
    u = torch.randn(1, s, FFN, device=dev, dtype=torch.bfloat16, requires_grad=True)
    ref = torch.nn.functional.silu(g.detach().float()) * u.detach().float()
    err = rel_err(act(g) * u, ref)
    t_bytes = s * FFN * 2
    return (lambda: (act(g) * u,)), [g, u], (3 * t_bytes, 5 * t_bytes), err


CASES = {"rmsnorm_eager": rmsnorm_case, "rope_eager": rope_case, "swiglu_eager": swiglu_case}


def measure(forward, inputs, cps, heater, reps=7):
    """Median seconds per forward call (a tuple of outputs) and per backward (autograd.grad of
    every output to `inputs`)."""
    grads = [torch.randn_like(o) for o in forward()]
    est = 0.0
    for _ in range(2):  # warm-up; batch size from the queued time of one forward+backward
        est, _, _ = timed(lambda: torch.autograd.grad(forward(), inputs, grads), 2e-3, cps,
                          heater=heater)
    calls = max(1, min(32, int(4e-3 / max(est, 1e-7))))
    fw, bw = [], []
    for _ in range(reps):
        tf, _, outs = timed(lambda: [forward() for _ in range(calls)], 2e-3, cps, heater=heater)
        tb, _, _ = timed(lambda: [torch.autograd.grad(o, inputs, grads, retain_graph=True)
                                  for o in outs], 2e-3, cps, heater=heater)
        del outs
        fw.append(tf / calls)
        bw.append(tb / calls)
    return median(fw), median(bw), reps, calls


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="membound_eager.csv")
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--tokens", default=",".join(map(str, TOKENS)))
    add_heat_argument(ap)
    args = ap.parse_args()
    dev, cps, heater = open_device(args)
    csv = CsvWriter(args.out, "eager_ops (transformers Llama element-wise modules, eager PyTorch)",
                    [args.device], {
                        "widths": f"hidden {HIDDEN}, heads {HEADS}+{KV_HEADS} x {HEAD_DIM}, ffn {FFN}",
                        "timing": "median of 7 batches queued behind heater matmuls; fwd: forward "
                                  "calls; bwd: autograd.grad to every input (and the norm weight)",
                        "bytes": "the fused op's bytes as the workload generator writes them"})
    csv.header(["kernel", "shape", "bytes", "time_s", "gbps", "samples", "calls", "max_rel_err"])
    for name, case in CASES.items():
        for s in (int(t) for t in args.tokens.split(",")):
            forward, inputs, (b_fwd, b_bwd), err = case(s, dev)
            tf, tb, reps, calls = measure(forward, inputs, cps, heater)
            csv.row([f"{name}_fwd", s, b_fwd, fmt(tf), fmt(b_fwd / tf / 1e9, 5), reps, calls, fmt(err, 3)])
            csv.row([f"{name}_bwd", s, b_bwd, fmt(tb), fmt(b_bwd / tb / 1e9, 5), reps, calls, fmt(err, 3)])
            print(name, s, fmt(tf), fmt(tb), fmt(err, 3), flush=True)
            del forward, inputs
            torch.cuda.empty_cache()
    csv.close()


if __name__ == "__main__":
    main()
