#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A model built and saved with PyTorch gives, through cudamlp in a real
gst-launch pipeline, the outputs of PyTorch's own forward on the same frames:
the seed's two-layer convention saved plainly (and the warning that says what
was assumed), models written by tools/pingpong-export (GELU, SiLU, depth,
F16, no biases), and a plain save_file described by the layers property.

Tolerance: ||out - ref|| / ||mag + |ref| || <= 1e-5, with ref PyTorch's
forward in float64 and mag the same Linear layers evaluated on absolute
values (what float32 rounding error is proportional to); see
tests/common/testutil.h. Backend from PP_TEST_BACKEND (cpu by default)."""
import copy
import os
import runpy
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import save_file

EXPORT = runpy.run_path(str(Path(__file__).resolve().parents[2] / "tools" / "pingpong-export"))

TOL = 1e-5
BACKEND = os.environ.get("PP_TEST_BACKEND", "cpu")


def mlp(k, d, o, hidden_relu):
    layers = [torch.nn.Linear(k, d)]
    if hidden_relu:
        layers.append(torch.nn.ReLU())
    layers += [torch.nn.Linear(d, o), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers)


def linears(model):
    """The model's Linear layers, in the order its forward runs them here."""
    return [m for m in model.modules() if isinstance(m, torch.nn.Linear)]


def magnitude(model, x):
    """The Linear layers on |weights| and |x|: bounds each output's rounding."""
    h = x.abs()
    for layer in linears(model):
        h = h @ layer.weight.abs().T
        if layer.bias is not None:
            h = h + layer.bias.abs()
    return h


def to_samples(pixels, mapping, patch):
    """X as the element defines it, per frame: [frames, N, K] float64."""
    frames, height, width, channels = pixels.shape
    x = torch.from_numpy(pixels).to(torch.float64) / 255.0
    if mapping == "rows":
        return x.reshape(frames, height, width * channels)
    # whole p×p patches in raster order, pixels raster order inside, channels innermost
    ph, pw = height // patch, width // patch
    x = x[:, : ph * patch, : pw * patch, :]
    x = x.reshape(frames, ph, patch, pw, patch, channels).permute(0, 1, 3, 2, 4, 5)
    return x.reshape(frames, ph * pw, patch * patch * channels)


def run(tmp, name, fmt, width, height, channels, mapping, patch, k, d, o, hidden_relu, frames=6,
        model=None, save="plain", layers=None, dtype=None):
    """`save`: "plain" (save_file, no description), "export" (pingpong-export on
    the module), "state_dict" (pingpong-export on its state_dict with `layers`),
    "onnx" (torch.onnx.export, then pingpong-export on the file)."""
    torch.manual_seed(zlib.crc32(name.encode()))
    model = copy.deepcopy(model) if model is not None else mlp(k, d, o, hidden_relu)
    rng = np.random.default_rng(7)
    pixels = rng.integers(0, 256, size=(frames, height, width, channels), dtype=np.uint8)
    x = to_samples(pixels, mapping, patch)
    # Centre the last layer on these frames so about half the outputs pass
    # a final ReLU: a check of mostly zeros would prove little.
    sequential = isinstance(model, torch.nn.Sequential)
    last = max(i for i, m in enumerate(model) if isinstance(m, torch.nn.Linear)) if sequential else 0
    if sequential and model[last].bias is not None:
        with torch.no_grad():
            pre = model[:last + 1](x.to(torch.float32))
            model[last].bias -= pre.reshape(-1, o).median(dim=0).values
    if dtype is not None:
        model = model.to(dtype)  # what the file holds; the reference uses it too
    model_path = tmp / f"{name}.safetensors"
    if save == "export":
        EXPORT["export"](model, model_path)
    elif save == "state_dict":
        EXPORT["export_state_dict"](model.state_dict(), model_path, layers)
        layers = None
    elif save == "onnx":
        torch.onnx.export(model, x[0, :2].to(torch.float32), str(tmp / f"{name}.onnx"),
                          input_names=["x"], output_names=["y"], dynamic_axes={"x": {0: "n"}})
        EXPORT["export_onnx"](str(tmp / f"{name}.onnx"), model_path)
    else:
        save_file(model.state_dict(), str(model_path))
    raw = tmp / f"{name}.raw"
    raw.write_bytes(pixels.tobytes())  # rows are 4-byte multiples here: no padding
    out_path = tmp / f"{name}.f32"
    cmd = [
        "gst-launch-1.0",  # not -q: its warnings are checked
        "filesrc", f"location={raw}", "!",
        "rawvideoparse", f"format={fmt}", f"width={width}", f"height={height}", "!",
        "cudamlp", f"model={model_path}", f"backend={BACKEND}", f"mapping={mapping}",
        f"patch-size={patch}", *([f"layers={layers}"] if layers else []), "!",
        "filesink", f"location={out_path}",
    ]
    run_out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    # A file that says nothing of its activations is run as the old
    # convention, and the element says so; a described one runs silently.
    warned = "Assumed the model's activations" in run_out.stdout + run_out.stderr
    if warned != (save == "plain" and not layers):
        print(f"{name}: warning {'given' if warned else 'missing'}:\n{run_out.stdout}"
              f"{run_out.stderr}")
        return False

    model = model.to(torch.float64)
    with torch.no_grad():
        ref = model(x).numpy()
        mag = magnitude(model, x).numpy()
    out = np.fromfile(out_path, dtype=np.float32).reshape(ref.shape)
    err = np.linalg.norm(out - ref) / np.linalg.norm(mag + np.abs(ref))
    active = np.count_nonzero(ref) / ref.size
    print(f"{name}: {frames} frames, X {x.shape[1]}x{x.shape[2]}, {o} outputs, "
          f"{active:.0%} non-zero: scaled error {err:.2e} (tolerance {TOL:.0e})")
    # A check on all-zero outputs would prove nothing.
    return err <= TOL and active > 0.2 and not np.isnan(out).any()


