"""dnn-verify: check every dnn op against its definition.

IRDL has already checked structure (operand and result counts, tensor types)
when the IR was parsed. This pass runs each op's shape and attribute rules and
fails on the first op that breaks them, with a message naming the op, the
operand or attribute, the dimension, and what was expected::

    'dnn.matmul' op operand 'b' dim 0: expected 64 (K of 'a'), got 32

Lit test: test/lit/passes/dnn_verify.mlir.
"""

from dataclasses import dataclass

from dnnc.dialect import builders
from dnnc.passes import DnncPass, dnn_ops, register


def verify_module(module):
    """Verify every dnn op in ``module``; raise VerificationError on the first bad one."""
    for op in dnn_ops(module):
        builders.verify(op)


@register
@dataclass
class DnnVerify(DnncPass):
    NAME = "dnn-verify"

    def run(self, module):
        verify_module(module)
