#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""scorepublish against a real MQTT broker (Debian's mosquitto, started
here on a free port of 127.0.0.1) and a file of JSON lines, on the CPU
backend:

1. Steady: 20 frames, each one message on the broker (a subscriber gets
   them all, in order) and one line in the file, the two identical; each
   message's scores (grid=true) equal the scores cudamlp attached to that
   frame (read beside it through a tee), and its min, max, mean and cells
   above the threshold follow from them.
2. The broker killed mid-run and started again: every frame is counted
   as published or unpublished (sum = frames, unpublished > 0), the outage
   is a warning on the bus, the return a message, publishing resumes (the
   last frames reach the subscriber), and the file has every frame.
3. Three streams to one broker share one connection (the broker sees one
   client of this process), each counting its own frames and messages;
   with two, the broker restarted: each counts its own outage and resumes.
4. cudamlp output=tensors: each message's scores are the buffer's.
   A stream that stops for a while is said while it is away and when it
   is back, the frames its timestamps skip counted as missing.
5. With neither broker nor file, or frames without scores, the element
   fails, saying so."""
import base64
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import gi
import numpy as np

gi.require_version("Gst", "1.0")
from gi.repository import Gst  # noqa: E402

FRAMES = 20
LIVE_FRAMES = 150  # 5 s at 30 fps
SOURCE = ("videotestsrc num-buffers={n} {live} ! "
          "video/x-raw,format=RGB,width=64,height=48,framerate=30/1 ! "
          "cudamlp backend=cpu output=video-meta mapping=patches patch-size=8 hidden-size=16")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Broker:
    def __init__(self, port, log):
        self.port, self.log, self.proc = port, log, None

    def start(self):
        self.proc = subprocess.Popen(["mosquitto", "-p", str(self.port)], stdout=self.log,
                                     stderr=subprocess.STDOUT)
        for _ in range(100):
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.05)
        raise RuntimeError("mosquitto did not start")

    def stop(self):
        self.proc.kill()
        self.proc.wait()


class Subscriber:
    """mosquitto_sub, which reconnects and subscribes again by itself."""

    def __init__(self, port):
        self.messages = []
        self.proc = subprocess.Popen(
            ["mosquitto_sub", "-p", str(port), "-t", "pingpong/#", "-q", "1", "-v"],
            stdout=subprocess.PIPE, text=True)
        self.thread = threading.Thread(target=self.read, daemon=True)
        self.thread.start()
        time.sleep(0.5)

    def read(self):
        for line in self.proc.stdout:
            topic, payload = line.rstrip("\n").split(" ", 1)
            self.messages.append((topic, payload))

    def stop(self):
        time.sleep(0.5)
        self.proc.terminate()
        self.proc.wait()
        self.thread.join()


def run_many(description, names, during=None):
    """Runs to EOS; for each element named, the bus's warnings and element
    messages from it; and the error, if one ends the run."""
    pipeline = Gst.parse_launch(description)
    bus = pipeline.get_bus()
    seen = {n: {"warnings": [], "elements": []} for n in names}
    error = None
    pipeline.set_state(Gst.State.PLAYING)
    if during:
        threading.Thread(target=during, daemon=True).start()
    while True:
        msg = bus.timed_pop_filtered(30 * Gst.SECOND, Gst.MessageType.ANY)
        assert msg is not None, "no EOS within 30 s"
        src = msg.src.get_name() if msg.src else None
        if msg.type == Gst.MessageType.WARNING and src in seen:
            seen[src]["warnings"].append(msg.parse_warning()[0].message)
        elif msg.type == Gst.MessageType.ELEMENT and src in seen:
            s = msg.get_structure()
            seen[src]["elements"].append((s.get_name(), {k: s.get_value(k) for k in
                                                         [s.nth_field_name(i) for i in
                                                          range(s.n_fields())]}))
        elif msg.type == Gst.MessageType.ERROR:
            error = msg.parse_error()[0].message
            break
        elif msg.type == Gst.MessageType.EOS:
            break
    pipeline.set_state(Gst.State.NULL)
    return seen, error


def run(description, during=None):
    """run_many for the one element named pub: its warnings, element
    messages, and the error."""
    seen, error = run_many(description, ["pub"], during)
    return dict(seen["pub"], error=error)


def summary(seen):
    sums = [fields for name, fields in seen["elements"] if name == "scorepublish-summary"]
    assert len(sums) == 1, seen["elements"]
    return sums[0]


def steady(port, tmp):
    sub = Subscriber(port)
    lines_path = Path(tmp) / "cam1.jsonl"
    frames = []

    def on_sample(sink):
        buf = sink.emit("pull-sample").get_buffer()
        s = buf.get_custom_meta("PpScoresMeta").get_structure()
        frames.append(np.frombuffer(s.get_value("data").get_data(), np.float32).copy())
        return Gst.FlowReturn.OK

    pipeline = Gst.parse_launch(
        SOURCE.format(n=FRAMES, live="") + " ! tee name=t ! queue ! "
        f"scorepublish name=pub stream-name=cam1 broker=127.0.0.1:{port} location={lines_path} "
        "threshold=0.01 max-cells=5 grid=true  t. ! queue ! appsink name=app emit-signals=true")
    pipeline.get_by_name("app").connect("new-sample", on_sample)
    bus = pipeline.get_bus()
    pipeline.set_state(Gst.State.PLAYING)
    msg = bus.timed_pop_filtered(30 * Gst.SECOND, Gst.MessageType.EOS | Gst.MessageType.ERROR)
    assert msg and msg.type == Gst.MessageType.EOS, msg and msg.parse_error()
    stats = pipeline.get_by_name("pub").get_property("stats")
    pipeline.set_state(Gst.State.NULL)
    sub.stop()

    lines = lines_path.read_text().splitlines()
    assert len(lines) == FRAMES == len(frames), (len(lines), len(frames))
    assert [p for t, p in sub.messages] == lines, "the broker's messages differ from the file"
    assert all(t == "pingpong/cam1/scores" for t, _ in sub.messages)
    for i, (line, scores) in enumerate(zip(lines, frames)):
        m = json.loads(line)
        assert m["stream"] == "cam1" and m["frame"] == i, m
        assert m["pts"] == i * 1_000_000_000 // 30, (i, m["pts"])
        assert (m["samples"], m["outputs"], m["grid-width"], m["grid-height"]) == (48, 1, 8, 6)
        grid = np.frombuffer(base64.b64decode(m["scores-float32"]), np.float32)
        assert np.array_equal(grid, scores), f"frame {i}: scores differ from cudamlp's"
        assert scores.std() > 0, "the picture does not vary: the check could not fail"
        assert m["min"] == float(scores.min()) and m["max"] == float(scores.max())
        assert abs(m["mean"] - scores.astype(np.float64).mean()) <= 1e-6 * max(1, abs(m["mean"]))
        above = np.nonzero(scores > 0.01)[0]
        assert m["above-count"] == len(above)
        assert [c["sample"] for c in m["above"]] == list(above[:5])
        assert all(c["x"] == c["sample"] % 8 and c["y"] == c["sample"] // 8 for c in m["above"])
    for field, want in (("frames", FRAMES), ("written", FRAMES), ("published", FRAMES),
                        ("acknowledged", FRAMES), ("unpublished", 0), ("outages", 0)):
        assert stats.get_value(field) == want, (field, stats.to_string())
    print(f"steady: {FRAMES} frames, {len(sub.messages)} messages equal to the file's lines and "
          "to cudamlp's scores")


def restart(broker, port, tmp):
    sub = Subscriber(port)
    lines_path = Path(tmp) / "cam2.jsonl"

    def outage():
        time.sleep(1.5)
        broker.stop()
        time.sleep(1.0)
        broker.start()

    seen = run(SOURCE.format(n=LIVE_FRAMES, live="is-live=true") +
               f" ! scorepublish name=pub stream-name=cam2 broker=127.0.0.1:{port} "
               f"location={lines_path}", during=outage)
    sub.stop()
    assert seen["error"] is None, seen["error"]
    s = summary(seen)
    assert s["frames"] == LIVE_FRAMES == s["written"], s
    assert s["published"] + s["unpublished"] == LIVE_FRAMES, s
    assert s["unpublished"] > 0 and s["outages"] >= 1, s
    assert s["acknowledged"] + s["unacknowledged"] == s["published"], s
    assert any("not reachable" in w and "unpublished" in w for w in seen["warnings"]), seen
    names = [name for name, _ in seen["elements"]]
    assert names.count("scorepublish-broker") >= 2, names  # at start, and back after the outage
    got = sorted(json.loads(p)["frame"] for _, p in sub.messages)
    assert len(set(got)) <= s["published"], (len(got), s)
    assert got and got[-1] == LIVE_FRAMES - 1, "publishing did not resume after the outage"
    assert len(lines_path.read_text().splitlines()) == LIVE_FRAMES
    print(f"restart: {s['published']} published, {s['unpublished']} unpublished during "
          f"{s['outages']} outage(s), {len(set(got))} received; every frame in the file")


def run_streams(names, frames, live, port, during=None):
    """One pipeline of a scorepublish per name, all to the broker on
    `port`; each one's summary fields and its warnings, by name."""
    branches = " ".join(
        SOURCE.format(n=frames, live=live) +
        f" ! scorepublish name={n} stream-name={n} broker=127.0.0.1:{port}" for n in names)
    seen, error = run_many(branches, names, during)
    assert error is None, error
    return ({n: summary(seen[n]) for n in names}, {n: seen[n]["warnings"] for n in names})


