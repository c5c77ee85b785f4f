"""dnnc.frontend graphs and the JIT cache, without a GPU.

* The key of a frontend graph's plan is the key of the dnnc.Graph it lowers
  to (``Graph.serialize``, made without MLIR; test_cache_key.py shows that
  every change to that graph's MLIR changes it). Here, from the frontend
  side: each attribute cudnn-frontend code sets (dims, strides, data types,
  epsilon, phase, masks, scale, layout, arch) changes the key, and over all
  the variants two keys are equal exactly when the dnn MLIR compiled is.
* ``build_plans`` of a graph seen before, in a new process, reads the
  cache entry and imports no MLIR, no pass, no code generator, no NumPy,
  neither the pipelines nor the stage loop, nor the compiler's package
  code (``dnnc.artifact``: the runtime's reader checks the entry), and
  loads no libLLVM.so; ``import dnnc.frontend`` alone loads none of them
  either. Both print their times (run with -s).
"""

import json
import math
import os
import subprocess
import sys

import dnnc.frontend as cudnn
from dnnc import compiler

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# What the builders give every pygraph (the fresh process sets target and arch).
GRAPH_OPTIONS = {}
HEAVY = ("mlir", "dnnc.passes", "dnnc.codegen", "dnnc.parsing", "dnnc.graph_mlir", "numpy",
         "ml_dtypes", "importlib.metadata", "dnnc.pipelines", "dnnc.stages", "dnnc.artifact")


def layernorm(rows=64, hidden=256, dtype=cudnn.data_type.BFLOAT16, stride=None,
              scale_type=None, epsilon=1e-5, phase=cudnn.norm_forward_phase.TRAINING,
              mean_type=cudnn.data_type.FLOAT, compute=cudnn.data_type.FLOAT):
    """cudnn-frontend's layernorm form; every argument changes one thing."""
    g = cudnn.pygraph(io_data_type=dtype, intermediate_data_type=cudnn.data_type.FLOAT,
                      compute_data_type=compute, **GRAPH_OPTIONS)
    dims = [rows, hidden, 1, 1]
    x = g.tensor(name="X", dim=dims, stride=stride or [hidden, 1, hidden, hidden])
    s = g.tensor(name="scale", dim=[1, hidden, 1, 1], data_type=scale_type or dtype)
    b = g.tensor(name="bias", dim=[1, hidden, 1, 1])
    y, mean, inv = g.layernorm(norm_forward_phase=phase, input=x, scale=s, bias=b,
                               epsilon=epsilon, name="LN")
    y.set_output(True)
    if mean is not None:
        mean.set_output(True).set_data_type(mean_type)
        inv.set_output(True).set_data_type(cudnn.data_type.FLOAT)
    return g


def sdpa(b=2, h=4, s=128, d=64, dtype=cudnn.data_type.BFLOAT16, layout="bhsd",
         causal=True, scale=0.125, window=None, stats=False):
    g = cudnn.pygraph(io_data_type=dtype, intermediate_data_type=cudnn.data_type.FLOAT,
                      compute_data_type=cudnn.data_type.FLOAT, **GRAPH_OPTIONS)
    dims = [b, h, s, d]
    stride = [h * s * d, s * d, d, 1] if layout == "bhsd" else [s * h * d, d, h * d, 1]
    q, k, v = (g.tensor(name=n, dim=dims, stride=stride) for n in "qkv")
    o, st = g.sdpa(q=q, k=k, v=v, attn_scale=scale, is_inference=not stats,
                   use_causal_mask=causal, sliding_window_length=window, name="sdpa")
    o.set_output(True).set_dim(dims).set_stride(stride)
    if st is not None:
        st.set_output(True).set_data_type(cudnn.data_type.FLOAT)
    return g


# One change each from the default: (builder, arguments).
VARIANTS = {
    "layernorm": (layernorm, {}),
    "layernorm rows": (layernorm, dict(rows=32)),
    "layernorm hidden": (layernorm, dict(hidden=512)),
    "layernorm io type": (layernorm, dict(dtype=cudnn.data_type.HALF)),
    "layernorm x strides": (layernorm, dict(stride=[1, 64, 256, 256])),
    "layernorm scale type": (layernorm, dict(scale_type=cudnn.data_type.FLOAT)),
    "layernorm epsilon, one ulp": (layernorm, dict(epsilon=math.nextafter(1e-5, 1.0))),
    "layernorm phase": (layernorm, dict(phase=cudnn.norm_forward_phase.INFERENCE)),
    "layernorm statistics type": (layernorm, dict(mean_type=cudnn.data_type.BFLOAT16)),
    "sdpa": (sdpa, {}),
    "sdpa batch": (sdpa, dict(b=1)),
    "sdpa heads": (sdpa, dict(h=8)),
    "sdpa sequence": (sdpa, dict(s=256)),
    "sdpa head dim": (sdpa, dict(d=128)),
    "sdpa io type": (sdpa, dict(dtype=cudnn.data_type.HALF)),
    "sdpa layout": (sdpa, dict(layout="bshd")),
    "sdpa causal": (sdpa, dict(causal=False)),
    "sdpa scale, one ulp": (sdpa, dict(scale=math.nextafter(0.125, 1.0))),
    "sdpa window": (sdpa, dict(window=32)),
    "sdpa statistics": (sdpa, dict(stats=True)),
}


