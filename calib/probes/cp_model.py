"""A context-parallel Llama in plain PyTorch, for step_check.py's `cp` layout: the all-gather
context parallelism of the Llama 3 paper (arXiv 2407.21783, Sec. 3.3.2) with Megatron's
load-balanced chunks, as the simulator's `cp_comm_type: all_gather` models it.

Each of the cp ranks holds two of the 2*cp sequence chunks, i and 2*cp-1-i, so that every rank
does the same causal share. Per layer, forward: K and V of the local tokens are all-gathered over
the CP group; attention runs as blocks through cuDNN's SDPA kernels (aten ops that return the
softmax log-sum-exp): the local block causally, and against each other rank's K/V the half of the
(query, key) pairs the causal mask keeps, without a mask (all local queries against the other
rank's earlier chunk, or the local later chunk against both of the other rank's chunks); the
partial outputs are merged with their log-sum-exps. Backward: K and V are gathered again, each
block's backward runs with the merged output and log-sum-exp, and the K/V gradients are
reduce-scattered to their owners. With ring=True (two ranks only) the exchange is Transformer
Engine's P2P ring instead (cp_comm_type: p2p): the other rank's K/V is swapped by NCCL send/recv
while the local block computes, and in the backward its K/V gradients are sent back to it after
the last block. K and V are expanded to the query heads before the kernels
(the aten cuDNN ops take equal head counts; Transformer Engine runs GQA natively).
Element-wise modules and the loss are transformers' eager ones (tp_model.py's layer, the
simulator's `elementwise: eager`, `cross_entropy: eager`). Gradients are all-reduced over the
CP group by torch DDP (BF16, 4e7-element buckets).
Not a model anyone trains: it exists to time a real CP step beside the simulator's prediction.
"""

import torch
import torch.distributed as dist
import torch.nn.functional as F

from tp_model import bf16_param, llama_layer, llama_layer_params, ones_param, rms_norm, rope_tables


def _fwd(q, k, v, causal):
    """cuDNN SDPA forward of [1, H, s, d] blocks: output, log-sum-exp [1, H, s] (FP32), and
    what its backward needs (the log-sum-exp's own shape included)."""
    out, lse, cq, ck, mq, mk, seed, off, _ = torch.ops.aten._scaled_dot_product_cudnn_attention(
        q, k, v, None, True, 0.0, causal, False)
    shape = tuple(lse.shape)
    return out, lse.reshape(q.shape[0], q.shape[1], q.shape[2]).float(), (cq, ck, mq, mk, seed, off, shape)


def _bwd(do, q, k, v, out, lse, meta, causal):
    cq, ck, mq, mk, seed, off, shape = meta
    return torch.ops.aten._scaled_dot_product_cudnn_attention_backward(
        do, q, k, v, out, lse.reshape(shape).contiguous(), seed, off, None, cq, ck, mq, mk, 0.0, causal)


def _gather(x, group):
    """All-gather [1, H, s, d] shards into [cp, 1, H, s, d] (rank order)."""
    cp = dist.get_world_size(group)
    out = torch.empty((cp,) + tuple(x.shape), device=x.device, dtype=x.dtype)
    dist.all_gather_into_tensor(out, x.contiguous(), group=group)
    return out


def _exchange(x, group):
    """Start swapping `x` with the other rank of a 2-rank group (NCCL send/recv, on NCCL's own
    stream, overlapping what the compute stream runs meanwhile); returns (buffer, requests)."""
    peer = dist.get_global_rank(group, 1 - dist.get_rank(group)) if group else 1 - dist.get_rank()
    got = torch.empty_like(x)
    reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, x, peer, group),
                                   dist.P2POp(dist.irecv, got, peer, group)])
    return got, reqs


class _KvSource:
    """The K/V blocks of every rank: all-gathered at once (all_gather), or, with two ranks and
    `ring`, the other rank's swapped while the local block computes (Transformer Engine's P2P
    ring with cp = 2)."""

    def __init__(self, k, v, group, ring):
        self.rank, self.ring = dist.get_rank(group), ring
        if ring:
            self.local = (k, v)
            self.got, self.reqs = _exchange(torch.stack((k, v)).contiguous(), group)
        else:
            self.ks, self.vs = _gather(k, group), _gather(v, group)

    def __call__(self, src):
        if not self.ring:
            return self.ks[src], self.vs[src]
        if src == self.rank:
            return self.local
        for r in self.reqs:
            r.wait()
        self.reqs = []
        return self.got[0], self.got[1]