def shared(broker, port, tmp, log_path):
    """Streams of one process to one broker: one connection."""
    names = ["door", "gate", "yard"]
    sub = Subscriber(port)
    before = log_path.read_text().count(f"as pingpong-{os.getpid()}-")
    sums, _ = run_streams(names, FRAMES, "", port)
    sub.stop()
    connections = log_path.read_text().count(f"as pingpong-{os.getpid()}-") - before
    assert connections == 1, f"{connections} connections for {len(names)} streams"
    for n in names:
        s = sums[n]
        assert (s["frames"], s["published"], s["acknowledged"], s["unpublished"]) == \
            (FRAMES, FRAMES, FRAMES, 0), (n, s)
        got = [json.loads(p)["frame"] for t, p in sub.messages if t == f"pingpong/{n}/scores"]
        assert got == list(range(FRAMES)), (n, got)

    def outage():
        time.sleep(1.5)
        broker.stop()
        time.sleep(1.0)
        broker.start()

    sums, warnings = run_streams(names[:2], LIVE_FRAMES, "is-live=true", port, during=outage)
    for n in names[:2]:
        s = sums[n]
        assert s["frames"] == LIVE_FRAMES == s["published"] + s["unpublished"], (n, s)
        assert s["unpublished"] > 0 and s["outages"] >= 1, (n, s)
        assert s["acknowledged"] + s["unacknowledged"] == s["published"], (n, s)
        assert any("not reachable" in w for w in warnings[n]), (n, warnings[n])
    print(f"shared: {len(names)} streams, 1 connection, every frame each; two through a broker "
          f"restart, each counting its own ({', '.join(str(sums[n]['unpublished']) for n in names[:2])} "
          "unpublished)")


