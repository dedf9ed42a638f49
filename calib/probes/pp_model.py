"""A pipeline-parallel Llama in plain PyTorch, for step_check.py's `pp` layout: one stage per rank,
Megatron's non-interleaved 1F1B schedule (Narayanan et al. 2021, arXiv 2104.04473, Sec. 2.2.1;
megatron/core/pipeline_parallel/schedules.py, forward_backward_pipelining_without_interleaving)
or, with vp > 1 model chunks per rank, its interleaved schedule (ibid. Sec. 2.2.2,
forward_backward_pipelining_with_interleaving, without overlap_p2p_comm), both with blocking,
batched point-to-point exchanges (p2p_communication with batch_p2p_comm:
torch.distributed.batch_isend_irecv, then wait; with chunks the pipeline is a ring). The layers are tp_model.py's with TP 1 (eager
RMSNorm, rotate-half RoPE, SiLU * up, SDPA causal attention); the first stage holds the
embedding, the last the final norm, the output layer and an FP32 cross entropy.
Not a model anyone trains: it exists to time a real pipelined step beside the simulator.
"""

import torch
import torch.distributed as dist
import torch.nn.functional as F

from tp_model import bf16_param, llama_layer, llama_layer_params, ones_param, rms_norm, rope_tables


class PpLlama(torch.nn.Module):
    """`layers` layers split evenly over the pipeline ranks (the default group) and their `vp`
    model chunks (virtual stage c * pp + rank on rank `rank`); Llama-3 8B's shape by default.
    fwd_bwd(ids, microbatches) runs one step's forward and backward."""

    def __init__(self, layers, seq, dev, hidden=4096, ffn=14336, heads=32, kv_heads=8,
                 vocab=128256, vp=1):
        super().__init__()
        self.pp, self.rank, self.vp = dist.get_world_size(), dist.get_rank(), vp
        if layers % (self.pp * vp):
            raise ValueError("pp x vp must divide the layers")
        self.first, self.last = self.rank == 0, self.rank == self.pp - 1
        self.h, self.d, self.q, self.kv, self.v = hidden, hidden // heads, heads, kv_heads, vocab
        self.dev = dev

        if self.first:
            self.embed = bf16_param(dev, vocab, hidden)
        self.chunks = torch.nn.ModuleList(torch.nn.ModuleList() for _ in range(vp))
        for i in range(layers // self.pp):
            self.chunks[i // (layers // (self.pp * vp))].append(
                llama_layer_params(dev, hidden, heads, kv_heads, self.d, ffn))
        if self.last:
            self.norm = ones_param(dev, hidden)
            self.head = bf16_param(dev, vocab, hidden)
        self.cos, self.sin = rope_tables(seq, self.d, dev)

    def block(self, b, x):
        return llama_layer(b, x, x.shape[1], self.q, self.kv, self.d, self.cos, self.sin)

    def stage_forward(self, x, ids, chunk=0):
        if self.first and chunk == 0:
            x = F.embedding(ids, self.embed)
        for b in self.chunks[chunk]:
            x = self.block(b, x)
        if not (self.last and chunk == self.vp - 1):
            return x
        logits = F.linear(rms_norm(x, self.norm), self.head).float()
        target = torch.roll(ids, -1, dims=1)
        return F.cross_entropy(logits.view(-1, self.v), target.view(-1))

    def _exchange(self, send_next=None, send_prev=None, recv_prev=False, recv_next=False, seq=0):
        """One batched exchange with the neighbouring stages of the ring; blocks until it
        completes. Returns (tensor from the previous stage, tensor from the next stage)."""
        ops, got_prev, got_next = [], None, None
        shape = (1, seq, self.h)
        prev, nxt = (self.rank - 1) % self.pp, (self.rank + 1) % self.pp
        if send_prev is not None:
            ops.append(dist.P2POp(dist.isend, send_prev, prev))
        if recv_prev:
            got_prev = torch.empty(shape, device=self.dev, dtype=torch.bfloat16)
            ops.append(dist.P2POp(dist.irecv, got_prev, prev))
        if send_next is not None:
            ops.append(dist.P2POp(dist.isend, send_next, nxt))
        if recv_next:
            got_next = torch.empty(shape, device=self.dev, dtype=torch.bfloat16)
            ops.append(dist.P2POp(dist.irecv, got_next, nxt))
        if ops:
            for req in dist.batch_isend_irecv(ops):
                req.wait()
        return got_prev, got_next

    def fwd_bwd(self, ids, microbatches):
        """One step over `microbatches` microbatches of `ids` (the same tokens each); the loss is
        averaged over them."""
        if self.vp > 1:
            return self._interleaved(ids, microbatches)
        seq = ids.shape[1]
        warmup = min(self.pp - self.rank - 1, microbatches)
        inputs, outputs = [], []

        def forward(x):
            if x is not None:
                x.requires_grad_()
            out = self.stage_forward(x, ids)
            inputs.append(x)
            outputs.append(out / microbatches if self.last else out)
            return out

        def backward(grad):
            x, out = inputs.pop(0), outputs.pop(0)
            torch.autograd.backward(out, grad_tensors=grad)
            return None if x is None else x.grad

        recv = not self.first
        for _ in range(warmup):
            x, _ = self._exchange(recv_prev=recv, seq=seq)
            out = forward(x)
            self._exchange(send_next=out.detach(), seq=seq)
        x = self._exchange(recv_prev=recv, seq=seq)[0] if microbatches > warmup else None
        steady = microbatches - warmup
        for i in range(steady):
            out = forward(x)
            # send_forward_recv_backward
            _, grad = self._exchange(send_next=None if self.last else out.detach(),
                                     recv_next=not self.last, seq=seq)
            dx = backward(grad)
            if i == steady - 1:
                self._exchange(send_prev=dx, seq=seq)
            else:  # send_backward_recv_forward
                x, _ = self._exchange(send_prev=dx, recv_prev=recv, seq=seq)
        for _ in range(warmup):
            _, grad = self._exchange(recv_next=not self.last, seq=seq)
            self._exchange(send_prev=backward(grad), seq=seq)

    def _interleaved(self, ids, microbatches):
        """Megatron's interleaved 1F1B (forward_backward_pipelining_with_interleaving, blocking
        exchanges): microbatches go through the chunks in groups of pp; a rank warms up with
        (pp - rank - 1) * 2 + (vp - 1) * pp forward passes (all of them when microbatches ==
        pp), then alternates one forward and one backward pass, then drains the backward."""
        pp, vp, seq = self.pp, self.vp, ids.shape[1]
        if microbatches % pp:
            raise ValueError("the interleaved schedule needs microbatches divisible by pp")
        total = microbatches * vp
        all_warmup = microbatches == pp
        warmup = total if all_warmup else min((pp - self.rank - 1) * 2 + (vp - 1) * pp, total)
        inputs = [[] for _ in range(vp)]
        outputs = [[] for _ in range(vp)]
        grads = [[] for _ in range(vp)]

        def chunk_of(k, forward):
            c = (k % (pp * vp)) // pp
            return c if forward else vp - c - 1

        def is_first(c):
            return self.first and c == 0

        def is_last(c):
            return self.last and c == vp - 1

        def forward(k):
            c = chunk_of(k, True)
            x = inputs[c][-1] if not is_first(c) else None
            if x is not None:
                x.requires_grad_()
            out = self.stage_forward(x, ids, c)
            if is_first(c):
                inputs[c].append(None)
            outputs[c].append(out / microbatches if is_last(c) else out)
            return None if is_last(c) else out.detach()

        def backward(k):
            c = chunk_of(k, False)
            x, out = inputs[c].pop(0), outputs[c].pop(0)
            grad = None if is_last(c) else grads[c].pop(0)
            torch.autograd.backward(out, grad_tensors=grad)
            return None if is_first(c) else x.grad

        if not self.first:
            inputs[0].append(self._exchange(recv_prev=True, seq=seq)[0])
        for k in range(warmup):
            out = forward(k)
            nxt = chunk_of(k + 1, True)
            recv_prev = not (self.first and nxt == 0) and k != total - 1
            if k == warmup - 1 and not all_warmup:
                recv_next = not self.last
                x, g = self._exchange(send_next=out, recv_prev=recv_prev, recv_next=recv_next,
                                      seq=seq)
                if recv_next:
                    grads[vp - 1].append(g)
            else:
                x, _ = self._exchange(send_next=out, recv_prev=recv_prev, seq=seq)
            if recv_prev:
                inputs[nxt].append(x)
        remaining = total - warmup
        for k in range(remaining):
            fk = k + warmup
            out = forward(fk)
            dx = backward(k)
            if self.first:
                nf = chunk_of(fk - (pp - 1), True)
                recv_prev, nf = nf != vp - 1, nf + 1
            else:
                recv_prev, nf = True, chunk_of(fk + 1, True)
            if self.last:
                nb = chunk_of(k - (pp - 1), False)
                recv_next, nb = nb != 0, nb - 1
            else:
                recv_next, nb = True, chunk_of(k + 1, False)
            if k == remaining - 1:
                recv_prev = False
            x, g = self._exchange(send_next=out, send_prev=dx, recv_prev=recv_prev,
                                  recv_next=recv_next, seq=seq)
            if recv_prev:
                inputs[nf].append(x)
            if recv_next:
                grads[nb].append(g)
        if all_warmup and not self.last:
            grads[vp - 1].append(self._exchange(recv_next=True, seq=seq)[1])
        for k in range(remaining, total):
            dx = backward(k)
            nb = chunk_of(k + 1, False)
            recv_next = not (self.last and nb == vp - 1) and k != total - 1
            _, g = self._exchange(send_prev=dx, recv_next=recv_next, seq=seq)
            if recv_next:
                grads[nb].append(g)
