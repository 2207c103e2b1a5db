"""dgl.utils.gather_pinned_tensor_rows, with its contract (pinned rows, indices on the GPU)."""


def gather_pinned_tensor_rows(tensor, rowid):
    if not tensor.is_pinned() or rowid.device.type != "cuda":
        raise ValueError("gather_pinned_tensor_rows: a pinned tensor and indices on a GPU")
    # DGL reads the rows through unified virtual addressing; the stand-in copies them
    return tensor[rowid.cpu()].to(rowid.device, non_blocking=True)