def key(g, arch="sm_90a"):
    return compiler.cache_key(g.to_dnnc(), compiler.Options(target="cuda", arch=arch))


def test_every_frontend_attribute_changes_the_key():
    keys, texts = {}, {}
    for name, (build, kwargs) in VARIANTS.items():
        g = build(**kwargs)
        keys[name], texts[name] = key(g), g.to_mlir()
        assert key(build(**kwargs)) == keys[name], f"{name}: the key is not deterministic"
    for a in VARIANTS:
        for b in VARIANTS:
            assert (keys[a] == keys[b]) == (texts[a] == texts[b]), (a, b)
    assert len(set(keys.values())) == len(VARIANTS)
    assert key(layernorm(), arch="sm_80") != keys["layernorm"]


def test_the_key_needs_no_mlir():
    script = ("import sys, json; sys.path[:0] = [%r, %r]\n" % (ROOT, os.path.join(ROOT, "runtime"))
              + "import dnnc.frontend as cudnn\n"
              + "from dnnc import compiler\n"
              + "from test_frontend_cache import layernorm, key\n"
              + "k = key(layernorm())\n"
              + "print(json.dumps([k, sorted(m for m in sys.modules if m == 'mlir' "
              + "or m.startswith('mlir.'))]))\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.dirname(os.path.abspath(__file__)), ROOT, os.path.join(ROOT, "runtime")]))
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True, env=env)
    k, mlir = json.loads(run.stdout.strip().splitlines()[-1])
    assert k == key(layernorm()) and mlir == []


# Imports this file for its builders (which import no MLIR), then does what
# user code does: build, validate, build_plans. The first run fills the cache.
FRESH_BUILD = r"""
import json, sys, time
start = time.perf_counter()
import dnnc.frontend as cudnn
imported = time.perf_counter()
loaded_at_import = [m for m in HEAVY if m in sys.modules]
llvm_at_import = "libLLVM" in open("/proc/self/maps").read()
import test_frontend_cache
test_frontend_cache.GRAPH_OPTIONS.update(target="cuda", sm_version=90)
times = {}
for name in ("layernorm", "sdpa"):
    t0 = time.perf_counter()
    g = getattr(test_frontend_cache, name)()
    g.validate(); g.build_operation_graph()
    g.create_execution_plans([cudnn.heur_mode.A]); g.check_support(); g.build_plans()
    times[name] = time.perf_counter() - t0
from dnnc import cache
print(json.dumps({"import": imported - start, "times": times,
                  "loaded_at_import": loaded_at_import, "llvm_at_import": llvm_at_import,
                  "loaded": [m for m in HEAVY if m in sys.modules],
                  "llvm": "libLLVM" in open("/proc/self/maps").read(),
                  "hits": cache.default().stats.hits, "misses": cache.default().stats.misses}))
"""


def test_build_plans_of_a_graph_seen_before_in_a_new_process(tmp_path):
    env = dict(os.environ, DNNC_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=os.pathsep.join(
        [os.path.dirname(os.path.abspath(__file__)), ROOT, os.path.join(ROOT, "runtime")]))
    env.pop("DNNC_DUMP_IR", None)
    script = f"HEAVY = {HEAVY!r}\n" + FRESH_BUILD

    def fresh():
        run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                             check=True, env=env)
        return json.loads(run.stdout.strip().splitlines()[-1])

    first = fresh()
    assert first["misses"] == 2 and "mlir" in first["loaded"]   # it compiled
    result = fresh()
    assert (result["hits"], result["misses"]) == (2, 0), "the second process missed"
    assert result["loaded_at_import"] == [] and not result["llvm_at_import"], \
        "import dnnc.frontend loaded " + str(result["loaded_at_import"] or "libLLVM.so")
    assert result["loaded"] == [], f"a warm build_plans imported {result['loaded']}"
    assert not result["llvm"], "a warm build_plans loaded libLLVM.so"
    ms = {k: v * 1e3 for k, v in result["times"].items()}
    print(f"\nwarm build_plans in a new process: import dnnc.frontend {result['import'] * 1e3:.1f} "
          f"ms; layernorm {ms['layernorm']:.1f} ms, then sdpa {ms['sdpa']:.1f} ms")
    assert max(result["times"].values()) < 1.0
