"""A Megatron-style tensor-parallel Llama in plain PyTorch, for step_check.py's `tp` layout: the
shapes and collectives of Megatron-LM without sequence parallelism (Shoeybi et al. 2019): a
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


class TpLlama(torch.nn.Module):
    """Llama-3 8B's layer shape by default, `layers` layers, sharded over `group` (a process
    group of the TP ranks; None: all ranks)."""

    def __init__(self, layers, seq, dev, hidden=4096, ffn=14336, heads=32, kv_heads=8, vocab=128256,
                 group=None):
        super().__init__()
        self.group = group
        self.tp, self.rank = dist.get_world_size(group), dist.get_rank(group)
        tp = self.tp
        if heads % tp or kv_heads % tp or ffn % tp or vocab % tp:
            raise ValueError("tp must divide heads, kv_heads, ffn and vocab")
        self.h, self.d = hidden, hidden // heads
        self.q, self.kv, self.f, self.v = heads // tp, kv_heads // tp, ffn // tp, vocab // tp

        def p(*shape, std=0.02):
            return torch.nn.Parameter(torch.randn(*shape, device=dev, dtype=torch.bfloat16) * std)

        def ones():
            return torch.nn.Parameter(torch.ones(hidden, device=dev, dtype=torch.bfloat16))

        self.embed = p(self.v, hidden)
        self.blocks = torch.nn.ModuleList()
        for _ in range(layers):
            b = torch.nn.Module()
            b.ln1, b.ln2 = ones(), ones()
            b.qkv = p((self.q + 2 * self.kv) * self.d, hidden)
            b.o = p(hidden, self.q * self.d)
            b.gate_up = p(2 * self.f, hidden)
            b.down = p(hidden, self.f)
            self.blocks.append(b)
        self.norm = ones()
        self.head = p(self.v, hidden)
        inv = 1.0 / (500000.0 ** (torch.arange(0, self.d, 2, device=dev).float() / self.d))
        ang = torch.outer(torch.arange(seq, device=dev).float(), inv)
        emb = torch.cat((ang, ang), dim=-1)
        self.cos, self.sin = emb.cos().to(torch.bfloat16), emb.sin().to(torch.bfloat16)

    def block(self, b, x):
        s = x.shape[1]
        y = _CopyToTp.apply(rms_norm(x, b.ln1), self.group)
        qkv = F.linear(y, b.qkv)
        q, k, v = qkv.split([self.q * self.d, self.kv * self.d, self.kv * self.d], dim=-1)
        q = q.view(1, s, self.q, self.d).transpose(1, 2)
        k = k.view(1, s, self.kv, self.d).transpose(1, 2)
        v = v.view(1, s, self.kv, self.d).transpose(1, 2)
        cos, sin = self.cos[:s], self.sin[:s]
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        a = a.transpose(1, 2).reshape(1, s, self.q * self.d)
        x = x + _ReduceFromTp.apply(F.linear(a, b.o), self.group)
        y = _CopyToTp.apply(rms_norm(x, b.ln2), self.group)
        gate, up = F.linear(y, b.gate_up).chunk(2, dim=-1)
        return x + _ReduceFromTp.apply(F.linear(F.silu(gate) * up, b.down), self.group)

    def forward(self, input_ids, labels):
        start = self.rank * self.v
        outside = (input_ids < start) | (input_ids >= start + self.v)
        x = F.embedding((input_ids - start).masked_fill(outside, 0), self.embed)
        x = _ReduceFromTp.apply(x.masked_fill(outside.unsqueeze(-1), 0.0), self.group)
        for b in self.blocks:
            x = self.block(b, x)
        y = _CopyToTp.apply(rms_norm(x, self.norm), self.group)
        logits = F.linear(y, self.head)
        target = torch.roll(labels, -1, dims=1)
        loss = _VocabParallelCrossEntropy.apply(logits.view(-1, self.v), target.view(-1), start,
                                                 self.group)
        return SimpleNamespace(loss=loss)

