"""Pin torch's CPU kernels to AVX2 before anything imports torch, so the stored training checksums hold on AVX-512 CPUs too.

The checksums in test_tiny_training.py were recorded on an AVX2 machine; on an AVX-512 one torch and oneDNN pick other
kernels, which sum in another order and give other weights. Both variables are only read at start-up; a value already
set in the environment wins. `make tiny` sets the same two."""
import os, platform

if platform.machine() in ("x86_64", "AMD64"):
    os.environ.setdefault("ATEN_CPU_CAPABILITY", "avx2")
    os.environ.setdefault("DNNL_MAX_CPU_ISA", "AVX2")
