#!/usr/bin/env python3
"""A model built and saved with PyTorch gives, through cudamlp in a real
gst-launch pipeline, the outputs of PyTorch's own forward on the same frames.

Tolerance: ||out - ref|| / ||mag|| <= 1e-5, with ref PyTorch's forward in
float64 and mag the same network evaluated on absolute values (what float32
rounding error is proportional to); see tests/common/testutil.h.
Backend from PP_TEST_BACKEND (cpu by default)."""
import os
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import save_file

TOL = 1e-5
BACKEND = os.environ.get("PP_TEST_BACKEND", "cpu")


def mlp(k, d, o, hidden_relu):
    layers = [torch.nn.Linear(k, d)]
    if hidden_relu:
        layers.append(torch.nn.ReLU())
    layers += [torch.nn.Linear(d, o), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers)


def magnitude(model, x):
    """The forward pass on |weights| and |x|: bounds each output's rounding."""
    h = x.abs()
    for layer in model:
        if isinstance(layer, torch.nn.Linear):
            h = h @ layer.weight.abs().T + layer.bias.abs()
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


def run(tmp, name, fmt, width, height, channels, mapping, patch, k, d, o, hidden_relu, frames=6):
    torch.manual_seed(zlib.crc32(name.encode()))
    model = mlp(k, d, o, hidden_relu)
    rng = np.random.default_rng(7)
    pixels = rng.integers(0, 256, size=(frames, height, width, channels), dtype=np.uint8)
    x = to_samples(pixels, mapping, patch)
    # Centre the last layer on these frames so about half the outputs pass
    # the final ReLU: a check of mostly zeros would prove little.
    with torch.no_grad():
        pre = model[:-1](x.to(torch.float32))
        model[-2].bias -= pre.reshape(-1, o).median(dim=0).values
    model_path = tmp / f"{name}.safetensors"
    save_file(model.state_dict(), str(model_path))
    raw = tmp / f"{name}.raw"
    raw.write_bytes(pixels.tobytes())  # rows are 4-byte multiples here: no padding
    out_path = tmp / f"{name}.f32"
    cmd = [
        "gst-launch-1.0", "-q",
        "filesrc", f"location={raw}", "!",
        "rawvideoparse", f"format={fmt}", f"width={width}", f"height={height}", "!",
        "cudamlp", f"model={model_path}", f"backend={BACKEND}", f"mapping={mapping}",
        f"patch-size={patch}", "!",
        "filesink", f"location={out_path}",
    ]
    subprocess.run(cmd, check=True)

    model = model.to(torch.float64)
    with torch.no_grad():
        ref = model(x).numpy()
        mag = magnitude(model, x).numpy()
    out = np.fromfile(out_path, dtype=np.float32).reshape(ref.shape)
    err = np.linalg.norm(out - ref) / np.linalg.norm(mag)
    active = np.count_nonzero(ref) / ref.size
    print(f"{name}: {frames} frames, X {x.shape[1]}x{x.shape[2]}, {o} outputs, "
          f"{active:.0%} non-zero: scaled error {err:.2e} (tolerance {TOL:.0e})")
    # A check on all-zero outputs would prove nothing.
    return err <= TOL and active > 0.2 and not np.isnan(out).any()


def main():
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        ok = run(tmp, "gray_rows", "gray8", 64, 48, 1, "rows", 16, 64, 32, 1, True)
        ok &= run(tmp, "rgb_patches", "rgb", 40, 28, 3, "patches", 8, 192, 24, 3, False)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
