"""Models that keep their activation in an attribute, as people write them: the model's own
(`self.activation = activation`), a layer class's (`self.activation(h) if self.activation else
h`), a DGL module's (`TAGConv(..., activation=F.elu)`), and one that names F.relu on its line
though an attribute holds it too."""

import dgl.nn as dglnn
import torch.nn as nn
import torch.nn.functional as F


class ActivationOfTheModel(nn.Module):
    def __init__(self, in_size, hid_size, out_size, activation=F.elu):
        super().__init__()
        self.layers = nn.ModuleList([dglnn.SAGEConv(in_size, hid_size, "mean"),
                                     dglnn.SAGEConv(hid_size, out_size, "mean")])
        self.activation = activation

    def forward(self, g, x):
        h = self.activation(self.layers[0](g, x))
        return self.layers[1](g, h)


class DenseLayer(nn.Module):
    def __init__(self, in_size, out_size, activation=None):
        super().__init__()
        self.linear = nn.Linear(in_size, out_size)
        self.activation = activation

    def forward(self, h):
        h = self.linear(h)
        return self.activation(h) if self.activation else h


class ActivationOfALayer(nn.Module):
    def __init__(self, in_size, hid_size, out_size):
        super().__init__()
        self.mlp = nn.ModuleList([DenseLayer(in_size, hid_size, activation=F.leaky_relu),
                                  DenseLayer(hid_size, hid_size)])
        self.conv = dglnn.GraphConv(hid_size, out_size)

    def forward(self, g, x):
        h = x
        for layer in self.mlp:
            h = layer(h)
        return self.conv(g, h)


class ActivationOfADGLModule(nn.Module):
    def __init__(self, in_size, hid_size, out_size):
        super().__init__()
        self.layers = nn.ModuleList([dglnn.TAGConv(in_size, hid_size, k=2, activation=F.elu),
                                     dglnn.TAGConv(hid_size, out_size, k=2)])

    def forward(self, g, x):
        h = self.layers[0](g, x)
        return self.layers[1](g, h)


class ReluWrittenOut(nn.Module):
    def __init__(self, in_size, hid_size, out_size):
        super().__init__()
        self.conv1 = dglnn.SAGEConv(in_size, hid_size, "mean")
        self.conv2 = dglnn.SAGEConv(hid_size, out_size, "mean")
        self.activation = F.relu  # held, but forward writes F.relu itself

    def forward(self, g, x):
        h = F.relu(self.conv1(g, x))
        return self.conv2(g, h)
