"""Real training steps on one or two GPUs, to set beside clustersim's prediction of the same job
(docs/validation.md, "Real steps on H200"): transformers' LlamaForCausalLM with Llama-3 8B's
layer shape (hidden 4096, FFN 14336, 32 heads, 8 KV heads, vocab 128256, untied head), a few
layers, BF16 parameters, attention through transformers' "sdpa", the transformers loss, micro
batch 1, one microbatch per step. Layouts:
  - single: one GPU;
  - ddp: torch DistributedDataParallel, BF16 gradients all-reduced in buckets of 4e7 elements
    (Megatron's bucket size, the simulator's), overlapped with the backward;
  - fsdp: FSDP2 fully_shard per decoder layer and on the root (ZeRO-3: parameters gathered per
    layer in forward and backward, gradients reduce-scattered, BF16 throughout);
  - pp: pipeline parallelism, one stage per rank, Megatron's 1F1B schedule or with --vp > 1
    its interleaved one, with blocking batched point-to-point exchanges (pp_model.py:
    tp_model.py's layers, not transformers' module), --microbatches per step;
  - cp: context parallelism over all ranks, the Llama 3 paper's all-gather K/V exchange with
    Megatron's load-balanced chunks (cp_model.py: tp_model.py's layers, attention as cuDNN
    SDPA blocks merged by their log-sum-exps), gradients all-reduced by torch DDP in 4e7-element
    buckets;
  - moe: Mixtral-8x7B-shaped layers with their 8 experts split over all ranks (expert parallelism
    with balanced routing, moe_model.py: Megatron-core's all-to-all token dispatcher), the rest
    data parallel (torch DDP over the replicated parameters only);
  - tp: tensor parallelism, Megatron's shapes and collectives without sequence parallelism
    (tp_model.py: the same layer shape, not transformers' module), over all ranks or, with
    --tp N below the world size, over groups of N adjacent ranks (Megatron's rank order, TP
    fastest) with data parallelism across the groups: torch DDP over each TP rank's replica
    group, BF16 gradients all-reduced in 4e7-element buckets overlapped with the backward.
Optimizer: Megatron-style mixed precision, FP32 master weights and FP32 AdamW states (fused
AdamW): a master copy beside the BF16 parameters (single, ddp), FSDP2's FP32 parameter shards
(fsdp).

Per sequence length: the median over timed steps of forward+backward (CUDA events on the compute
stream: the gradient reduction DDP and FSDP wait for at the end of backward is inside) and of the
optimizer step, after --warm-s seconds of steps so that the GPU runs at its sustained power state;
the host enqueues freely (no synchronization inside the timed steps); peak memory allocated and
reserved over the timed steps (max over ranks); rank 0's GPU kernel time of one profiled step by
kind (GEMM, attention, NCCL, other); and (since run 101) of one profiled forward + backward alone:
by kind, the union of its kernels' intervals and their count (the fb_* columns).

Not a table the cost model reads: a check of the simulator on real multi-GPU steps.
Usage: python3 step_check.py --layout single --layers 4 --seqs 4096,8192 --out step_single.csv
       torchrun --nproc_per_node 2 step_check.py --layout ddp ... (fsdp likewise)
"""

import argparse
import os
import re
import statistics
import time

import torch
import torch.distributed as dist

from probe_common import CsvWriter, fmt


# Layer shapes of the tp layout (workloads/models/*.yaml).
SHAPES = {
    "llama3_8b": dict(hidden=4096, ffn=14336, heads=32, kv_heads=8, vocab=128256),
    "llama3_70b": dict(hidden=8192, ffn=28672, heads=64, kv_heads=8, vocab=128256),
}