class ClassStyle(torch.nn.Module):
    """The most common hand-written MLP: attributes and a functional forward."""

    def __init__(self, k, d, o):
        super().__init__()
        self.fc1 = torch.nn.Linear(k, d)
        self.fc2 = torch.nn.Linear(d, d // 2)
        self.out = torch.nn.Linear(d // 2, o)

    def forward(self, x):
        return self.out(torch.nn.functional.silu(self.fc2(torch.relu(self.fc1(x)))))


class TwoParts(torch.nn.Module):
    """An encoder and a head, each an nn.Sequential."""

    def __init__(self, k, d, o):
        super().__init__()
        self.encoder = torch.nn.Sequential(torch.nn.Linear(k, d), torch.nn.GELU())
        self.head = torch.nn.Sequential(torch.nn.Linear(d, d), torch.nn.Tanh(),
                                        torch.nn.Linear(d, o))

    def forward(self, x):
        return self.head(self.encoder(x))


def main():
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        ok = run(tmp, "gray_rows", "gray8", 64, 48, 1, "rows", 16, 64, 32, 1, True)
        ok &= run(tmp, "rgb_patches", "rgb", 40, 28, 3, "patches", 8, 192, 24, 3, False)
        nn = torch.nn
        # A model as users train them: GELU between, no final activation; exported.
        torch.manual_seed(1)
        gelu = nn.Sequential(nn.Linear(64, 32), nn.GELU(), nn.Linear(32, 2))
        ok &= run(tmp, "gelu_exported", "gray8", 64, 48, 1, "rows", 16, 64, 32, 2, False,
                  model=gelu, save="export")
        # The same saved plainly, described by the layers property.
        ok &= run(tmp, "gelu_layers", "gray8", 64, 48, 1, "rows", 16, 64, 32, 2, False,
                  model=gelu, layers="linear, gelu, linear")
        # Deep, odd widths, no biases, F16 weights; and tanh GELU, SiLU,
        # LeakyReLU in RGB patches.
        deep = nn.Sequential(nn.Linear(64, 45, bias=False), nn.SiLU(),
                             nn.Linear(45, 33, bias=False), nn.Tanh(),
                             nn.Linear(33, 17, bias=False), nn.LeakyReLU(0.2),
                             nn.Linear(17, 9, bias=False), nn.Sigmoid(),
                             nn.Linear(9, 3, bias=False))
        ok &= run(tmp, "deep_f16", "gray8", 64, 48, 1, "rows", 16, 64, 0, 3, False,
                  model=deep, save="export", dtype=torch.float16)
        mixed = nn.Sequential(nn.Linear(192, 96), nn.GELU(approximate="tanh"),
                              nn.Linear(96, 31), nn.LeakyReLU(0.1), nn.Linear(31, 1), nn.ReLU())
        ok &= run(tmp, "rgb_mixed", "rgb", 40, 28, 3, "patches", 8, 192, 0, 1, False,
                  model=mixed, save="export")
        # Models as people write them: a class with a functional forward, a
        # model split over two Sequentials, its state_dict, and ONNX files
        # torch.onnx wrote (GELU and SiLU as their ONNX subgraphs).
        torch.manual_seed(2)
        ok &= run(tmp, "class_style", "rgb", 40, 28, 3, "patches", 8, 192, 0, 2, False,
                  model=ClassStyle(192, 40, 2), save="export")
        ok &= run(tmp, "two_sequentials", "gray8", 64, 48, 1, "rows", 16, 64, 0, 3, False,
                  model=TwoParts(64, 24, 3), save="export")
        ok &= run(tmp, "class_state_dict", "rgb", 40, 28, 3, "patches", 8, 192, 0, 2, False,
                  model=ClassStyle(192, 40, 2), save="state_dict",
                  layers="linear, relu, linear, silu, linear")
        ok &= run(tmp, "class_onnx", "rgb", 40, 28, 3, "patches", 8, 192, 0, 2, False,
                  model=ClassStyle(192, 40, 2), save="onnx")
        ok &= run(tmp, "two_sequentials_onnx", "gray8", 64, 48, 1, "rows", 16, 64, 0, 3, False,
                  model=TwoParts(64, 24, 3), save="onnx")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
