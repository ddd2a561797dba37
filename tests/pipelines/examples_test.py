#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The examples that read the scores cudamlp attaches to frames
(examples/frame_scores.py and .c): each frame's scores, read from its
PpScoresMeta, are the brightness model's on that very frame's pixels (a
patch's mean / 255, within 1e-5: float32 sums of 768 values), and the C
example prints the same lines as the Python one.

    examples_test.py BUILD/examples/frame_scores"""
import runpy
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "frame_scores.py"
TOL = 1e-5
PATCH = 16


def main():
    c_example = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        model = Path(tmp) / "bright.safetensors"
        subprocess.run([sys.executable, str(ROOT / "tools" / "make-brightness-model"), str(model),
                        "--patch", str(PATCH)], check=True)
        frames = runpy.run_path(str(EXAMPLE))["frames"]
        seen = 0
        for picture, scores, _ in frames("videotestsrc", str(model), PATCH, "cpu", 6):
            assert scores is not None, f"frame {seen} carries no scores"
            h, w = picture.shape[0] // PATCH, picture.shape[1] // PATCH
            assert scores.shape == (h, w, 1), scores.shape
            want = picture[:h * PATCH, :w * PATCH].astype(np.float64)
            want = want.reshape(h, PATCH, w, PATCH, 3).mean(axis=(1, 3, 4)) / 255
            err = np.abs(scores[..., 0] - want).max()
            assert err <= TOL, f"frame {seen}: scores differ from its pixels' means by {err}"
            assert want.std() > 0.1, "the test picture is not varied enough to tell patches apart"
            seen += 1
        assert seen == 6, f"{seen} frames of 6"
        args = ["videotestsrc", str(model)]
        py = subprocess.run([sys.executable, str(EXAMPLE)] + args +
                            ["--patch-size", str(PATCH), "--frames", "6", "--backend", "cpu"],
                            check=True, capture_output=True, text=True).stdout
        c = subprocess.run([c_example] + args + [str(PATCH), "6", "cpu"],
                           check=True, capture_output=True, text=True).stdout
        assert len(py.splitlines()) == 6, py
        assert py == c, f"Python printed\n{py}C printed\n{c}"
    print(f"{seen} frames: scores match their pixels within {TOL}; C and Python print the same")


if __name__ == "__main__":
    main()