def build_model(layers, seq, dev):
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(hidden_size=4096, intermediate_size=14336, num_attention_heads=32,
                      num_key_value_heads=8, head_dim=128, num_hidden_layers=layers,
                      vocab_size=128256, rms_norm_eps=1e-5, rope_theta=500000.0,
                      max_position_embeddings=max(seq, 8192), tie_word_embeddings=False,
                      attention_dropout=0.0, hidden_act="silu", use_cache=False)
    cfg._attn_implementation = "sdpa"
    torch.manual_seed(1234)
    with torch.device(dev):
        model = LlamaForCausalLM(cfg)
    model.to(torch.bfloat16)
    model.train()
    return model


def wrap(model, layout, dev):
    if layout == "ddp":
        bucket_mib = 4e7 * 2 / 2**20  # Megatron's 4e7-element bucket of BF16 gradients
        return torch.nn.parallel.DistributedDataParallel(
            model, device_ids=[dev.index], bucket_cap_mb=bucket_mib, gradient_as_bucket_view=True)
    if layout == "fsdp":
        # FSDP2's mixed precision: FP32 sharded parameters (the master weights), gathered and
        # computed in BF16, gradients reduce-scattered in BF16 and kept as FP32 shards.
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
        model.to(torch.float32)
        mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.bfloat16)
        for layer in model.model.layers:
            fully_shard(layer, mp_policy=mp)
        fully_shard(model, mp_policy=mp)
    return model


class MasterAdam:
    """Megatron's mixed-precision optimizer on BF16 parameters: FP32 master weights and Adam
    states; each step casts the BF16 gradients to FP32, runs fused AdamW on the masters and
    copies them back into the BF16 parameters (16 B per parameter, as the simulator counts)."""

    def __init__(self, params):
        self.params = [p for p in params if p.requires_grad]
        self.master = [torch.nn.Parameter(p.detach().float()) for p in self.params]
        for m in self.master:
            m.grad = torch.zeros_like(m)
        self.adam = torch.optim.AdamW(self.master, lr=1e-5, fused=True)

    def step(self):
        with torch.no_grad():
            for m, p in zip(self.master, self.params):
                m.grad.copy_(p.grad)
            self.adam.step()
            for m, p in zip(self.master, self.params):
                p.copy_(m)

    def zero_grad(self, set_to_none=True):
        # The BF16 gradients stay allocated and are zeroed, as Megatron's gradient buffer.
        grads = [p.grad for p in self.params if p.grad is not None]
        if grads:
            torch._foreach_zero_(grads)


def fwd_bwd(model, ids, microbatches):
    """Forward and backward of one step: the pipeline's schedule, or one microbatch."""
    if hasattr(model, "fwd_bwd"):
        model.fwd_bwd(ids, microbatches)
    else:
        out = model(input_ids=ids, labels=ids)
        loss = out.loss if hasattr(out, "loss") else out
        del out  # transformers' output holds the BF16 logits: not alive across the backward
        loss.backward()


def run_seq(model, opt, seq, dev, warm_s, steps, microbatches, vocab=128256):
    ids = torch.randint(0, vocab - 256, (1, seq), device=dev)

    def step(events):
        if events:
            events[0].record()
        fwd_bwd(model, ids, microbatches)
        if events:
            events[1].record()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if events:
            events[2].record()

    # Warm-up: three steps, then as many as fill warm_s at their pace. Every rank runs the same
    # count (the slowest rank's), or the ranks' collectives would not match.
    torch.cuda.synchronize()
    start = time.time()
    for _ in range(3):
        step(None)
    torch.cuda.synchronize()
    pace = torch.tensor([(time.time() - start) / 3], dtype=torch.float64, device=dev)
    if dist.is_initialized():
        dist.all_reduce(pace, op=dist.ReduceOp.MAX)
    warm = 3 + int(warm_s / max(pace.item(), 1e-3))
    for _ in range(warm - 3):
        step(None)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats(dev)
    marks = [[torch.cuda.Event(enable_timing=True) for _ in range(3)] for _ in range(steps)]
    for ev in marks:
        step(ev)
    torch.cuda.synchronize()
    fb = statistics.median(ev[0].elapsed_time(ev[1]) * 1e-3 for ev in marks)
    op = statistics.median(ev[1].elapsed_time(ev[2]) * 1e-3 for ev in marks)
    whole = statistics.median(marks[i][0].elapsed_time(marks[i + 1][0]) * 1e-3
                              for i in range(steps - 1))
    mem = torch.tensor([torch.cuda.max_memory_allocated(dev), torch.cuda.max_memory_reserved(dev)],
                       dtype=torch.float64, device=dev)
    times = torch.tensor([fb, op, whole], dtype=torch.float64, device=dev)
    if dist.is_initialized():
        dist.all_reduce(mem, op=dist.ReduceOp.MAX)
        dist.all_reduce(times, op=dist.ReduceOp.MAX)
    return times.tolist(), mem.tolist(), warm


