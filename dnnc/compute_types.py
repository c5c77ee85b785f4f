"""What a convolution or a matmul multiplies in when the graph does not say:
the one place of that rule.

cuDNN multiplies f32 convolutions on tf32 tensor cores unless told not to
(PyTorch's ``torch.backends.cudnn.allow_tf32`` is True by default), and
cuBLAS multiplies f32 matmuls exactly unless told otherwise
(``torch.backends.cuda.matmul.allow_tf32`` is False by default). dnnc
follows both:

* a compute type asked for, on the op (``compute_data_type=`` of
  ``Graph.conv_fprop`` and the others) or else on the graph
  (``Graph(compute_data_type=...)``), is taken as asked: ``"float"``
  multiplies f32 exactly, ``"tf32"`` rounds both operands to tf32;
* none asked (both left None, the default): a convolution whose operands
  are both f32 multiplies as tf32, unless it has groups (depthwise and
  grouped convolutions run on simt-depthwise's f32 FMAs, whose exact
  products no tensor core would improve on); int8 / uint8 operands multiply and add
  in int32, exactly (cuDNN's only compute type for them); every other
  convolution and every matmul multiplies in f32 (16-bit operands are exact
  in either).

``resolve`` applies the rule when the op is added to the graph, from the
operands' types then; the dnn IR then carries the result (``compute_type =
tf32`` or ``f32``), so the CPU back end, the NumPy reference and the GPU
kernels all read the same thing, and a graph read back from its MLIR keeps
it. The plan's reason of a tf32 convolution repeats the rule (``NOTE``).
"""

from dnnc.dialect.types import data_type

CONVOLUTIONS = ("conv_fprop", "conv_dgrad", "conv_wgrad")

# What the plan says of an f32 convolution multiplied as tf32.
NOTE = ("f32 operands multiplied as tf32 (the default for f32 convolutions, as cuDNN's; "
        "compute_data_type='float' multiplies them exactly)")


def resolve(op, asked, operand_types, groups=1):
    """The compute type (a dnnc ``data_type``: FLOAT, TF32 or INT32) of ``op`` (a
    dnn op name) whose operands have ``operand_types``, given ``asked``:
    the op's compute_data_type, else the graph's, None where neither says;
    ``groups``, a convolution's."""
    if asked is not None:
        return asked
    if operand_types and all(t in (data_type.INT8, data_type.UINT8) for t in operand_types):
        return data_type.INT32
    if op in CONVOLUTIONS and groups == 1 and operand_types and \
            all(t is data_type.FLOAT for t in operand_types):
        return data_type.TF32
    return data_type.FLOAT
