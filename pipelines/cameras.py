#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Many cameras, one host (pipelines/cameras.sh runs this): each camera's
H.264 over RTSP or RTP decoded (nvh264dec on a GPU machine, avdec_h264
elsewhere), scored by its own cudamlp (device-id spreading the cameras over
the GPUs; the cudamlps of a GPU share one backend, shared=true, unless
SHARED=0) and its scores sent by scorepublish with the camera's name and
each frame's timestamp, to an MQTT broker and/or a file of JSON lines per
camera. All in one pipeline, so they share the process's CUDA context.

A camera whose branch fails (an RTSP server gone, refused, unreachable,
or its decoder choking on the broken end of its stream) is said on stderr
and its source tried again every RETRY seconds while the others go on; its stream's gap is counted by scorepublish as missing frames, and a
stop of more than its stall-timeout is a warning while it lasts. At the end
(DURATION, or Ctrl-C) every camera's stream ends with EOS and a line per
camera counts its frames: scored, published, unpublished, missing (and,
for RTP over UDP, the jitterbuffer's packets pushed, lost and late). A
camera that restarts sends as a new RTP source (a new SSRC, its own
sequence numbers and timestamps): its jitterbuffer starts over for it.

    cameras.py LIST        (see cameras.sh for the list and the variables)"""
import os
import signal
import sys

import gi

gi.require_version("Gst", "1.0")
from gi.repository import GLib, Gst  # noqa: E402

RTP_CAPS = "application/x-rtp,media=video,clock-rate=90000,encoding-name=H264,payload=96"


def env(name, default=""):
    return os.environ.get(name, default)


def read_list(path):
    cameras = []
    for line in open(path):
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        name, url = (words[0], words[1]) if len(words) > 1 else (f"cam{len(cameras) + 1}", words[0])
        if not (url.startswith("rtsp://") or (url.startswith("udp://") and ":" in url[6:])):
            sys.exit(f"cameras: {path}: '{url}' is neither rtsp://... nor udp://...:PORT")
        cameras.append((name, url))
    if not cameras:
        sys.exit(f"cameras: no camera in {path}")
    return cameras


def decoder(backend):
    wanted = env("DECODER")
    if wanted:
        return wanted
    if backend != "cpu" and Gst.ElementFactory.find("nvh264dec"):
        return "nvh264dec"
    return "avdec_h264"


def downstream(i, name, url, dec, out_dir):
    """From the RTP or depayloaded stream to scorepublish, as a launch line."""
    devices = [d for d in env("DEVICES").split(",") if d]
    mlp = (f"cudamlp name=mlp-{name} backend={env('BACKEND', 'auto')} mapping=patches "
           f"patch-size={env('PATCH', '16')} output=video-meta "
           f"shared={'false' if env('SHARED', '1') == '0' else 'true'} slots={env('SLOTS', '4')}")
    if env("MODEL"):
        mlp += f" model={env('MODEL')}"
    if devices:
        mlp += f" device-id={devices[i % len(devices)]}"
    # async=false: a camera that never sends (down at the start, or gone
    # before its first frame) leaves its sink unprerolled; an async sink
    # there would hold the whole pipeline in PAUSED, every other camera's
    # sink blocked in preroll.
    pub = f"scorepublish name=pub-{name} stream-name={name} async=false"
    if env("BROKER"):
        pub += f" broker={env('BROKER')}"
    if out_dir:
        pub += f" location={out_dir}/{name}.jsonl"
    head = (f"rtpjitterbuffer name=jb-{name} latency={env('LATENCY', '100')} ! "
            if url.startswith("udp://") else "")
    return f"{head}rtph264depay ! h264parse ! {dec} ! {mlp} ! {pub}"


def source_line(url):
    if url.startswith("rtsp://"):
        return f"rtspsrc location={url} latency={env('LATENCY', '100')}"
    return f'udpsrc port={url.rsplit(":", 1)[1]} buffer-size=4194304 caps="{RTP_CAPS}"'


class Camera:
    def __init__(self, pipeline, i, name, url, dec, out_dir):
        self.pipeline, self.name, self.url = pipeline, name, url
        self.rest = Gst.parse_bin_from_description(downstream(i, name, url, dec, out_dir), True)
        self.rest.set_name(f"camera-{name}")
        pipeline.add(self.rest)
        self.sink = self.rest.get_static_pad("sink")
        self.sink.add_probe(Gst.PadProbeType.EVENT_DOWNSTREAM, self.drop_eos)
        self.jitterbuffer = self.rest.get_by_name(f"jb-{name}")
        if self.jitterbuffer:
            senders = Gst.ElementFactory.make("rtpssrcdemux", f"senders-{name}")
            self.rest.add(senders)
            self.sink.set_target(senders.get_static_pad("sink"))
            senders.connect("new-ssrc-pad", self.new_sender)
            self.ssrc = None
        self.stopping = False
        self.retry_pending = False
        self.src = None
        self.retired = []  # sources replaced, whose last words may still come
        self.make_source()

    def drop_eos(self, pad, info):
        """A camera that ends or fails is not the end of its stream."""
        if info.get_event().type == Gst.EventType.EOS and not self.stopping:
            return Gst.PadProbeReturn.DROP
        return Gst.PadProbeReturn.OK

    def new_sender(self, senders, ssrc, pad):
        """RTP over UDP: a camera that restarts is a new RTP source, whose
        sequence numbers have nothing to do with the old one's. Judged
        against the old one's, those that fall just behind its last are
        dropped as late for up to the jitterbuffer's max-misorder-time (2 s
        of packets); flushed, the jitterbuffer starts over with the new
        source. (Runs in the source's streaming thread, before the new
        source's first packet.)"""
        jitterbuffer_sink = self.jitterbuffer.get_static_pad("sink")
        old = jitterbuffer_sink.get_peer()
        if old is not None:
            old.unlink(jitterbuffer_sink)
            jitterbuffer_sink.send_event(Gst.Event.new_flush_start())
            jitterbuffer_sink.send_event(Gst.Event.new_flush_stop(False))
            senders.emit("clear-ssrc", self.ssrc)
        pad.link(jitterbuffer_sink)
        self.ssrc = ssrc

    def make_source(self):
        self.src = Gst.parse_launch(source_line(self.url))
        self.src.set_name(f"source-{self.name}")
        self.pipeline.add(self.src)
        if self.url.startswith("rtsp://"):
            self.src.connect("pad-added", self.pad_added)
        else:
            self.src.link(self.rest)

    def pad_added(self, src, pad):
        caps = pad.get_current_caps() or pad.query_caps(None)
        if caps.get_structure(0).get_string("media") == "video" and not self.sink.is_linked():
            pad.link(self.sink)

    def retired_source(self, obj):
        """Whether obj is (in) a source this camera has replaced."""
        while obj is not None:
            if obj in self.retired:
                return True
            obj = obj.get_parent()
        return False

    def owns(self, obj):
        """Whether obj is in this camera's branch: its source, or what the
        stream goes through after it (a decoder that chokes on the broken
        end of a stream fails the camera, not the run)."""
        while obj is not None:
            if obj in (self.src, self.rest):
                return True
            obj = obj.get_parent()
        return False

    def failed(self, message, retry_s):
        if self.retry_pending or self.stopping:
            return
        self.retry_pending = True
        print(f"camera {self.name}: {message.rstrip('.')}; trying again in {retry_s:g} s",
              file=sys.stderr, flush=True)
        GLib.timeout_add(int(retry_s * 1000), self.restart)

    def restart(self):
        self.retry_pending = False
        if self.stopping:
            return False
        old = self.src
        old.set_state(Gst.State.NULL)
        self.pipeline.remove(old)
        self.retired.append(old)
        self.make_source()
        self.src.sync_state_with_parent()
        return False

    def end(self):
        self.stopping = True
        # RTP over UDP: EOS straight into the jitterbuffer, as the sender
        # demuxer has nowhere to forward it before a first packet came.
        entry = self.jitterbuffer.get_static_pad("sink") if self.jitterbuffer else self.sink
        entry.send_event(Gst.Event.new_eos())

    def packets(self):
        """RTP over UDP: the jitterbuffer's packets pushed, lost, late."""
        if not self.jitterbuffer:
            return ""
        st = self.jitterbuffer.get_property("stats")
        return ", " + ", ".join(f"packets-{k}={st.get_value('num-' + k)}"
                                for k in ("pushed", "lost", "late"))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: cameras.py CAMERAS.txt")
    Gst.init(None)
    # PyGObject wraps Gst.Event's type the first time it is used; the
    # cameras' streaming threads doing that at once in drop_eos sometimes
    # got an Event without its fields ("no attribute 'type'", "Must be
    # Gst.Event, not Event"), and the receiver failed. Wrapped here first,
    # on the main thread, before any pipeline runs.
    if Gst.Event.new_eos().type != Gst.EventType.EOS or not Gst.PadProbeInfo.get_event:
        sys.exit("cameras.py: PyGObject does not read GStreamer's events here")
    cameras_listed = read_list(sys.argv[1])
    out_dir = env("OUT_DIR", "" if env("BROKER") else "scores")
    dec = decoder(env("BACKEND", "auto"))
    if env("PRINT", "0") != "0":
        branches = [f"{source_line(url)} ! {downstream(i, name, url, dec, out_dir)}"
                    for i, (name, url) in enumerate(cameras_listed)]
        print("gst-launch-1.0 -e -m " + " ".join(branches))
        return 0
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
    retry_s = float(env("RETRY", "2"))
    pipeline = Gst.Pipeline.new("cameras")
    cameras = [Camera(pipeline, i, name, url, dec, out_dir)
               for i, (name, url) in enumerate(cameras_listed)]
    loop = GLib.MainLoop()
    summaries, status = {}, [0]

    def stop(*_):
        for cam in cameras:
            cam.end()
        GLib.timeout_add_seconds(10, lambda: (print("cameras: no EOS within 10 s", file=sys.stderr),
                                             loop.quit()))
        return False

    def on_message(bus, msg):
        if msg.type == Gst.MessageType.ERROR:
            err, _ = msg.parse_error()
            cam = next((c for c in cameras if c.owns(msg.src)), None)
            if any(c.retired_source(msg.src) for c in cameras):
                pass  # a replaced source's late error: its camera already tries again
            elif cam:
                cam.failed(f"{msg.src.get_name()}: {err.message}", retry_s)
            else:
                print(f"cameras: {msg.src.get_path_string()}: {err.message}", file=sys.stderr)
                status[0] = 1
                loop.quit()
        elif msg.type == Gst.MessageType.WARNING and msg.src.get_name().startswith("pub-"):
            print(f"warning: {msg.parse_warning()[0].message}", file=sys.stderr, flush=True)
        elif msg.type == Gst.MessageType.ELEMENT:
            s = msg.get_structure()
            if s.get_name() == "scorepublish-summary":
                summaries[s.get_string("stream")] = s
        elif msg.type == Gst.MessageType.EOS:
            loop.quit()
        return True

    bus = pipeline.get_bus()
    bus.add_signal_watch()
    bus.connect("message", on_message)
    GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, signal.SIGINT, stop)
    if env("DURATION"):
        GLib.timeout_add(int(float(env("DURATION")) * 1000), stop)
    if pipeline.set_state(Gst.State.PLAYING) == Gst.StateChangeReturn.FAILURE:
        sys.exit("cameras: the pipeline did not start")
    loop.run()
    fields = ("frames", "published", "unpublished", "missing", "stalls", "written")
    for cam in cameras:
        s = summaries.get(cam.name)
        counts = ", ".join(f"{f}={s.get_value(f)}" for f in fields) if s else "no summary"
        print(f"stream={cam.name}, {counts}{cam.packets()}", flush=True)
    pipeline.set_state(Gst.State.NULL)
    return status[0]


if __name__ == "__main__":
    sys.exit(main())
