#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Trains a tiny MLP that scores how red a 16×16 RGB patch is (0 to 1) and
saves the module with torch.save, as most training scripts end: the model
the quick start scores a clip with.

    python3 examples/train.py model.pt [weights.pt [model.onnx]]

(weights.pt: its state_dict too, for pingpong-export --layers; model.onnx:
the model as torch.onnx.export writes it, as another framework would hand
it over.)

cudamlp gives the network what it gives every model with mapping=patches
patch-size=16: each patch's 16·16 pixels in raster order, R,G,B innermost,
as values from 0 to 1 (bytes / 255): K = 768 inputs.
"""
import os
import sys

try:
    import torch
except ImportError:
    # The set-up installs PyTorch for Debian's python3; another python3
    # (pyenv, a virtualenv) may come first on PATH: run under Debian's then.
    if sys.executable != "/usr/bin/python3" and os.path.exists("/usr/bin/python3"):
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    sys.exit(f"train.py: PyTorch is not installed for {sys.executable}")

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(768, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(400):
    # Patches of one random colour each, with some noise: 256 pixels × R,G,B.
    colours = torch.rand(256, 1, 3)
    patches = (colours + 0.1 * torch.randn(256, 256, 3)).clamp(0, 1)
    redness = patches[..., 0].mean(dim=1, keepdim=True)
    patches = patches.reshape(256, 768)
    loss = torch.nn.functional.mse_loss(model(patches), redness)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
torch.save(model, sys.argv[1] if len(sys.argv) > 1 else "model.pt")
if len(sys.argv) > 2:  # what most training scripts keep instead: the weights alone
    torch.save(model.state_dict(), sys.argv[2])
if len(sys.argv) > 3:
    torch.onnx.export(model, torch.zeros(1, 768), sys.argv[3], input_names=["x"],
                      output_names=["score"], dynamic_axes={"x": {0: "n"}})
print(f"trained: mean squared error {loss.item():.5f}")
