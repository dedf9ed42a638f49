"""A Megatron-style tensor-parallel Llama in plain PyTorch, for step_check.py's `tp` layout: the
shapes and collectives of Megatron-LM without sequence parallelism (Shoeybi et al. 2019), or with
it (sp=True; Korthikanti et al. 2022: norms and residuals on sequence shards, all-gather before
and reduce-scatter after each tensor-parallel block instead of the all-reduces): a
vocab-parallel embedding (all-reduce), per layer a column-parallel fused QKV and a row-parallel
output projection (all-reduce), a column-parallel fused gate/up and a row-parallel down
projection (all-reduce), and a vocab-parallel output layer with Megatron's vocab-parallel cross
entropy (all-reduces of the max logit, the target logit and the sum of exponentials). The
element-wise modules are transformers' eager ones (RMSNorm in FP32, rotate-half RoPE, SiLU * up),
as the simulator's `elementwise: eager`. Attention: PyTorch SDPA, causal, GQA.
Not a model anyone trains: it exists to time a real TP step beside the simulator's prediction.
"""

from types import SimpleNamespace

import torch
import torch.distributed as dist
import torch.nn.functional as F


class _CopyToTp(torch.autograd.Function):
    """Megatron's f: identity forward, all-reduce of the gradient over the TP group backward."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return x

    @staticmethod
    def backward(ctx, g):
        g = g.contiguous().clone()
        dist.all_reduce(g, group=ctx.group)
        return g, None


class _ReduceFromTp(torch.autograd.Function):
    """Megatron's g: all-reduce over the TP group forward, identity backward."""

    @staticmethod
    def forward(ctx, x, group):
        y = x.contiguous().clone()
        dist.all_reduce(y, group=group)
        return y

    @staticmethod
    def backward(ctx, g):
        return g, None


def _seq_gather(x, group):
    """All-gather of sequence shards [1, s/tp, h] into [1, s, h] (rank order = sequence order)."""
    tp, (_, sl, h) = dist.get_world_size(group), x.shape
    out = torch.empty(tp * sl, h, device=x.device, dtype=x.dtype)
    dist.all_gather_into_tensor(out, x.contiguous().view(sl, h), group=group)
    return out.view(1, tp * sl, h)


