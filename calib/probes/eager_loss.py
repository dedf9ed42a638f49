"""Memory and time of Hugging Face transformers' causal-LM loss as its Llama runs it
(loss_utils.ForCausalLMLoss: `logits.float()`, then F.cross_entropy = log_softmax + nll_loss,
mean), beside the memory model's `cross_entropy: eager` (12 B per logit at the backward) and
Megatron's 6 B (`unfused`). BF16 logits of `tokens` x `vocab` come from a real output GEMM; the
caller drops the model output before the backward, as transformers' training loops and S3's
scripts do (`loss = engine(**batch).loss`), so the BF16 logits are freed after the forward.

Per size: bytes allocated above the state before the loss (the output GEMM's input and weight,
not the logits) at the forward's peak, after the forward, and at the backward's peak (the
gradient to the logits, down to the BF16 gradient the output GEMM takes); median time of the loss
forward and of its backward to the logits (CUDA events, after warm-up). Random normal data.
Usage: python3 eager_loss.py --out eager_loss.csv
"""

import argparse
import statistics

import torch
import torch.nn.functional as F

from probe_common import CsvWriter, fmt


def loss_of(logits, labels, vocab):
    # transformers' ForCausalLMLoss (labels shifted inside; ignore_index -100; mean)
    x = logits.float()
    shifted = F.pad(labels, (0, 1), value=-100)[..., 1:].contiguous()
    return F.cross_entropy(x.view(-1, vocab), shifted.view(-1), ignore_index=-100)


def measure(tokens, vocab, hidden, dev, reps):
    h = torch.randn(1, tokens, hidden, device=dev, dtype=torch.bfloat16, requires_grad=True)
    # The weight takes no gradient: its 2 B x vocab x hidden would blur the loss's own peak.
    w = torch.randn(vocab, hidden, device=dev, dtype=torch.bfloat16) * 0.02
    labels = torch.randint(0, vocab, (1, tokens), device=dev)
    mem = {}
    for rep in range(2):  # the second pass is the one recorded (allocator warm)
        torch.cuda.synchronize()
        base = torch.cuda.memory_allocated(dev)
        torch.cuda.reset_peak_memory_stats(dev)
        logits = F.linear(h, w)
        loss = loss_of(logits, labels, vocab)
        del logits  # the caller keeps only the loss
        torch.cuda.synchronize()
        mem["fwd_peak"] = torch.cuda.max_memory_allocated(dev) - base
        mem["after_fwd"] = torch.cuda.memory_allocated(dev) - base
        torch.cuda.reset_peak_memory_stats(dev)
        loss.backward()
        torch.cuda.synchronize()
        mem["bwd_peak"] = torch.cuda.max_memory_allocated(dev) - base
        h.grad = None
    # times of the loss alone, on fixed logits
    logits = F.linear(h, w).detach().requires_grad_()
    ev = [[torch.cuda.Event(enable_timing=True) for _ in range(3)] for _ in range(reps)]
    for e in [None] * 3 + ev:
        if e:
            e[0].record()
        loss = loss_of(logits, labels, vocab)
        if e:
            e[1].record()
        (g,) = torch.autograd.grad(loss, logits)
        if e:
            e[2].record()
        del g
    torch.cuda.synchronize()
    fwd = statistics.median(e[0].elapsed_time(e[1]) * 1e-3 for e in ev)
    bwd = statistics.median(e[1].elapsed_time(e[2]) * 1e-3 for e in ev)
    return mem, fwd, bwd


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--vocab", type=int, default=128256)
    ap.add_argument("--hidden", type=int, default=4096)
    ap.add_argument("--tokens", default="2048,4096,8192,16384")
    ap.add_argument("--reps", type=int, default=10)
    args = ap.parse_args()
    dev = torch.device("cuda", 0)
    torch.manual_seed(1234)
    csv = CsvWriter(args.out, "eager_loss (transformers ForCausalLMLoss on BF16 logits)", [0], {
        "loss": "logits.float(); F.cross_entropy(ignore_index=-100, mean); model output dropped "
                "before the backward",
        "memory": "torch.cuda allocated bytes above the state before the loss, BF16 logits "
                  "included in the forward",
        "timing": f"median of {args.reps} calls after 3 warm-ups, CUDA events"})
    csv.header(["tokens", "vocab", "logits", "fwd_peak_bytes", "after_fwd_bytes", "bwd_peak_bytes",
                "fwd_peak_b_per_logit", "after_fwd_b_per_logit", "bwd_peak_b_per_logit",
                "fwd_s", "bwd_s"])
    for t in (int(x) for x in args.tokens.split(",")):
        mem, fwd, bwd = measure(t, args.vocab, args.hidden, dev, args.reps)
        n = t * args.vocab
        row = [t, args.vocab, n, mem["fwd_peak"], mem["after_fwd"], mem["bwd_peak"],
               fmt(mem["fwd_peak"] / n), fmt(mem["after_fwd"] / n), fmt(mem["bwd_peak"] / n),
               fmt(fwd), fmt(bwd)]
        csv.row(row)
        print(*row, flush=True)
        torch.cuda.empty_cache()
    csv.close()


if __name__ == "__main__":
    main()
