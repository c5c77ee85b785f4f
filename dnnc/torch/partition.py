"""Which nodes of an ATen FX graph go to dnnc, in which regions.

    regions, refused = propose(gm, device_type="cuda")
    # regions: lists of nodes in graph order, each to become one dnnc graph
    # refused: {node: why dnnc does not take it}

A node goes to dnnc when aten_map.support takes it alone. Supported nodes
are grouped into maximal regions by torch.fx's CapabilityBasedPartitioner,
which merges neighbours as long as no path leaves a region and comes back
(a cycle through torch code): a region is then one dnnc graph, so that
dnnc's fusion passes see it whole. A getitem goes with the op whose result
it picks. A region of data movement only (views, permutes) stays in torch:
it computes nothing. A region's outputs are its tensors read outside it;
a None or a number that one of its ops returns beside its tensors (an
attention op's sequence lengths) is put in its readers as a constant.
"""

import operator

import torch
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase

from dnnc.torch import aten_map


class _Supported(OperatorSupportBase):
    def __init__(self, refused):
        self.refused = refused

    def is_node_supported(self, submodules, node):
        return node.op == "call_function" and node not in self.refused


def support_of(gm, device_type):
    """{node: reason} of every op node of ``gm`` that dnnc does not take."""
    refused = {}
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        if node.target is operator.getitem:
            continue
        reason = aten_map.support(node, device_type)
        if reason is not None:
            refused[node] = reason
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is operator.getitem:
            producer = node.args[0]
            if producer in refused or not isinstance(producer, type(node)) or \
                    producer.op != "call_function":
                refused[node] = refused.get(producer, "getitem of a torch op")
    return refused


def propose(gm, device_type="cpu"):
    """(regions, refused): see the module docstring."""
    refused = support_of(gm, device_type)
    partitioner = CapabilityBasedPartitioner(gm, _Supported(refused),
                                             allows_single_node_partition=True)
    order = {node: i for i, node in enumerate(gm.graph.nodes)}
    regions = []
    for part in partitioner.propose_partitions():
        nodes = sorted(part.nodes, key=order.__getitem__)
        if all(n.target in aten_map.DATA_MOVEMENT for n in nodes):
            continue
        regions.append(nodes)
    regions.sort(key=lambda nodes: order[nodes[0]])
    return regions, refused


def outputs_of(nodes):
    """The nodes of a region read outside it (by another node or as graph
    outputs), in graph order; a tuple-valued op is read through its getitems."""
    inside = set(nodes)
    return [n for n in nodes
            if any(u not in inside for u in n.users)
            and isinstance(n.meta.get("val"), torch.Tensor)]


def constants_of(nodes):
    """{node: value} of the nodes of a region whose value is not a tensor (a
    None or a number an op returns beside its tensors) read outside it: the
    backend puts the value itself in their readers."""
    inside = set(nodes)
    return {n: n.meta.get("val") for n in nodes
            if any(u not in inside for u in n.users)
            and not isinstance(n.meta.get("val"), (torch.Tensor, tuple, list))}