GEMM = re.compile(r"gemm|nvjet|cutlass|xmma|sm90_|cublas", re.I)
ATTN = re.compile(r"flash|fmha|cudnn|attention|sdpa", re.I)
NCCL = re.compile(r"nccl", re.I)


def kernel_split(model, opt, seq, dev, microbatches, vocab=128256):
    """GPU kernel seconds of one whole step (forward, backward, optimizer) by kind, from the
    PyTorch profiler, and the attention kernels' names (which SDPA backend ran). Every rank runs
    it: the step has collectives."""
    from torch.profiler import ProfilerActivity, profile
    ids = torch.randint(0, vocab - 256, (1, seq), device=dev)
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fwd_bwd(model, ids, microbatches)
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
    split = {"gemm": 0.0, "attention": 0.0, "nccl": 0.0, "other": 0.0}
    names = set()
    for kind, e in cuda_kernels(prof):
        split[kind] += e.time_range.elapsed_us() * 1e-6
        if kind == "attention":
            names.add(e.name[:70])
    return split, names


def cuda_kernels(prof):
    """(kind, event) of every GPU event a profiler recorded: nccl, attention, gemm or other by
    the kernel's name, in that order of precedence."""
    for e in prof.events():
        if e.device_type != torch.autograd.DeviceType.CUDA:
            continue
        yield ("nccl" if NCCL.search(e.name) else "attention" if ATTN.search(e.name)
               else "gemm" if GEMM.search(e.name) else "other"), e


def fwd_bwd_split(model, seq, dev, microbatches, vocab=128256):
    """GPU kernels of one forward + backward alone (no optimizer), from the PyTorch profiler:
    seconds by kind (gemm, attention, nccl, other), the union of all kernel intervals (the GPU
    busy with some kernel) and the number of kernels. The step's timed forward + backward
    (CUDA events, no profiler) less that union is the time the GPU ran no kernel of the pass:
    launch gaps and host waits."""
    from torch.profiler import ProfilerActivity, profile
    ids = torch.randint(0, vocab - 256, (1, seq), device=dev)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fwd_bwd(model, ids, microbatches)
        torch.cuda.synchronize()
    split = {"gemm": 0.0, "attention": 0.0, "nccl": 0.0, "other": 0.0}
    spans = []
    for kind, e in cuda_kernels(prof):
        split[kind] += e.time_range.elapsed_us() * 1e-6
        spans.append((e.time_range.start, e.time_range.end))
    spans.sort()
    busy, end = 0.0, None
    for a, b in spans:
        if end is None or a > end:
            busy += b - a
            end = b
        elif b > end:
            busy += b - end
            end = b
    return split, busy * 1e-6, len(spans)


