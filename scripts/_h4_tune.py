# Temporary tuning experiment (helper h4); deleted after the measurements.
import sys, time, statistics, math
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import torch
import tvm_ffi
from jit_kernel.utils import load_jit, make_cpp_args, build_only
from bench_jit_kernels import time_rotating, make_sets, copy_bandwidth

print("torch", torch.__version__, "exchange api:", hasattr(torch.Tensor, "__dlpack_c_exchange_api__"), "tvm_ffi", tvm_ffi.__version__)
VARIANTS = {
    "base": ([], True), "nopdl": ([], False), "early": (["-DSGL_ELEMENTWISE_EARLY_TRIGGER=1"], True),
    "u2": (["-DSGL_ELEMENTWISE_UNROLL=2"], True), "u8": (["-DSGL_ELEMENTWISE_UNROLL=8"], True),
    "u8nopdl": (["-DSGL_ELEMENTWISE_UNROLL=8"], False),
    "b128": (["-DSGL_ELEMENTWISE_BLOCK=128"], True), "b512": (["-DSGL_ELEMENTWISE_BLOCK=512"], True),
    "persist": (["-DSGL_ELEMENTWISE_PERSISTENT=1"], True), "persist_nopdl": (["-DSGL_ELEMENTWISE_PERSISTENT=1"], False),
    "stream": (["-DSGL_ELEMENTWISE_STREAMING=1"], True), "stream_nopdl": (["-DSGL_ELEMENTWISE_STREAMING=1"], False),
}
def load(dtype, flags, pdl):
    args = make_cpp_args(dtype, pdl)
    tag = "_".join(f.split("_")[-1].replace("=", "") for f in flags) or "def"
    return load_jit("scaletune", tag, *args, cuda_files=["elementwise/scale.cuh"],
                    cuda_wrappers=[("scale", f"scale<{args}>")], extra_cuda_cflags=flags)
jobs = [(d, f, p) for (f, p) in VARIANTS.values() for d in (torch.float16, torch.float32)]
t0 = time.time()
with build_only(), ThreadPoolExecutor(16) as ex:
    list(ex.map(lambda a: load(*a), jobs))
print(f"built {len(jobs)} in {time.time()-t0:.0f}s", flush=True)
copy = copy_bandwidth()
print(f"copy {copy:.0f} GB/s")
configs = [(torch.float16, 24), (torch.float16, 26), (torch.float16, 28), (torch.float32, 28)]
def row(name, fn_for):
    out = []
    for dtype, lg in configs:
        srcs, outs = make_sets(1 << lg, dtype)
        f = fn_for(dtype, srcs, outs)
        t = time_rotating(f, len(srcs))
        out.append(2 * (1 << lg) * srcs[0].element_size() / t / 1e9 / copy)
        del srcs, outs, f
        torch.cuda.empty_cache()
    print(f"{name:<14}" + "".join(f"{x:>9.1%}" for x in out), flush=True)
print(f"{'variant':<14}" + "".join(f"{str(d)[6:]+'^'+str(l):>9}" for d, l in configs))
row("torch", lambda d, s, o: (lambda i: torch.mul(s[i], 1.5, out=o[i])))
for name, (flags, pdl) in VARIANTS.items():
    mods = {d: load(d, flags, pdl) for d in (torch.float16, torch.float32)}
    row(name, lambda d, s, o, mods=mods: (lambda i, m=mods[d].scale: m(o[i], s[i], 1.5)))
row("torch", lambda d, s, o: (lambda i: torch.mul(s[i], 1.5, out=o[i])))

# CUDA graph timing at 2^24 fp16: 20 calls per graph.
def graph_time(fn, nsets):
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        for i in range(3): fn(i % nsets)
    torch.cuda.synchronize()
    with torch.cuda.graph(g):
        for i in range(20): fn(i % nsets)
    for _ in range(3): g.replay()
    torch.cuda.synchronize()
    st, en = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    res = []
    for _ in range(5):
        st.record()
        for _ in range(20): g.replay()
        en.record(); en.synchronize()
        res.append(st.elapsed_time(en) / 1e3 / 400)
    return statistics.median(res)
for lg in (24, 26):
    srcs, outs = make_sets(1 << lg, torch.float16)
    for name in ("base", "nopdl", "early", "persist"):
        m = load(torch.float16, *VARIANTS[name]).scale
        t = graph_time(lambda i: m(outs[i], srcs[i], 1.5), len(srcs))
        print(f"graph 2^{lg} {name:<8} {2*(1<<lg)*2/t/1e9/copy:.1%}")
    t = graph_time(lambda i: torch.mul(srcs[i], 1.5, out=outs[i]), len(srcs))
    print(f"graph 2^{lg} torch    {2*(1<<lg)*2/t/1e9/copy:.1%}")

# Per-call overhead pieces, 1 element fp16.
from jit_kernel.scale import scale, _jit_scale_module
x = torch.randn(1, device="cuda", dtype=torch.float16); xo = torch.empty_like(x)
m = _jit_scale_module(torch.float16); fn = m.scale
def pc(f, n=2000):
    for _ in range(100): f()
    torch.cuda.synchronize()
    s = []
    for _ in range(n):
        a = time.perf_counter_ns(); f(); s.append(time.perf_counter_ns() - a)
    torch.cuda.synchronize()
    return statistics.median(s) / 1e3
e = torch.empty(0, device="cuda", dtype=torch.float16)
for label, f in [("torch.mul(out=)", lambda: torch.mul(x, 2.0, out=xo)), ("scale(out=)", lambda: scale(x, 2.0, out=xo)),
                 ("module.scale", lambda: fn(xo, x, 2.0)), ("module.scale empty (no launch)", lambda: fn(e, e, 2.0)),
                 ("_jit_scale_module()", lambda: _jit_scale_module(torch.float16)), ("view(-1)", lambda: x.view(-1)),
                 ("m.scale attr", lambda: m.scale), ("torch.cuda.current_stream", lambda: torch.cuda.current_stream()),
                 ("x.__dlpack__()", lambda: x.__dlpack__())]:
    print(f"{label:<32}{pc(f):8.2f} us")
import cProfile, pstats
pr = cProfile.Profile(); pr.enable()
for _ in range(2000): scale(x, 2.0, out=xo)
pr.disable(); pstats.Stats(pr).sort_stats("tottime").print_stats(12)
