"""A model file that binds, at its top level, the names of the modules the generated runtime
imports (ctypes, errno, os, tempfile, weakref, numpy, torch, dgl), and a class that reads them:
the generated module keeps the user's values, and the runtime its modules."""

import dgl.nn as dglnn
import torch as th
from torch import nn

ctypes = 0.5  # a scale, say
errno = 0.25
os = "linux"
tempfile = None
weakref = 2
numpy = 1.5
torch = "the user's"
dgl = "the user's"


class Scaled(nn.Module):
    def __init__(self, in_size: int, out_size: int):
        super().__init__()
        self.conv = dglnn.SAGEConv(in_size, out_size, "mean")
        self.scale = ctypes + errno + weakref + numpy
        self.labels = (os, tempfile, torch, dgl)

    def forward(self, g, x):
        return th.relu(self.conv(g, x)) * self.scale
