#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""An H.264 MP4 clip played TIMES over in one file, without re-encoding: the
same access units with their timestamps moved on by the clip's length each
time, for bench/cameras-bench.sh runs long enough that the decoders' start
and its catching up are a small part (the clip must start with a keyframe,
as an encoder's does).

    loop-clip.py CLIP.mp4 OUT.mp4 TIMES"""
import sys

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstApp", "1.0")
from gi.repository import Gst, GstApp  # noqa: E402, F401 (GstApp: appsink's methods)


def access_units(path):
    """The clip's access units (samples) in order, as qtdemux gives them."""
    p = Gst.parse_launch(
        f"filesrc location={path} ! qtdemux ! h264parse ! "
        "video/x-h264,stream-format=avc,alignment=au ! appsink name=s sync=false"
    )
    sink = p.get_by_name("s")
    p.set_state(Gst.State.PLAYING)
    samples = []
    while (s := sink.try_pull_sample(5 * Gst.SECOND)) is not None:
        samples.append(s)
    p.set_state(Gst.State.NULL)
    if not samples:
        sys.exit(f"{path}: no H.264 access units")
    return samples


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    src, dst, times = sys.argv[1], sys.argv[2], int(sys.argv[3])
    Gst.init(None)
    samples = access_units(src)
    last = samples[-1].get_buffer()
    length = last.pts + last.duration
    p = Gst.parse_launch(
        f"appsrc name=a format=time ! h264parse ! mp4mux ! filesink location={dst}"
    )
    src_el = p.get_by_name("a")
    src_el.set_property("caps", samples[0].get_caps())
    p.set_state(Gst.State.PLAYING)
    for k in range(times):
        for s in samples:
            b = s.get_buffer().copy_deep()
            b.pts += k * length
            if b.dts != Gst.CLOCK_TIME_NONE:
                b.dts += k * length
            src_el.push_buffer(b)
    src_el.end_of_stream()
    msg = p.get_bus().timed_pop_filtered(
        Gst.CLOCK_TIME_NONE, Gst.MessageType.EOS | Gst.MessageType.ERROR
    )
    p.set_state(Gst.State.NULL)
    if msg.type == Gst.MessageType.ERROR:
        sys.exit(f"{dst}: {msg.parse_error()[0].message}")
    print(f"{dst}: {len(samples) * times} frames, {length * times / Gst.SECOND:.1f} s")


if __name__ == "__main__":
    main()