def _seq_reduce_scatter(x, group):
    """Reduce-scatter of [1, s, h] partial sums into this rank's sequence shard [1, s/tp, h]."""
    tp, (_, s, h) = dist.get_world_size(group), x.shape
    out = torch.empty(s // tp, h, device=x.device, dtype=x.dtype)
    dist.reduce_scatter_tensor(out, x.contiguous().view(s, h), group=group)
    return out.view(1, s // tp, h)


class _GatherSeq(torch.autograd.Function):
    """Megatron's gather_from_sequence_parallel_region: all-gather forward, reduce-scatter back."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return _seq_gather(x, group)

    @staticmethod
    def backward(ctx, g):
        return _seq_reduce_scatter(g, ctx.group), None


class _ScatterSeq(torch.autograd.Function):
    """Megatron's reduce_scatter_to_sequence_parallel_region: reduce-scatter forward, all-gather
    back."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return _seq_reduce_scatter(x, group)

    @staticmethod
    def backward(ctx, g):
        return _seq_gather(g, ctx.group), None


class _VocabParallelCrossEntropy(torch.autograd.Function):
    """Megatron's vocab-parallel cross entropy over logits sharded by vocabulary (mean loss)."""

    @staticmethod
    def forward(ctx, logits, target, start, group):
        local = logits.shape[-1]
        x = logits.float()
        top = x.max(dim=-1)[0]
        dist.all_reduce(top, op=dist.ReduceOp.MAX, group=group)
        x.sub_(top.unsqueeze(-1))
        outside = (target < start) | (target >= start + local)
        idx = (target - start).masked_fill(outside, 0)
        picked = x.gather(-1, idx.unsqueeze(-1)).squeeze(-1).masked_fill(outside, 0.0)
        dist.all_reduce(picked, group=group)
        x.exp_()
        total = x.sum(dim=-1)
        dist.all_reduce(total, group=group)
        loss = torch.log(total) - picked
        x.div_(total.unsqueeze(-1))
        ctx.save_for_backward(x, idx, outside)
        ctx.in_dtype = logits.dtype
        return loss.mean()

    @staticmethod
    def backward(ctx, g):
        softmax, idx, outside = ctx.saved_tensors
        n = softmax.shape[0]
        softmax.scatter_add_(-1, idx.unsqueeze(-1), -(~outside).float().unsqueeze(-1))
        softmax.mul_(g / n)
        return softmax.to(ctx.in_dtype), None, None, None


def rms_norm(x, w, eps=1e-5):
    """transformers' LlamaRMSNorm, eager."""
    h = x.to(torch.float32)
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    return w * h.to(x.dtype)


def rotate_half(x):
    a, b = x.chunk(2, dim=-1)
    return torch.cat((-b, a), dim=-1)


def bf16_param(dev, *shape, std=0.02):
    """A BF16 weight of random normal values (the scale of a trained layer)."""
    return torch.nn.Parameter(torch.randn(*shape, device=dev, dtype=torch.bfloat16) * std)


def ones_param(dev, n):
    """A BF16 norm weight of ones."""
    return torch.nn.Parameter(torch.ones(n, device=dev, dtype=torch.bfloat16))


def llama_layer_params(dev, hidden, heads, kv_heads, head_dim, ffn):
    """One Llama layer's weights (the local shard: heads, kv_heads and ffn of this rank)."""
    b = torch.nn.Module()
    b.ln1, b.ln2 = ones_param(dev, hidden), ones_param(dev, hidden)
    b.qkv = bf16_param(dev, (heads + 2 * kv_heads) * head_dim, hidden)
    b.o = bf16_param(dev, hidden, heads * head_dim)
    b.gate_up = bf16_param(dev, 2 * ffn, hidden)
    b.down = bf16_param(dev, hidden, ffn)
    return b


def rope_tables(seq, head_dim, dev):
    """Llama 3's rotary cos and sin tables (theta 500000), BF16, [seq, head_dim]."""
    inv = 1.0 / (500000.0 ** (torch.arange(0, head_dim, 2, device=dev).float() / head_dim))
    ang = torch.outer(torch.arange(seq, device=dev).float(), inv)
    emb = torch.cat((ang, ang), dim=-1)
    return emb.cos().to(torch.bfloat16), emb.sin().to(torch.bfloat16)


def _identity(y):
    return y


def llama_layer(b, x, s, heads, kv_heads, head_dim, cos, sin, enter=_identity, leave=_identity,
                attend=None, mlp=None):
    """One Llama layer over `s` tokens (eager RMSNorm, rotate-half RoPE, causal GQA SDPA, SiLU *
    up). `enter` runs before each column-parallel linear and `leave` after each row-parallel one
    (the TP collectives; identity without TP); `attend(q, k, v)` replaces the causal SDPA over
    the local tokens (context parallelism, cp_model.py); `mlp(y)` replaces the dense SwiGLU MLP
    on the normed input (mixture of experts, moe_model.py)."""
    q, k, v = F.linear(enter(rms_norm(x, b.ln1)), b.qkv).split(
        [heads * head_dim, kv_heads * head_dim, kv_heads * head_dim], dim=-1)
    q = q.view(1, s, heads, head_dim).transpose(1, 2)
    k = k.view(1, s, kv_heads, head_dim).transpose(1, 2)
    v = v.view(1, s, kv_heads, head_dim).transpose(1, 2)
    cos, sin = cos[:s], sin[:s]
    q = q * cos + rotate_half(q) * sin
    k = k * cos + rotate_half(k) * sin
    if attend is None:
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    else:
        a = attend(q, k, v)
    x = x + leave(F.linear(a.transpose(1, 2).reshape(1, s, heads * head_dim), b.o))
    if mlp is not None:
        return x + mlp(rms_norm(x, b.ln2))
    gate, up = F.linear(enter(rms_norm(x, b.ln2)), b.gate_up).chunk(2, dim=-1)
    return x + leave(F.linear(F.silu(gate) * up, b.down))


class TpLlama(torch.nn.Module):
    """Llama-3 8B's layer shape by default, `layers` layers, sharded over `group` (a process
    group of the TP ranks; None: all ranks)."""

    def __init__(self, layers, seq, dev, hidden=4096, ffn=14336, heads=32, kv_heads=8, vocab=128256,
                 group=None, sp=False):
        super().__init__()
        self.group, self.sp = group, sp
        self.tp, self.rank = dist.get_world_size(group), dist.get_rank(group)
        tp = self.tp
        if heads % tp or kv_heads % tp or ffn % tp or vocab % tp:
            raise ValueError("tp must divide heads, kv_heads, ffn and vocab")
        self.h, self.d = hidden, hidden // heads
        self.q, self.kv, self.f, self.v = heads // tp, kv_heads // tp, ffn // tp, vocab // tp

        self.embed = bf16_param(dev, self.v, hidden)
        self.blocks = torch.nn.ModuleList(
            llama_layer_params(dev, hidden, self.q, self.kv, self.d, self.f) for _ in range(layers))
        self.norm = ones_param(dev, hidden)
        self.head = bf16_param(dev, self.v, hidden)
        self.cos, self.sin = rope_tables(seq, self.d, dev)

    def _enter(self, y):
        """Into a column-parallel linear: f (identity / all-reduce back) or, with SP, all-gather."""
        return _GatherSeq.apply(y, self.group) if self.sp else _CopyToTp.apply(y, self.group)

    def _leave(self, y):
        """Out of a row-parallel linear: g (all-reduce) or, with SP, reduce-scatter."""
        return _ScatterSeq.apply(y, self.group) if self.sp else _ReduceFromTp.apply(y, self.group)

    def block(self, b, x):
        s = x.shape[1] * (self.tp if self.sp else 1)
        return llama_layer(b, x, s, self.q, self.kv, self.d, self.cos, self.sin, self._enter,
                           self._leave)

    def forward(self, input_ids, labels):
        start = self.rank * self.v
        outside = (input_ids < start) | (input_ids >= start + self.v)
        x = F.embedding((input_ids - start).masked_fill(outside, 0), self.embed)
        x = self._leave(x.masked_fill(outside.unsqueeze(-1), 0.0))
        for b in self.blocks:
            x = self.block(b, x)
        y = self._enter(rms_norm(x, self.norm))
        logits = F.linear(y, self.head)
        target = torch.roll(labels, -1, dims=1)
        loss = _VocabParallelCrossEntropy.apply(logits.view(-1, self.v), target.view(-1), start,
                                                 self.group)
        return SimpleNamespace(loss=loss)

