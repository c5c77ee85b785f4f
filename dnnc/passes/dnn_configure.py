"""dnn-configure: the heuristics choose a config for every kernel (the
``configured`` stage).

Runs on the fused stage. For every function marked ``dnn.kernel`` it builds
the kernel's Problem (dnnc/heuristics), takes the best ranked config, applies
the user's override, and records it as ``dnn.config`` with the reason as
``dnn.config_reason``. Nothing downstream guesses: the GPU lowering reads
the config (dnn-default-config only fills in kernels made after this stage,
and keeps these), and the artifact's manifest records strategy and reason.

A kernel that already has a ``dnn.config`` (written by hand, or a module
that was configured before) keeps it, unless the override names it.

Options:

* ``arch`` (``sm_80``, ``sm_90a``; default ``sm_90a``): the target the
  heuristics rank for.
* ``override``: ``KERNEL=key:value[,key:value][;KERNEL=...]``, ``*`` for
  every kernel (dnnc/heuristics/override.py), e.g.
  ``dnn-configure{arch=sm_80 override=main_k0_softmax=block:128}``. The
  syntax is checked when the pipeline is parsed; a kernel name that is not
  in the module is a PipelineError naming the kernels that are.

Before::

    func.func private @main_k0_softmax(%x: tensor<8x1024xf32>) -> tensor<8x1024xf32>
        attributes {dnn.anchor = "softmax", dnn.kernel}

After::

    func.func private @main_k0_softmax(%x: tensor<8x1024xf32>) -> tensor<8x1024xf32>
        attributes {dnn.anchor = "softmax",
                    dnn.config = {block = [128, 1, 1], strategy = "simt-generic"},
                    dnn.config_reason = "simt-reduce not implemented yet (softmax: 8 rows
                        of 1024); block 128: few points (8): ...", dnn.kernel}

Lit test: test/lit/passes/dnn_configure.mlir.
"""

from dataclasses import dataclass

from mlir import ir

from dnnc import heuristics
from dnnc.codegen.gpu import irutil
from dnnc.errors import PipelineError
from dnnc.heuristics import config as config_mod, override as override_mod
from dnnc.passes import DnncPass, register

KEPT_REASON = "config given in the input IR"


@register
@dataclass
class DnnConfigure(DnncPass):
    NAME = "dnn-configure"
    arch: str = "sm_90a"
    override: str = ""

    def __post_init__(self):
        from dnnc.pipelines import ARCHS

        if self.arch not in ARCHS:
            raise PipelineError(f"pass '{self.NAME}' option 'arch': expected one of "
                                f"{', '.join(ARCHS)}, got '{self.arch}'")
        self._overrides = override_mod.parse(self.override)

    def run(self, module):
        with module.context:
            kernels = irutil.kernel_functions(module)
            names = [irutil.symbol(fn) for fn in kernels]
            override_mod.check_kernels(self._overrides, names)
            for fn, name in zip(kernels, names):
                fields = override_mod.fields_for(self._overrides, name)
                if config_mod.ATTR in fn.attributes:
                    config = self._existing(fn, fields)
                else:
                    problem = heuristics.problem_of(fn, self.arch)
                    config = heuristics.choose(problem, override=fields or None)
                fn.attributes[config_mod.ATTR] = config.to_attr()
                fn.attributes[config_mod.REASON_ATTR] = ir.StringAttr.get(config.reason)

    def _existing(self, fn, fields):
        """The config a kernel came with (checked), with the override applied."""
        reason = KEPT_REASON
        if config_mod.REASON_ATTR in fn.attributes:
            reason = ir.StringAttr(fn.attributes[config_mod.REASON_ATTR]).value
        config = config_mod.Config.from_attr(fn.attributes[config_mod.ATTR], reason=reason)
        return override_mod.apply(config, fields)
