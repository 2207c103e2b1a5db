"""The simulated GPU (gnn_codegen/simulated_device.py) fails where a real one would: a host
tensor meeting a device tensor, in torch or in DGL's kernels. Every generated module runs on it
in the check before writing (verify.py); here, what it catches, and the generated runtime's
refusal of a model left on the host."""

from __future__ import annotations

import dgl
import pytest
import torch

from gnn_codegen.harness import generated_model, import_source, make_inputs, random_graph, run_inference
from gnn_codegen.simulated_device import DEVICE, DeviceMixError, SimulatedDevice
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