def _blocks(rank, cp, half):
    """(query rows, source rank, key rows, causal) of each attention block, the local one first:
    the local chunks causally; an earlier rank's first chunk for all local queries; both chunks
    of a later rank for the local second chunk only (Megatron's load-balanced causal split)."""
    out = [(slice(0, 2 * half), rank, slice(0, 2 * half), True)]
    for src in range(cp):
        if src < rank:
            out.append((slice(0, 2 * half), src, slice(0, half), False))
        elif src > rank:
            out.append((slice(half, 2 * half), src, slice(0, 2 * half), False))
    return out


class _CpAttention(torch.autograd.Function):
    """Causal attention of the local load-balanced chunks over the whole sequence's K/V."""

    @staticmethod
    def forward(ctx, q, k, v, group, rep, ring):
        cp, rank = dist.get_world_size(group), dist.get_rank(group)
        kv = _KvSource(k, v, group, ring)
        blocks = _blocks(rank, cp, q.shape[2] // 2)
        out, lse, metas = None, None, []
        for rows, src, keys, causal in blocks:
            ksrc, vsrc = kv(src)
            kb = ksrc[:, :, keys].repeat_interleave(rep, dim=1).contiguous()
            vb = vsrc[:, :, keys].repeat_interleave(rep, dim=1).contiguous()
            qb = q[:, :, rows].contiguous()
            o, l, meta = _fwd(qb, kb, vb, causal)
            metas.append(meta)
            if out is None:  # the local block covers every query row
                out, lse = o.float(), l
                continue
            new = torch.logaddexp(lse[:, :, rows], l)
            out[:, :, rows] = (out[:, :, rows] * torch.exp(lse[:, :, rows] - new).unsqueeze(-1)
                               + o.float() * torch.exp(l - new).unsqueeze(-1))
            lse[:, :, rows] = new
        out = out.to(q.dtype)
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.blocks, ctx.metas, ctx.group, ctx.rep, ctx.ring = blocks, metas, group, rep, ring
        return out

    @staticmethod
    def backward(ctx, do):
        q, k, v, out, lse = ctx.saved_tensors
        group, rep, rank = ctx.group, ctx.rep, dist.get_rank(ctx.group)
        kv = _KvSource(k, v, group, ctx.ring)
        cp = dist.get_world_size(group)
        dq = torch.zeros_like(q, dtype=torch.float32)
        dks = torch.zeros((cp,) + tuple(k.shape), device=k.device, dtype=torch.float32)
        dvs = torch.zeros_like(dks)
        do = do.contiguous()
        for (rows, src, keys, causal), meta in zip(ctx.blocks, ctx.metas):
            ksrc, vsrc = kv(src)
            kb = ksrc[:, :, keys].repeat_interleave(rep, dim=1).contiguous()
            vb = vsrc[:, :, keys].repeat_interleave(rep, dim=1).contiguous()
            qb, ob, dob = (t[:, :, rows].contiguous() for t in (q, out, do))
            g_q, g_k, g_v = _bwd(dob, qb, kb, vb, ob, lse[:, :, rows].contiguous(), meta, causal)
            dq[:, :, rows] += g_q.float()
            b, h, s, d = g_k.shape
            dks[src][:, :, keys] += g_k.float().view(b, h // rep, rep, s, d).sum(2)
            dvs[src][:, :, keys] += g_v.float().view(b, h // rep, rep, s, d).sum(2)
        if ctx.ring:  # the other rank's K/V gradients go back to it, its ours come here
            mine = torch.stack((dks[rank], dvs[rank])).to(k.dtype)
            got, reqs = _exchange(torch.stack((dks[1 - rank], dvs[1 - rank])).to(k.dtype).contiguous(), group)
            for r in reqs:
                r.wait()
            total = mine + got
            return dq.to(q.dtype), total[0], total[1], None, None, None
        dk, dv = torch.empty_like(k).contiguous(), torch.empty_like(v).contiguous()
        dist.reduce_scatter_tensor(dk, dks.to(k.dtype), group=group)
        dist.reduce_scatter_tensor(dv, dvs.to(v.dtype), group=group)
        return dq.to(q.dtype), dk, dv, None, None, None


def cp_positions(seq, cp, rank, dev):
    """Global positions of this rank's tokens: chunks rank and 2*cp-1-rank of seq/(2*cp)."""
    c = seq // (2 * cp)
    first = torch.arange(rank * c, (rank + 1) * c, device=dev)
    second = torch.arange((2 * cp - 1 - rank) * c, (2 * cp - rank) * c, device=dev)
    return torch.cat((first, second))


class CpLlama(torch.nn.Module):
    """Llama-3 8B's layer shape by default, `layers` layers, its sequence split over `group`."""

    def __init__(self, layers, seq, dev, hidden=4096, ffn=14336, heads=32, kv_heads=8, vocab=128256,
                 group=None, ring=False):
        super().__init__()
        self.group, self.ring = group, ring
        if ring and dist.get_world_size(group) != 2:
            raise ValueError("the P2P ring is implemented for cp = 2")
        self.cp, self.rank = dist.get_world_size(group), dist.get_rank(group)
        if seq % (2 * self.cp):
            raise ValueError("seq must be a multiple of 2 * cp")
        self.h, self.d, self.heads, self.kv = hidden, hidden // heads, heads, kv_heads
        self.embed = bf16_param(dev, vocab, hidden)
        self.blocks = torch.nn.ModuleList(
            llama_layer_params(dev, hidden, heads, kv_heads, self.d, ffn) for _ in range(layers))
        self.norm = ones_param(dev, hidden)
        self.head = bf16_param(dev, vocab, hidden)
        self.cos, self.sin = rope_tables(seq, self.d, dev)

    def _attend(self, q, k, v):
        return _CpAttention.apply(q, k, v, self.group, self.heads // self.kv, self.ring)

    def forward(self, input_ids, labels):
        seq = input_ids.shape[1]
        pos = cp_positions(seq, self.cp, self.rank, input_ids.device)
        ids, tgt = input_ids[:, pos], labels[:, pos]
        s = ids.shape[1]
        cos, sin = self.cos[pos], self.sin[pos]
        x = F.embedding(ids, self.embed)
        for b in self.blocks:
            x = llama_layer(b, x, s, self.heads, self.kv, self.d, cos, sin, attend=self._attend)
        logits = F.linear(rms_norm(x, self.norm), self.head)
        # transformers' loss: the logits upcast to FP32; each rank's mean over its tokens, so
        # the mean over CP ranks (DDP's gradient average) is the whole sequence's mean.
        return F.cross_entropy(logits.float().view(s, -1), tgt.view(s))


def check_cp_attention(group, dev, ring=False, seq=2048, heads=32, kv_heads=8, d=128):
    """Max relative errors of the CP attention's output and of dq, dk, dv (this rank's tokens)
    against causal GQA SDPA over the whole sequence in float32 (the same random inputs on every
    rank)."""
    cp, rank = dist.get_world_size(group), dist.get_rank(group)
    g = torch.Generator(device=dev).manual_seed(5)
    q, k, v, do = (torch.randn(1, h, seq, d, generator=g, device=dev, dtype=torch.bfloat16)
                   for h in (heads, kv_heads, kv_heads, heads))
    pos = cp_positions(seq, cp, rank, dev)
    ref_in = [t.float().requires_grad_() for t in (q, k, v)]
    ref = F.scaled_dot_product_attention(*ref_in, is_causal=True, enable_gqa=True)
    ref.backward(do.float())
    mine_in = [t[:, :, pos].contiguous().requires_grad_() for t in (q, k, v)]
    mine = _CpAttention.apply(*mine_in, group, heads // kv_heads, ring)
    mine.backward(do[:, :, pos].contiguous())

    def err(a, b):
        return float((a.float() - b).abs().max() / b.abs().max())

    return {"out": err(mine, ref[:, :, pos]), "dq": err(mine_in[0].grad, ref_in[0].grad[:, :, pos]),
            "dk": err(mine_in[1].grad, ref_in[1].grad[:, :, pos]),
            "dv": err(mine_in[2].grad, ref_in[2].grad[:, :, pos])}
