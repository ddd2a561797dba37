#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""tools/pingpong-export: what it writes (tensor names, metadata, dtypes),
read back with safetensors' own reader; the command line on a module and on
a state_dict with --layers, from Debian's python3 with no environment, and
the file mode the umask gives; every refusal naming the module and its
position, and every unreadable input told in one line, never a traceback."""
import json
import os
import runpy
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import torch
from safetensors.torch import load_file

TOOL = Path(__file__).resolve().parents[2] / "tools" / "pingpong-export"
EXPORT = runpy.run_path(str(TOOL))
nn = torch.nn
failures = []


def header(path):
    raw = Path(path).read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    return json.loads(raw[8:8 + n])


def check(what, cond, detail=""):
    print(f"{'ok' if cond else 'FAIL'}: {what}{' - ' + detail if detail and not cond else ''}")
    if not cond:
        failures.append(what)


def refuses(what, model, needle, **kw):
    try:
        EXPORT["export"](model, "/dev/null", **kw)
    except EXPORT["ExportError"] as e:
        check(what, needle in str(e), f"message {str(e)!r} lacks {needle!r}")
        return
    check(what, False, "accepted")


class Wrapped(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(6, 5), nn.LeakyReLU(0.3), nn.Linear(5, 2))

    def forward(self, x):
        return self.encoder(x)


class TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Sequential(nn.Linear(4, 2))
        self.b = nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 1))


with tempfile.TemporaryDirectory() as d:
    tmp = Path(d)
    # Nested: names keep the attribute's prefix, the description its slope.
    text = EXPORT["export"](Wrapped(), tmp / "w.safetensors")
    h = header(tmp / "w.safetensors")
    check("nested module", text == "linear(6,5), leaky_relu(0.3), linear(5,2)", text)
    check("metadata key", h["__metadata__"]["pingpong.layers"] == text, str(h["__metadata__"]))
    check("tensor names", sorted(k for k in h if k != "__metadata__") ==
          ["encoder.0.bias", "encoder.0.weight", "encoder.2.bias", "encoder.2.weight"], str(h))
    m = Wrapped()
    EXPORT["export"](m, tmp / "w16.safetensors", dtype=torch.bfloat16)
    loaded = load_file(str(tmp / "w16.safetensors"))
    check("dtype", loaded["encoder.0.weight"].dtype == torch.bfloat16)
    check("values", torch.equal(loaded["encoder.2.weight"],
                                m.encoder[2].weight.detach().to(torch.bfloat16)))
    # Choosing among several Sequentials.
    text = EXPORT["export"](TwoHeads(), tmp / "b.safetensors", module="b")
    check("--module", text == "linear(4,3), tanh, linear(3,1)", text)
    # Every GELU form and Identity.
    text = EXPORT["describe"](nn.Sequential(nn.Linear(3, 3), nn.GELU(), nn.Identity(),
                                            nn.Linear(3, 3), nn.GELU(approximate="tanh"),
                                            nn.Linear(3, 1, bias=False), nn.Sigmoid()))
    check("gelu forms", text == "linear(3,3), gelu, identity, linear(3,3), gelu_tanh, "
          "linear(3,1), sigmoid", text)

    refuses("unsupported module", nn.Sequential(nn.Linear(3, 3), nn.Softmax(dim=1)),
            "module 1 (1: Softmax) is not supported")
    nested = Wrapped()
    nested.encoder.append(nn.Dropout())
    refuses("unsupported nested", nested, "module 3 (encoder.3: Dropout) is not supported")
    refuses("two activations", nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Tanh()),
            "module 2 (tanh): a second activation after Linear layer 1")
    refuses("activation first", nn.Sequential(nn.ReLU(), nn.Linear(3, 3)),
            "module 0 (relu) comes before any Linear layer")
    refuses("too deep", nn.Sequential(*[nn.Linear(2, 2) for _ in range(9)]),
            "has 9 Linear layers; cudamlp runs 1 to 8")
    refuses("ambiguous", TwoHeads(), "holds 2 nn.Sequential modules (a, b)")
    refuses("not a Sequential", Wrapped(), "is a Linear, not an nn.Sequential", module="encoder.0")

    # The command line, on a module saved whole.
    torch.save(nn.Sequential(nn.Linear(4, 3), nn.SiLU(), nn.Linear(3, 1)), tmp / "m.pt")
    run = subprocess.run([sys.executable, str(TOOL), str(tmp / "m.pt"), str(tmp / "m.safetensors"),
                          "--dtype", "f16"], capture_output=True, text=True)
    check("command line", run.returncode == 0 and "linear(4,3), silu, linear(3,1)" in run.stdout,
          run.stdout + run.stderr)
    torch.save(nn.Sequential(nn.Linear(4, 3), nn.Softmax(dim=1)), tmp / "bad.pt")
    run = subprocess.run([sys.executable, str(TOOL), str(tmp / "bad.pt"), str(tmp / "x")],
                         capture_output=True, text=True)
    check("command line refusal", run.returncode == 1 and "Softmax" in run.stderr, run.stderr)

    # A state_dict: refused in one line without --layers, written with them.
    seq = nn.Sequential(nn.Linear(5, 3), nn.GELU(), nn.Linear(3, 2))
    torch.save(seq.state_dict(), tmp / "sd.pt")
    run = subprocess.run([sys.executable, str(TOOL), str(tmp / "sd.pt"), str(tmp / "x")],
                         capture_output=True, text=True)
    check("state_dict without --layers", run.returncode == 1 and "--layers" in run.stderr and
          "Traceback" not in run.stderr and len(run.stderr.strip().splitlines()) == 1, run.stderr)
    old = os.umask(0o027)
    run = subprocess.run([sys.executable, str(TOOL), str(tmp / "sd.pt"), str(tmp / "sd.safetensors"),
                          "--layers", "linear, gelu, linear"], capture_output=True, text=True)
    os.umask(old)
    check("state_dict with --layers", run.returncode == 0 and
          "linear(5,3), gelu, linear(3,2)" in run.stdout, run.stdout + run.stderr)
    check("file mode from the umask", (tmp / "sd.safetensors").stat().st_mode & 0o777 == 0o640,
          oct((tmp / "sd.safetensors").stat().st_mode))
    loaded = load_file(str(tmp / "sd.safetensors"))
    check("state_dict values", all(torch.equal(loaded[k], v) for k, v in seq.state_dict().items())
          and len(loaded) == 4, str(loaded.keys()))
    check("state_dict metadata", header(tmp / "sd.safetensors")["__metadata__"]["pingpong.layers"]
          == "linear(5,3), gelu, linear(3,2)")
    for what, layers, needle in [
            ("--layers count", "linear, relu", "names 1 Linear layers but the state_dict holds 2"),
            ("--layers widths", "linear(5,4), gelu, linear", "'0.weight' is 3x5, linear(5,3)"),
            ("--layers module", "linear, softmax, linear", "module 1 'softmax' is not one")]:
        run = subprocess.run([sys.executable, str(TOOL), str(tmp / "sd.pt"), str(tmp / "y"),
                              "--layers", layers], capture_output=True, text=True)
        check(what, run.returncode == 1 and needle in run.stderr and "Traceback" not in run.stderr,
              run.stderr)

    # Inputs it cannot read: one line each.
    (tmp / "junk.pt").write_bytes(b"not a pickle")
    for what, args, needle in [("missing file", [str(tmp / "none.pt")], "no such file"),
                               ("not a model file", [str(tmp / "junk.pt")], "cannot read"),
                               ("a directory", [str(tmp)], "not a regular file")]:
        run = subprocess.run([sys.executable, str(TOOL)] + args + [str(tmp / "z")],
                             capture_output=True, text=True)
        check(what, run.returncode == 1 and needle in run.stderr and
              len(run.stderr.strip().splitlines()) == 1, run.stderr)
    run = subprocess.run([sys.executable, str(TOOL), str(tmp / "m.pt"), str(tmp / "no" / "m.st")],
                         capture_output=True, text=True)
    check("unwritable output", run.returncode == 1 and "cannot write" in run.stderr, run.stderr)

    # From Debian's python3, from another folder, with no variables set.
    debian = "/usr/bin/python3"
    if os.path.exists(debian) and subprocess.run([debian, "-c", "import torch"],
                                                 capture_output=True).returncode == 0:
        run = subprocess.run([debian, str(TOOL), "m.pt", "debian.safetensors"], cwd=tmp,
                             env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True)
        check("Debian's python3, no environment", run.returncode == 0 and
              torch.equal(load_file(str(tmp / "debian.safetensors"))["0.weight"].half(),
                          load_file(str(tmp / "m.safetensors"))["0.weight"])
              if run.returncode == 0 else False, run.stderr)
    else:
        print("skipped: /usr/bin/python3 has no torch here")

sys.exit(1 if failures else 0)
