#!/usr/bin/env python3
"""Prints the forward GEMM shapes m:n:k of the per-shard linears of the catalog models at
tp 1, 2, 4, 8 (comma-separated, for probe_gemm --shapes). Model dimensions from
../shared/reference/measured.yaml (models:); head_dim 128; m = tokens of one micro-batch
(seq 8192 for Llama 3, 2048 for GPT-3, micro-batch 1). Used to validate the cost model's
interpolation at real, off-grid shapes."""

MODELS = {  # name: (hidden, ffn, heads, kv_heads, vocab, ffn_matrices, seq)
    "gpt3_175b": (12288, 49152, 96, 96, 51200, 1, 2048),
    "llama3_8b": (4096, 14336, 32, 8, 128256, 2, 8192),
    "llama3_70b": (8192, 28672, 64, 8, 128256, 2, 8192),
    "llama3_405b": (16384, 53248, 128, 8, 128256, 2, 8192),
}


def shapes():
    out = []
    for h, ffn, heads, kv, vocab, mats, seq in MODELS.values():
        for tp in (1, 2, 4, 8):
            for n, k in (((heads + 2 * kv) * 128 // tp, h),  # QKV
                         (h, heads * 128 // tp),              # attention output projection
                         (mats * ffn // tp, h),               # FC1 (gate + up for SwiGLU)
                         (h, ffn // tp),                      # FC2
                         (vocab // tp, h)):                   # output head
                if (seq, n, k) not in out:
                    out.append((seq, n, k))
    return out


if __name__ == "__main__":
    print(",".join(f"{m}:{n}:{k}" for m, n, k in shapes()))
