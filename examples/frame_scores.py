#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Each frame of a video with its scores, read from the metadata cudamlp
attaches (output=video-meta): the picture and its results arrive together.

    python3 examples/frame_scores.py clip.mp4 model.safetensors [--patch-size 16]
    python3 examples/frame_scores.py videotestsrc model.safetensors

From Python, frames(source, model) yields (frame, scores, pts): frame the
RGB picture as a (height, width, 3) uint8 array, scores its patch grid as a
(rows of patches, patches per row, outputs) float32 array, pts seconds. The
pipeline is

    SOURCE ! videoconvert ! video/x-raw,format=RGB !
        cudamlp output=video-meta mapping=patches ! appsink

and the scores are the frame's "PpScoresMeta", a GstCustomMeta whose
structure holds the shape (samples, outputs, grid-width, grid-height,
patch-size, mapping, dtype) and the float32 values as GBytes ("data").
"""
import argparse
import os
import sys

try:
    import gi
    import numpy as np
except ImportError:
    # The set-up installs GStreamer's bindings and numpy for Debian's
    # python3; another python3 may come first on PATH: run under Debian's.
    if sys.executable != "/usr/bin/python3" and os.path.exists("/usr/bin/python3"):
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    sys.exit(f"frame_scores.py: python3-gi or numpy is not installed for {sys.executable}")

gi.require_version("Gst", "1.0")
gi.require_version("GstVideo", "1.0")
from gi.repository import Gst, GstVideo  # noqa: E402


def source_description(source, frames):
    if source == "videotestsrc":
        return (f"videotestsrc num-buffers={frames} pattern=smpte ! "
                "video/x-raw,width=320,height=240")
    return "filesrc name=src ! decodebin"


def scores_of(buffer):
    """The frame's scores as a (rows, columns, outputs) array, or None."""
    meta = buffer.get_custom_meta("PpScoresMeta")
    if meta is None:
        return None
    s = meta.get_structure()
    data = np.frombuffer(s.get_value("data").get_data(), dtype=np.float32)
    rows, cols = s.get_value("grid-height"), s.get_value("grid-width")
    return data.reshape(rows, cols, s.get_value("outputs"))


def frames(source, model, patch_size=16, backend="auto", count=30):
    Gst.init(None)
    pipeline = Gst.parse_launch(
        f"{source_description(source, count)} ! videoconvert ! video/x-raw,format=RGB ! "
        f"cudamlp name=mlp backend={backend} output=video-meta mapping=patches "
        f"patch-size={patch_size} ! appsink name=out sync=false")
    if source != "videotestsrc":
        pipeline.get_by_name("src").set_property("location", source)
    pipeline.get_by_name("mlp").set_property("model", model)
    sink, bus = pipeline.get_by_name("out"), pipeline.get_bus()
    pipeline.set_state(Gst.State.PLAYING)
    try:
        while not sink.get_property("eos"):
            sample = sink.emit("try-pull-sample", Gst.SECOND // 10)
            if sample is None:
                msg = bus.pop_filtered(Gst.MessageType.ERROR)
                if msg:
                    err, debug = msg.parse_error()
                    raise RuntimeError(f"{msg.src.get_name()}: {err.message}\n{debug}")
                continue
            buf = sample.get_buffer()
            info = GstVideo.VideoInfo.new_from_caps(sample.get_caps())
            ok, frame = buf.map(Gst.MapFlags.READ)
            rows = np.frombuffer(frame.data, dtype=np.uint8)[:info.stride[0] * info.height]
            picture = rows.reshape(info.height, info.stride[0])[:, :info.width * 3]
            picture = picture.reshape(info.height, info.width, 3).copy()
            buf.unmap(frame)
            yield picture, scores_of(buf), buf.pts / Gst.SECOND
    finally:
        pipeline.set_state(Gst.State.NULL)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", help="a clip, or videotestsrc")
    parser.add_argument("model")
    parser.add_argument("--patch-size", type=int, default=16)
    parser.add_argument("--backend", default="auto", help="auto, cuda or cpu")
    parser.add_argument("--frames", type=int, default=30, help="videotestsrc's frame count")
    args = parser.parse_args()
    try:
        for i, (picture, scores, pts) in enumerate(
                frames(args.source, args.model, args.patch_size, args.backend, args.frames)):
            if scores is None:
                sys.exit(f"frame_scores.py: frame {i} carries no scores")
            row, col = np.unravel_index(scores[..., 0].argmax(), scores.shape[:2])
            print(f"frame {i} at {pts:.3f} s: {picture.shape[1]}x{picture.shape[0]}, "
                  f"{scores.shape[1]}x{scores.shape[0]} patches, mean {scores[..., 0].astype(np.float64).mean():.6f}, "
                  f"highest {scores[row, col, 0]:.6f} at ({col}, {row})")
    except (RuntimeError, gi.repository.GLib.Error) as e:
        sys.exit(f"frame_scores.py: {e}")


if __name__ == "__main__":
    main()
