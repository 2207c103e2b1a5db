"""The simulated GPU (gnn_codegen/verify/simulated_device.py) fails where a real one would: a host
tensor meeting a device tensor, in torch or in DGL's kernels. Every generated module runs on it
in the check before writing (verify.py); here, what it catches, and the generated runtime's
refusal of a model left on the host."""

from __future__ import annotations

from typing import Any

import dgl
import pytest
import torch

from gnn_codegen.verify.harness import (
    generated_model,
    import_source,
    make_inputs,
    random_graph,
    run_inference,
)
from gnn_codegen.verify.simulated_device import DEVICE, DeviceMixError, SimulatedDevice
from gnn_codegen.verify.check import SIMULATED_WHOLE
from tests.cases import CASES_BY_NAME, all_cases, generate_case


def test_a_host_tensor_meeting_a_device_weight_fails() -> None:
    linear = torch.nn.Linear(4, 3)
    x = torch.randn(5, 4)
    with SimulatedDevice() as sim:
        sim.move_model(linear)
        sim.on_host(x)
        assert linear.weight.device == DEVICE and x.device == torch.device("cpu")
        with pytest.raises(DeviceMixError, match="reads a host tensor and a device tensor"):
            linear(x)
        y = linear(x.to(DEVICE))  # moved first: fine, and on the device
        assert y.device == DEVICE and y.cpu().device == torch.device("cpu")


def test_dgl_kernels_check_the_graph_they_run_on() -> None:
    g = dgl.rand_graph(20, 60)
    h = torch.randn(20, 4)
    with SimulatedDevice() as sim:
        sim.on_host(h)
        on_device = g.to(DEVICE)
        assert on_device.device == DEVICE and g.device == torch.device("cpu")
        with pytest.raises(DeviceMixError, match="gspmm reads a host tensor on a device graph"):
            dgl.ops.copy_u_sum(on_device, h)
        assert dgl.ops.copy_u_sum(on_device, h.to(DEVICE)).device == DEVICE
        with pytest.raises(DeviceMixError):
            dgl.ops.copy_u_sum(g, h.to(DEVICE))
    assert g.device == torch.device("cpu") and torch.device("cpu") == g.device  # DGL as it was


def test_a_moved_tensor_is_a_copy() -> None:
    x = torch.zeros(3)
    with SimulatedDevice() as sim:
        sim.on_host(x)
        y = x.to(DEVICE)
        y += 1  # on the device: the host's copy is untouched
        assert x.sum() == 0 and y.device == DEVICE


@pytest.mark.parametrize("name", ["sage", "gat", "edge_features"])
def test_a_model_left_on_the_host_is_refused_clearly(name: str) -> None:
    generated = generate_case(CASES_BY_NAME[name])
    model = generated_model(generated, import_source(generated.source, generated.loaded.path.parent))
    g = random_graph(50, zero_in_degree=False)
    inputs = make_inputs(generated, 50, 0, g.num_edges())
    with SimulatedDevice() as sim, pytest.raises(ValueError, match=r"the model is on cpu, not on device="
                                                       r"cpu:0: call model.to\(device\)"):
        sim.on_host(*inputs)
        run_inference(model, generated, g, inputs, batch_size=7, device=sim.device)


def test_every_example_was_checked_on_the_simulated_gpu() -> None:
    for case in all_cases():
        result = generate_case(case).verification
        assert result is not None and result.ok
        assert any("simulated GPU" in b.sources for b in result.batches), case.name


