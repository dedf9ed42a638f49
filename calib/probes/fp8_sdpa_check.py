# Is FP8 fused attention reachable on the GPU machine? Tries PyTorch SDPA with float8 inputs on
# every backend and looks for the cuDNN frontend, Transformer Engine and flash-attn packages.
# Run 2026-12-01: none (docs/calibration.md, section 6 "Limitations").
import torch, importlib, sys
print("torch", torch.__version__, "cudnn", torch.backends.cudnn.version())
for mod in ["cudnn", "transformer_engine", "flash_attn", "flash_attn_interface"]:
    try:
        m = importlib.import_module(mod); print(mod, "present", getattr(m, "__version__", "?"))
    except Exception as e:
        print(mod, "absent:", type(e).__name__)
from torch.nn.attention import sdpa_kernel, SDPBackend
q = torch.randn(1, 8, 1024, 128, device="cuda", dtype=torch.bfloat16)
for dt in [torch.float8_e4m3fn, torch.float8_e5m2]:
    for be in [SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]:
        try:
            with sdpa_kernel(be):
                x = q.to(dt)
                o = torch.nn.functional.scaled_dot_product_attention(x, x, x, is_causal=True)
            print(dt, be, "OK", o.dtype)
        except Exception as e:
            print(dt, be, "FAIL", str(e).splitlines()[0][:150])
ops = [n for n in dir(torch.ops.aten) if "cudnn_attention" in n or "fp8" in n.lower() or "scaled_dot" in n]
print("aten ops:", ops)
