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


class ClassStyle(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 5)
        self.drop = nn.Dropout(0.1)
        self.fc2 = nn.Linear(5, 2)

    def forward(self, x):
        return torch.sigmoid(self.fc2(self.drop(nn.functional.relu(self.fc1(x)))))


class Scaled(ClassStyle):
    def forward(self, x):
        return self.fc2(self.fc1(x) * 2)


class Softmaxed(ClassStyle):
    def forward(self, x):
        return nn.functional.softmax(self.fc2(self.fc1(x)), dim=-1)


class TwoInputs(ClassStyle):
    def forward(self, x, y):
        return self.fc2(self.fc1(x))


class Split(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(6, 5), nn.GELU())
        self.dec = nn.Sequential(nn.Linear(5, 3), nn.Tanh(), nn.Linear(3, 1))

    def forward(self, x):
        return self.dec(self.enc(x))


class TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Sequential(nn.Linear(4, 2))
        self.b = nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 1))


with tempfile.TemporaryDirectory() as d:
    tmp = Path(d)
    # Traced through forward: each Linear named by its position in the
    # description, the description keeping its slope.
    text = EXPORT["export"](Wrapped(), tmp / "w.safetensors")
    h = header(tmp / "w.safetensors")
    check("nested module", text == "linear(6,5), leaky_relu(0.3), linear(5,2)", text)
    check("metadata key", h["__metadata__"]["pingpong.layers"] == text, str(h["__metadata__"]))
    check("tensor names", sorted(k for k in h if k != "__metadata__") ==
          ["0.bias", "0.weight", "2.bias", "2.weight"], str(h))
    m = Wrapped()
    EXPORT["export"](m, tmp / "w16.safetensors", dtype=torch.bfloat16)
    loaded = load_file(str(tmp / "w16.safetensors"))
    check("dtype", loaded["0.weight"].dtype == torch.bfloat16)
    check("values", torch.equal(loaded["2.weight"],
                                m.encoder[2].weight.detach().to(torch.bfloat16)))
    # An nn.Sequential named by --module keeps its names; what is left out is said.
    notes = []
    text = EXPORT["export"](TwoHeads(), tmp / "b.safetensors", module="b", notes=notes)
    check("--module", text == "linear(4,3), tanh, linear(3,1)", text)
    check("--module names", sorted(k for k in header(tmp / "b.safetensors") if k != "__metadata__")
          == ["b.0.bias", "b.0.weight", "b.2.bias", "b.2.weight"])
    check("--module says what is left out", notes == ["exported 'b' only; left out of it: a.0"],
          str(notes))
    # Models as people write them, traced: functions in forward, Dropout.
    text = EXPORT["export"](ClassStyle(), tmp / "c.safetensors")
    check("class-style forward", text == "linear(6,5), relu, linear(5,2), sigmoid", text)
    check("class-style names", sorted(k for k in header(tmp / "c.safetensors")
                                      if k != "__metadata__") ==
          ["0.bias", "0.weight", "2.bias", "2.weight"])
    text = EXPORT["export"](Split(), tmp / "s.safetensors")
    check("two Sequentials, traced whole", text == "linear(6,5), gelu, linear(5,3), tanh, "
          "linear(3,1)", text)
    # Every GELU form and Identity.
    text = EXPORT["describe"](nn.Sequential(nn.Linear(3, 3), nn.GELU(), nn.Identity(),
                                            nn.Linear(3, 3), nn.GELU(approximate="tanh"),
                                            nn.Linear(3, 1, bias=False), nn.Sigmoid()))
    check("gelu forms", text == "linear(3,3), gelu, identity, linear(3,3), gelu_tanh, "
          "linear(3,1), sigmoid", text)

    refuses("unsupported module", nn.Sequential(nn.Linear(3, 3), nn.Softmax(dim=1)),
            "module 1 (1: Softmax) is not supported")
    nested = Wrapped()
    nested.encoder.append(nn.Softmax(dim=1))
    refuses("unsupported nested", nested, "forward's step 'encoder.3' (Softmax) is not supported")
    refuses("two activations", nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Tanh()),
            "module 2 (tanh): a second activation after Linear layer 1")
    refuses("activation first", nn.Sequential(nn.ReLU(), nn.Linear(3, 3)),
            "module 0 (relu) comes before any Linear layer")
    refuses("too deep", nn.Sequential(*[nn.Linear(2, 2) for _ in range(9)]),
            "has 9 Linear layers; cudamlp runs 1 to 8")
    refuses("a step that is not a layer", Scaled(), "forward's step 'mul' (call_function "
            "_operator.mul) is not something cudamlp runs")
    refuses("a function that is not an activation", Softmaxed(),
            "forward's step 'softmax' (call_function torch.nn.functional.softmax)")
    refuses("two inputs", TwoInputs(), "forward takes more than one input ('y')")
    refuses("not traceable", TwoHeads(), "cannot trace TwoHeads.forward")
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

    # A class-style state_dict ("fc1", "fc2": no indices) in its own order.
    torch.save(ClassStyle().state_dict(), tmp / "csd.pt")
    run = subprocess.run([sys.executable, str(TOOL), str(tmp / "csd.pt"), str(tmp / "csd.st"),
                          "--layers", "linear, relu, linear, sigmoid"], capture_output=True,
                         text=True)
    check("class-style state_dict", run.returncode == 0 and sorted(load_file(str(tmp / "csd.st")))
          == ["0.bias", "0.weight", "2.bias", "2.weight"], run.stdout + run.stderr)
    # A whole module whose class the exporter cannot import: what to do instead.
    (tmp / "mk.py").write_text(
        "import torch\nclass Mine(torch.nn.Sequential):\n    pass\n"
        f"torch.save(Mine(torch.nn.Linear(3, 1)), {str(tmp / 'mine.pt')!r})\n")
    subprocess.run([sys.executable, str(tmp / "mk.py")], check=True)
    run = subprocess.run([sys.executable, str(TOOL), str(tmp / "mine.pt"), str(tmp / "x")],
                         capture_output=True, text=True)
    check("pickled class not importable", run.returncode == 1 and "state_dict" in run.stderr and
          "--layers" in run.stderr and len(run.stderr.strip().splitlines()) == 1, run.stderr)
    # ONNX: torch.onnx's file of a class-style model, and one it cannot run.
    try:
        import onnx  # noqa: F401
        have_onnx = True
    except ImportError:
        have_onnx = False
        print("skipped: ONNX (no onnx package here)")
    if have_onnx:
        model = ClassStyle().eval()
        torch.onnx.export(model, torch.randn(2, 6), str(tmp / "c.onnx"), input_names=["x"],
                          output_names=["y"], dynamic_axes={"x": {0: "n"}})
        run = subprocess.run([sys.executable, str(TOOL), str(tmp / "c.onnx"),
                              str(tmp / "c_onnx.st")], capture_output=True, text=True)
        check("ONNX", run.returncode == 0 and "linear(6,5), relu, linear(5,2), sigmoid" in
              run.stdout, run.stdout + run.stderr)
        loaded = load_file(str(tmp / "c_onnx.st")) if run.returncode == 0 else {}
        check("ONNX weights", loaded and torch.equal(loaded["2.weight"], model.fc2.weight.detach()))
        torch.onnx.export(Softmaxed(), torch.randn(2, 6), str(tmp / "s.onnx"))
        run = subprocess.run([sys.executable, str(TOOL), str(tmp / "s.onnx"), str(tmp / "x")],
                             capture_output=True, text=True)
        check("ONNX refusal", run.returncode == 1 and "(Softmax) is not something cudamlp runs"
              in run.stderr and len(run.stderr.strip().splitlines()) == 1, run.stderr)
        (tmp / "junk.onnx").write_bytes(b"not protobuf at all")
        run = subprocess.run([sys.executable, str(TOOL), str(tmp / "junk.onnx"), str(tmp / "x")],
                             capture_output=True, text=True)
        check("ONNX unreadable", run.returncode == 1 and "cannot read" in run.stderr and
              len(run.stderr.strip().splitlines()) == 1, run.stderr)

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