def test_rows_that_fit_on_the_gpu_are_moved_there_whole_not_gathered_per_batch() -> None:
    """On a GPU (measured on an H200: benchmarks/results/cuda_pipeline_h200.json), gathering
    each batch's source rows on the host took 98% of the time. A layer that reads its source
    rows only in messages has them moved to the device once where they fit: its blocks take
    every node as a source, and the result is the same."""
    generated = generate_case(CASES_BY_NAME["sage"])
    module = import_source(generated.source, generated.loaded.path.parent, "moved_whole")
    runtime = module._FullNeighbourBatches
    prepare, in_place = runtime._prepare, []

    def recording(self, dst_nodes, src, dst, edges, whole, blocks):
        if blocks:
            in_place.append(whole and all(t.device == DEVICE for t in src))
        return prepare(self, dst_nodes, src, dst, edges, whole, blocks)

    runtime._prepare = recording
    model = generated_model(generated, module)
    g = random_graph(50)
    inputs = make_inputs(generated, 50, 0, g.num_edges())
    on_host = run_inference(model, generated, g, inputs, batch_size=7, device="cpu")
    in_place.clear()
    with SimulatedDevice() as sim:
        sim.move_model(model)
        sim.on_host(*inputs)
        on_device = run_inference(model, generated, g, inputs, batch_size=7, device=sim.device)
    assert in_place and all(in_place)  # every layer of SAGE reads its sources in messages only
    assert torch.allclose(on_device, on_host, atol=1e-6)


def test_hetero_relation_rows_that_fit_on_the_gpu_are_moved_there_whole() -> None:
    """The same for a HeteroGraphConv whose relations' source rows are computed once per node
    (RGAT's GATConvs): on the simulated GPU its blocks take every node as a source."""
    from gnn_codegen.load.hetero_schema import random_heterograph
    from gnn_codegen.verify.hetero import random_inputs, _run, node_counts

    generated = generate_case(CASES_BY_NAME["rgat"])
    module = import_source(generated.source, generated.loaded.path.parent, "hetero_moved_whole")
    runtime = module._HeteroBatches
    all_sources, blocks = runtime._block_of_all_sources, []

    def recording(self, ntype, batch):
        blocks.append(ntype)
        return all_sources(self, ntype, batch)

    runtime._block_of_all_sources = recording
    model = generated_model(generated, module)
    counts = node_counts(generated, 120)
    g = random_heterograph(generated.schema, counts, seed=0)
    inputs = random_inputs(generated, counts, 0)
    on_host = _run(model, generated, g, inputs, 13, "in place")
    blocks.clear()
    on_device = _run(model, generated, g, inputs, 13, SIMULATED_WHOLE)
    assert blocks  # RGAT's layers all read their relations' rows in place
    assert torch.allclose(on_device, on_host, atol=1e-6)  # the paper rows it returns


@pytest.mark.parametrize("name", ["rgat", "rgcn_hetero"])
def test_hetero_on_a_simulated_gpu_with_nodes_and_storage(name: str, tmp_path: Any) -> None:
    """The model on a (simulated) GPU, the heterograph and features on the host, the results in
    files, for some nodes and with batch_size="auto": no host tensor meets a device tensor."""
    from gnn_codegen.load.hetero_schema import random_heterograph
    from gnn_codegen.verify.hetero import random_inputs, node_counts

    generated = generate_case(CASES_BY_NAME[name])
    module = import_source(generated.source, generated.loaded.path.parent, f"{name}_simulated_storage")
    model = generated_model(generated, module)
    counts = node_counts(generated, 150)
    g = random_heterograph(generated.schema, counts, seed=1)
    (x,) = random_inputs(generated, counts, 1).values()
    ids = torch.tensor([3, 0, 3])
    nodes = ids if generated.hetero.traced.output.__class__ is not dict else {"paper": ids}
    with torch.no_grad():
        expected = model([g] * 3, x) if generated.hetero.traced.blocks else model(g, x)
    with SimulatedDevice() as sim:
        sim.move_model(model)
        sim.on_host(*x.values())
        for batch_size in (7, "auto"):
            actual = model.inference(g, x, batch_size, sim.device, max_memory=2**13, nodes=nodes,
                                     storage=tmp_path / str(batch_size))
            if isinstance(nodes, dict):
                assert torch.allclose(actual["paper"], expected["paper"][ids], atol=1e-5)
            else:
                assert torch.allclose(actual, expected[ids], atol=1e-5)