def tensors(tmp):
    """cudamlp output=tensors: the buffer is the scores."""
    lines_path = Path(tmp) / "tensors.jsonl"
    frames = []

    def on_sample(sink):
        buf = sink.emit("pull-sample").get_buffer()
        frames.append(np.frombuffer(buf.extract_dup(0, buf.get_size()), np.float32))
        return Gst.FlowReturn.OK

    pipeline = Gst.parse_launch(
        SOURCE.format(n=5, live="").replace("output=video-meta", "output=tensors") +
        f" ! tee name=t ! queue ! scorepublish name=pub location={lines_path} grid=true "
        "t. ! queue ! appsink name=app emit-signals=true")
    pipeline.get_by_name("app").connect("new-sample", on_sample)
    pipeline.set_state(Gst.State.PLAYING)
    msg = pipeline.get_bus().timed_pop_filtered(30 * Gst.SECOND,
                                                Gst.MessageType.EOS | Gst.MessageType.ERROR)
    assert msg and msg.type == Gst.MessageType.EOS, msg and msg.parse_error()
    pipeline.set_state(Gst.State.NULL)
    lines = lines_path.read_text().splitlines()
    assert len(lines) == len(frames) == 5
    for line, scores in zip(lines, frames):
        m = json.loads(line)
        assert (m["mapping"], m["samples"], m["outputs"]) == ("tensor", 48, 1), m
        assert np.array_equal(np.frombuffer(base64.b64decode(m["scores-float32"]), np.float32),
                              scores)
    print("tensors: 5 frames, each message's scores equal to cudamlp's buffer")


