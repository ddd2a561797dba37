#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Scores every frame of a video with cudamlp and hands the scores to NumPy.

    python3 examples/scores.py clip.mp4 model.safetensors [--patch-size 16]

From Python, score() returns (scores, pts): scores[f] is frame f's grid of
patch scores, shaped (rows of patches, patches per row, outputs), and
pts[f] its timestamp in seconds. The pipeline is

    filesrc ! decodebin ! videoconvert ! cudamlp mapping=patches ! appsink

and each buffer appsink receives is one frame's results: other/tensors,
float32, N×O (N patches in raster order, O outputs each), with the frame's
timestamp. The grid's shape comes from the frame size cudamlp was given.
"""
import argparse
import os
import sys
import time

try:
    import gi
    import numpy as np
except ImportError:
    # The set-up installs GStreamer's bindings and numpy for Debian's
    # python3; another python3 may come first on PATH: run under Debian's.
    if sys.executable != "/usr/bin/python3" and os.path.exists("/usr/bin/python3"):
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    sys.exit(f"scores.py: python3-gi or numpy is not installed for {sys.executable}")

gi.require_version("Gst", "1.0")
from gi.repository import Gst  # noqa: E402


def fail_on_error(bus):
    msg = bus.pop_filtered(Gst.MessageType.ERROR)
    if msg:
        err, debug = msg.parse_error()
        raise RuntimeError(f"{msg.src.get_name()}: {err.message}\n{debug}")


def score(clip, model, patch_size=16, backend="auto", progress=None):
    Gst.init(None)
    pipeline = Gst.parse_launch(
        f'filesrc name=src ! decodebin ! videoconvert ! cudamlp name=mlp backend={backend} '
        f'mapping=patches patch-size={patch_size} ! appsink name=out sync=false')
    pipeline.get_by_name("src").set_property("location", clip)
    pipeline.get_by_name("mlp").set_property("model", model)
    sink, bus = pipeline.get_by_name("out"), pipeline.get_bus()
    scores, pts = [], []
    pipeline.set_state(Gst.State.PLAYING)
    try:
        while not sink.get_property("eos"):
            sample = sink.emit("try-pull-sample", Gst.SECOND // 10)
            if sample is None:
                fail_on_error(bus)
                continue
            buf = sample.get_buffer()
            ok, info = buf.map(Gst.MapFlags.READ)
            scores.append(np.frombuffer(info.data, dtype=np.float32).copy())
            buf.unmap(info)
            pts.append(buf.pts / Gst.SECOND)
            if progress:
                progress(len(scores), pts[-1])
        fail_on_error(bus)
        caps = pipeline.get_by_name("mlp").get_static_pad("sink").get_current_caps()
        video = caps.get_structure(0)
        grid = (video.get_value("height") // patch_size, video.get_value("width") // patch_size)
    finally:
        pipeline.set_state(Gst.State.NULL)
    return np.stack(scores).reshape(len(scores), *grid, -1), np.array(pts)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("clip")
    parser.add_argument("model")
    parser.add_argument("--patch-size", type=int, default=16)
    parser.add_argument("--backend", default="auto", help="auto, cuda or cpu")
    args = parser.parse_args()
    last = [time.monotonic()]

    def progress(frames, seconds):
        # A long clip takes a while: a line every 2 s says how far it is.
        if time.monotonic() - last[0] >= 2:
            last[0] = time.monotonic()
            print(f"scores.py: {frames} frames scored, {seconds:.1f} s into the clip",
                  file=sys.stderr, flush=True)

    try:
        scores, pts = score(args.clip, args.model, args.patch_size, args.backend, progress)
    except (RuntimeError, gi.repository.GLib.Error) as e:
        sys.exit(f"scores.py: {e}")
    print(f"{len(scores)} frames, scores {scores.shape} ({scores.dtype}), "
          f"timestamps {pts[0]:.3f} to {pts[-1]:.3f} s")
    print(f"frame 0: mean {scores[0].mean():.3f}, highest {scores[0].max():.3f} at patch "
          f"{np.unravel_index(scores[0].argmax(), scores[0].shape)[:2]}")


if __name__ == "__main__":
    main()
