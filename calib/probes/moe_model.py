"""A mixture-of-experts Llama in plain PyTorch, for step_check.py's `moe` layout: Mixtral-8x7B's
layer shape (8 SwiGLU experts of width 14336, top-2, hidden 4096, GQA 32/8 heads), experts split
over all ranks (expert parallelism, ep = world), everything else replicated (data parallelism
over the same ranks, each rank its own microbatch), as Megatron-core's MoELayer with the
all-to-all token dispatcher runs it and the simulator models it (workloads/moe_ops.cpp): router
GEMM (BF16) with softmax and top-k; permutation of the token copies by expert; all-to-all over
the EP group; the rank's local experts as batched GEMMs (one [experts, tokens, hidden] bmm per
linear, the work of TE's GroupedLinear); all-to-all back; unpermute as the routing-weighted sum.
Routing is balanced by construction (token copy i goes to expert i mod experts; the router's
probabilities still weight the outputs), the simulator's default moe_imbalance 1. Attention,
norms and loss are tp_model.py's layer (eager modules, transformers' loss). Gradients of the
replicated parameters are all-reduced by torch DDP (BF16, 4e7-element buckets); the experts'
are not (edp = 1).
Not a model anyone trains: it exists to time a real EP step beside the simulator's prediction.
"""

import torch
import torch.distributed as dist
import torch.nn.functional as F

from tp_model import bf16_param, llama_layer, ones_param, rms_norm, rope_tables


class _AllToAll(torch.autograd.Function):
    """Equal-split all-to-all of the rows of a [rows, hidden] tensor over `group`; the backward
    is the same exchange of the gradients."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        out = torch.empty_like(x)
        dist.all_to_all_single(out, x.contiguous(), group=group)
        return out

    @staticmethod
    def backward(ctx, g):
        out = torch.empty_like(g)
        dist.all_to_all_single(out, g.contiguous(), group=ctx.group)
        return out, None


def moe_params(dev, hidden, heads, kv_heads, head_dim, local_experts, expert_ffn, experts):
    """One layer's weights: attention and norms replicated, `local_experts` experts of this rank."""
    b = torch.nn.Module()
    b.ln1, b.ln2 = ones_param(dev, hidden), ones_param(dev, hidden)
    b.qkv = bf16_param(dev, (heads + 2 * kv_heads) * head_dim, hidden)
    b.o = bf16_param(dev, hidden, heads * head_dim)
    b.router = bf16_param(dev, experts, hidden)
    b.w13 = bf16_param(dev, local_experts, hidden, 2 * expert_ffn)
    b.w2 = bf16_param(dev, local_experts, expert_ffn, hidden)
    return b


class MoeLlama(torch.nn.Module):
    """`layers` Mixtral-shaped layers, experts split over `group` (all ranks when None)."""

    def __init__(self, layers, seq, dev, hidden=4096, expert_ffn=14336, heads=32, kv_heads=8,
                 vocab=32000, experts=8, top_k=2, group=None):
        super().__init__()
        self.group = group
        self.ep = dist.get_world_size(group)
        if experts % self.ep:
            raise ValueError("ep must divide the number of experts")
        self.h, self.d, self.heads, self.kv = hidden, hidden // heads, heads, kv_heads
        self.experts, self.local, self.top_k = experts, experts // self.ep, top_k
        self.embed = bf16_param(dev, vocab, hidden)
        self.blocks = torch.nn.ModuleList(
            moe_params(dev, hidden, heads, kv_heads, self.d, self.local, expert_ffn, experts)
            for _ in range(layers))
        self.norm = ones_param(dev, hidden)
        self.head = bf16_param(dev, vocab, hidden)
        self.cos, self.sin = rope_tables(seq, self.d, dev)

    def expert_params(self):
        """Names of the expert weights (sharded over EP: DDP must not all-reduce them)."""
        return [n for n, _ in self.named_parameters() if n.endswith((".w13", ".w2"))]

    def _moe(self, b, y):
        s, h = y.shape[1], self.h
        x = y.view(s, h)
        probs = torch.softmax(F.linear(x, b.router).float(), dim=-1)
        torch.topk(probs, self.top_k, dim=-1)  # the router's top-k kernel; routing is balanced
        copies = s * self.top_k
        expert = torch.arange(copies, device=x.device) % self.experts  # balanced assignment
        token = torch.arange(copies, device=x.device) // self.top_k
        weight = probs[token, expert].to(x.dtype)
        order = torch.argsort(expert, stable=True)  # copies grouped by expert = by owner rank
        routed = _AllToAll.apply(x.index_select(0, token[order]), self.group)
        # Received from each rank: its copies for this rank's experts, expert-major per rank.
        per = copies // self.experts
        grouped = routed.view(self.ep, self.local, per, h).transpose(0, 1).reshape(self.local, -1, h)
        gate, up = torch.bmm(grouped, b.w13).chunk(2, dim=-1)
        out = torch.bmm(F.silu(gate) * up, b.w2)
        back = out.view(self.local, self.ep, per, h).transpose(0, 1).reshape(-1, h)
        combined = _AllToAll.apply(back, self.group)
        result = torch.zeros_like(x).index_add_(0, token[order], combined * weight[order].unsqueeze(-1))
        return result.view(1, s, h)

    def forward(self, input_ids, labels):
        s = input_ids.shape[1]
        x = F.embedding(input_ids, self.embed)
        for b in self.blocks:
            x = llama_layer(b, x, s, self.heads, self.kv, self.d, self.cos, self.sin,
                            mlp=lambda y, b=b: self._moe(b, y))
        logits = F.linear(rms_norm(x, self.norm), self.head)
        target = torch.roll(labels, -1, dims=1)
        return F.cross_entropy(logits.float().view(s, -1), target.view(s))


def check_moe(dev, group=None, tokens=64):
    """Max relative error of the dispatched MoE block against the same experts applied locally
    (every rank's expert weights all-gathered), on a small random layer."""
    torch.manual_seed(7 + dist.get_rank(group))
    m = MoeLlama(1, tokens, dev, hidden=256, expert_ffn=512, heads=4, kv_heads=2, vocab=512, group=group)
    b = m.blocks[0]
    x = torch.randn(1, tokens, 256, device=dev, dtype=torch.bfloat16)
    with torch.no_grad():
        got = m._moe(b, x).float().view(tokens, -1)
        w13 = torch.empty((m.ep,) + tuple(b.w13.shape), device=dev, dtype=b.w13.dtype)
        w2 = torch.empty((m.ep,) + tuple(b.w2.shape), device=dev, dtype=b.w2.dtype)
        dist.all_gather_into_tensor(w13, b.w13.detach().contiguous(), group=group)
        dist.all_gather_into_tensor(w2, b.w2.detach().contiguous(), group=group)
        w13, w2 = w13.view(m.experts, 256, -1).float(), w2.view(m.experts, -1, 256).float()
        probs = torch.softmax(F.linear(x.view(tokens, -1), b.router).float(), dim=-1)
        ref = torch.zeros(tokens, 256, device=dev)
        for i in range(tokens * m.top_k):
            t, e = i // m.top_k, i % m.experts
            gate, up = (x[0, t].float() @ w13[e]).chunk(2)
            ref[t] += probs[t, e] * ((F.silu(gate) * up) @ w2[e])
    return float((got - ref).abs().max() / ref.abs().max())