def stall(tmp):
    """A stream that stops for 0.6 s: a warning while it is away
    (stall-timeout=300), a message when it is back, the frames its
    timestamps skip counted as missing."""
    pipeline = Gst.parse_launch(
        "appsrc name=src format=time caps=video/x-raw,format=RGB,width=64,height=48,"
        "framerate=30/1 ! cudamlp backend=cpu output=video-meta mapping=patches patch-size=8 "
        f"hidden-size=16 ! scorepublish name=pub stall-timeout=300 location={Path(tmp) / 's.jsonl'}")
    src = pipeline.get_by_name("src")
    bus = pipeline.get_bus()
    pipeline.set_state(Gst.State.PLAYING)
    frame = bytes(range(256)) * (64 * 48 * 3 // 256)
    for i in list(range(5)) + list(range(23, 28)):  # 18 frames' time skipped
        if i == 23:
            time.sleep(0.6)
        buf = Gst.Buffer.new_wrapped(frame)
        buf.pts, buf.duration = i * Gst.SECOND // 30, Gst.SECOND // 30
        src.emit("push-buffer", buf)
    src.emit("end-of-stream")
    warnings, names, summary_fields = [], [], None
    while True:
        msg = bus.timed_pop_filtered(10 * Gst.SECOND, Gst.MessageType.ANY)
        assert msg is not None, "no EOS"
        if msg.type == Gst.MessageType.WARNING and msg.src.get_name() == "pub":
            warnings.append(msg.parse_warning()[0].message)
        elif msg.type == Gst.MessageType.ELEMENT and msg.src.get_name() == "pub":
            names.append(msg.get_structure().get_name())
            if names[-1] == "scorepublish-summary":
                summary_fields = msg.get_structure()
        elif msg.type in (Gst.MessageType.EOS, Gst.MessageType.ERROR):
            assert msg.type == Gst.MessageType.EOS, msg.parse_error()
            break
    pipeline.set_state(Gst.State.NULL)
    assert any("no frame for 300 ms" in w for w in warnings), warnings
    assert "scorepublish-resumed" in names and "scorepublish-missing" in names, names
    assert summary_fields.get_value("stalls") == 1, summary_fields.to_string()
    assert summary_fields.get_value("missing") == 18, summary_fields.to_string()
    assert summary_fields.get_value("frames") == 10, summary_fields.to_string()
    print("stall: said while away and when back; 18 frames missing, 10 scored")


def refusals(tmp):
    seen = run(SOURCE.format(n=2, live="") + " ! scorepublish name=pub")
    assert seen["error"] and "nowhere to send" in seen["error"], seen
    seen = run("videotestsrc num-buffers=2 ! scorepublish name=pub "
               f"location={Path(tmp) / 'none.jsonl'}")
    assert seen["error"] and "without scores" in seen["error"], seen
    print("refusals: no destination, and frames without scores, each an error that says so")


def main():
    if not shutil.which("mosquitto") or not shutil.which("mosquitto_sub"):
        print("mosquitto and mosquitto_sub are needed (tools/setup-debian.sh installs them)")
        sys.exit(77)
    Gst.init(None)
    if not Gst.ElementFactory.find("scorepublish"):
        print("scorepublish is not built (no libmosquitto)")
        sys.exit(77)
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp, open(Path(tmp) / "mosquitto.log", "w") as log:
        broker = Broker(port, log)
        broker.start()
        try:
            steady(port, tmp)
            restart(broker, port, tmp)
            shared(broker, port, tmp, Path(tmp) / "mosquitto.log")
        finally:
            broker.stop()
        tensors(tmp)
        stall(tmp)
        refusals(tmp)


if __name__ == "__main__":
    main()
