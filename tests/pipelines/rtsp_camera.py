#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""An RTSP camera for the tests, on gst-rtsp-server: H.264 of a live test
picture at 30 fps, 128x96, at rtsp://ADDRESS:PORT/cam (ADDRESS 127.0.0.1
unless given), shared by every client, until killed.

    rtsp_camera.py PORT [ADDRESS]"""
import sys

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstRtspServer", "1.0")
from gi.repository import GLib, Gst, GstRtspServer  # noqa: E402


def main():
    Gst.init(None)
    server = GstRtspServer.RTSPServer()
    address = sys.argv[2] if len(sys.argv) > 2 else "127.0.0.1"
    server.set_address(address)
    server.set_service(sys.argv[1])
    factory = GstRtspServer.RTSPMediaFactory()
    factory.set_launch(
        "( videotestsrc is-live=true ! video/x-raw,format=I420,width=128,height=96,framerate=30/1"
        " ! x264enc tune=zerolatency key-int-max=15 speed-preset=ultrafast"
        " ! rtph264pay name=pay0 pt=96 config-interval=1 )")
    factory.set_shared(True)
    server.get_mount_points().add_factory("/cam", factory)
    server.attach(None)
    print(f"rtsp://{address}:{sys.argv[1]}/cam", flush=True)
    GLib.MainLoop().run()


if __name__ == "__main__":
    main()