def tp_dp_groups(world, tp, rank):
    """Process groups of the tp layout: TP groups of `tp` adjacent ranks and, when tp < world,
    DP groups of the ranks holding the same shard (Megatron's order). Every rank creates every
    group, in the same order, as torch.distributed requires. Returns (tp_group, dp_group); None
    stands for the default group (tp = world) or for no DP (dp = 1)."""
    if tp < 1 or world % tp:
        raise SystemExit(f"--tp {tp} must divide the {world} ranks")
    if tp == world:
        return None, None
    tp_group = dp_group = None
    for g in range(world // tp):
        ranks = list(range(g * tp, (g + 1) * tp))
        group = dist.new_group(ranks)
        if rank in ranks:
            tp_group = group
    for t in range(tp):
        ranks = list(range(t, world, tp))
        group = dist.new_group(ranks)
        if rank in ranks:
            dp_group = group
    return tp_group, dp_group


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layout", choices=["single", "ddp", "fsdp", "tp", "pp", "cp", "moe"], required=True)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--shape", choices=sorted(SHAPES), default="llama3_8b",
                    help="layer shape of the tp and pp layouts (the others use Llama-3 8B's)")
    ap.add_argument("--sp", action="store_true",
                    help="tp layout: Megatron's sequence parallelism (all-gather / reduce-scatter)")
    ap.add_argument("--tp", type=int, default=0,
                    help="tp layout: ranks per TP group (default: all); the rest is DP")
    ap.add_argument("--microbatches", type=int, default=1, help="pp layout: microbatches per step")
    ap.add_argument("--cp-comm", choices=["all_gather", "p2p"], default="all_gather",
                    help="cp layout: K/V all-gathered, or swapped by send/recv over the local block")
    ap.add_argument("--vp", type=int, default=1,
                    help="pp layout: model chunks per rank (> 1: the interleaved schedule)")
    ap.add_argument("--sdpa-backend", choices=["default", "cudnn", "flash"], default="default",
                    help="force SDPA's kernel library for the whole run (run 54: flash, i.e. "
                         "FlashAttention-2; default: PyTorch's choice, cuDNN on Hopper)")
    ap.add_argument("--seqs", default="4096,8192,16384")
    ap.add_argument("--warm-s", type=float, default=12.0)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if (args.layout == "single") != (world == 1) and args.layout != "tp":
        raise SystemExit("--layout single runs on one process; ddp and fsdp under torchrun")
    dev = torch.device("cuda", local)
    torch.cuda.set_device(dev)
    if world > 1 or args.layout == "tp":  # tp on one process: TP 1, the layout's baseline
        dist.init_process_group("nccl", device_id=dev)
    seqs = [int(s) for s in args.seqs.split(",")]
    tp = args.tp or world
    if args.layout == "tp":
        from tp_model import TpLlama
        tp_group, dp_group = tp_dp_groups(world, tp, rank)
        torch.manual_seed(1234)  # the same ids on every rank
        model = TpLlama(args.layers, max(seqs), dev, group=tp_group, sp=args.sp,
                        **SHAPES[args.shape])
        if dp_group is not None:
            model = torch.nn.parallel.DistributedDataParallel(
                model, device_ids=[dev.index], process_group=dp_group,
                bucket_cap_mb=4e7 * 2 / 2**20, gradient_as_bucket_view=True)
    elif args.layout == "cp":
        from cp_model import CpLlama, check_cp_attention
        ring = args.cp_comm == "p2p"
        cp_check = check_cp_attention(None, dev, ring=ring)
        torch.manual_seed(1234)
        model = torch.nn.parallel.DistributedDataParallel(
            CpLlama(args.layers, max(seqs), dev, ring=ring, **SHAPES[args.shape]), device_ids=[dev.index],
            bucket_cap_mb=4e7 * 2 / 2**20, gradient_as_bucket_view=True)
    elif args.layout == "moe":
        from moe_model import MoeLlama, check_moe
        moe_check = check_moe(dev)
        torch.manual_seed(1234 + rank)  # each rank its own experts
        inner = MoeLlama(args.layers, max(seqs), dev)
        torch.nn.parallel.DistributedDataParallel._set_params_and_buffers_to_ignore_for_model(
            inner, inner.expert_params())
        model = torch.nn.parallel.DistributedDataParallel(
            inner, device_ids=[dev.index], bucket_cap_mb=4e7 * 2 / 2**20, gradient_as_bucket_view=True)
    elif args.layout == "pp":
        from pp_model import PpLlama
        torch.manual_seed(1234)
        model = PpLlama(args.layers, max(seqs), dev, vp=args.vp, **SHAPES[args.shape])
    else:
        model = wrap(build_model(args.layers, max(seqs), dev), args.layout, dev)
    if args.layout == "fsdp":  # FP32 shards are the masters: AdamW on them
        opt = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=True)
    else:
        opt = MasterAdam(model.parameters())
    shards = {"fsdp": world, "tp": tp, "pp": world}.get(args.layout, 1)
    params = sum(p.numel() for p in model.parameters()) * shards
    csv = None
    if rank == 0:
        csv = CsvWriter(args.out, "step_check (transformers LlamaForCausalLM, real steps)",
                        list(range(world)), {
                            "layout": f"{args.layout} on {world} GPU(s); layers {args.layers}; "
                                      f"parameters {params}" +
                                      (f"; shape {args.shape}; tp {tp} x dp {world // tp}"
                                       + ("; sequence parallel" if args.sp else "")
                                       if args.layout == "tp" else "") +
                                      (f"; shape {args.shape}; cp {world} ({args.cp_comm}), "
                                       f"attention check vs whole-sequence SDPA: {cp_check}"
                                       if args.layout == "cp" else "") +
                                      (f"; Mixtral-8x7B layer shape; ep {world} x dp {world}, "
                                       f"balanced routing; parameters per rank; dispatch check "
                                       f"vs the experts applied locally: max rel err {moe_check:.2e}"
                                       if args.layout == "moe" else "") +
                                      (f"; shape {args.shape}; pp {world}, "
                                       + (f"interleaved vp {args.vp}" if args.vp > 1 else "1F1B")
                                       + f", {args.microbatches} microbatches"
                                       if args.layout == "pp" else ""),
                            "model": "Llama-3 8B layer shape, BF16, sdpa attention (backend: "
                                     f"{args.sdpa_backend}), transformers loss, micro batch 1, "
                                     "one microbatch per step",
                            "timing": f"median of {args.steps} steps after >= {args.warm_s} s of "
                                      "steps; CUDA events on the compute stream; max over ranks"})
        csv.header(["layout", "gpus", "layers", "seq", "fwd_bwd_s", "optimizer_s", "step_s",
                    "warm_steps", "peak_allocated_bytes", "peak_reserved_bytes", "kernels_gemm_s",
                    "kernels_attention_s", "kernels_nccl_s", "kernels_other_s",
                    "fb_kernels_gemm_s", "fb_kernels_attention_s", "fb_kernels_nccl_s",
                    "fb_kernels_other_s", "fb_kernels_busy_s", "fb_kernels"])
    if args.sdpa_backend != "default":
        from torch.nn.attention import SDPBackend, sdpa_kernel
        backend = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION}
        forced = sdpa_kernel([backend[args.sdpa_backend]])  # held: its exit would undo it
        forced.__enter__()
    for seq in seqs:
        vocab = 32000 if args.layout == "moe" else 128256
        (fb, op, whole), (alloc, reserved), warm = run_seq(model, opt, seq, dev, args.warm_s,
                                                           args.steps, args.microbatches, vocab)
        split, names = kernel_split(model, opt, seq, dev, args.microbatches, vocab)
        fbs, fb_busy, fb_count = fwd_bwd_split(model, seq, dev, args.microbatches, vocab)
        opt.zero_grad(set_to_none=True)
        if csv:
            csv.row([args.layout, world, args.layers, seq, fmt(fb), fmt(op), fmt(whole), warm,
                     int(alloc), int(reserved), fmt(split["gemm"]), fmt(split["attention"]),
                     fmt(split["nccl"]), fmt(split["other"]), fmt(fbs["gemm"]),
                     fmt(fbs["attention"]), fmt(fbs["nccl"]), fmt(fbs["other"]), fmt(fb_busy),
                     fb_count])
            print(args.layout, seq, fmt(fb), fmt(op), fmt(whole), "attention kernels:",
                  sorted(names), flush=True)
        torch.cuda.empty_cache()
    if csv:
        csv.close()
    if dist.is_initialized():
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
