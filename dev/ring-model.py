#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A model of the barriers of exact FP32's ring (kernels/wide_pieces.cuh):
two warpgroups of four warps, each stage holding one warpgroup's part of a
weight tile, parts u = 0, 1, 2, ... taken by warpgroup u % 2, the copies
landing after random delays and the warps stepping in random order. It
reports, for each model shape, how many schedules ran to the end, how many
stopped with no warp able to go on (deadlock), and how many had a warp read
a stage that held another part than the one it waited for.

`dev/ring-model.py [SCHEDULES]` runs both barrier layouts: `shared`, one
`full` barrier a stage, which a warpgroup waits on for every other fill
when the stages are odd in number (a parity then cannot tell its fill from
the one before, the other warpgroup's); and `per-warpgroup`, one for each
warpgroup, the kernel's."""
import random
import sys


class Barrier:
    """An mbarrier: `count` arrivals and no bytes pending complete a phase;
    a wait for parity P returns once a phase of parity P has completed,
    that is, once the phase in progress has the other parity."""

    def __init__(self, count):
        self.count, self.pending, self.bytes, self.completed = count, count, 0, 0

    def arrive(self):
        self.pending -= 1
        self.settle()

    def settle(self):
        if self.pending == 0 and self.bytes == 0:
            self.completed += 1
            self.pending = self.count

    def done(self, parity):
        return parity != self.completed % 2


def pad64(v):
    return (v + 63) // 64 * 64


def schedule(per_warpgroup, stages, layers, over, seed):
    rnd = random.Random(seed)
    # each hidden layer: column tiles of 128, k-tiles of 32, padded width
    shape = [((pad64(o) + 127) // 128, pad64(i) // 32, pad64(o)) for i, o in layers]
    parts = sum(2 * cols * ks for cols, ks, _ in shape)
    full = [Barrier(1) for _ in range((2 if per_warpgroup else 1) * stages)]
    empty = [Barrier(4) for _ in range(stages)]
    held = [None] * stages  # the part each stage holds
    copies = []  # [steps left, stage, part, barrier]
    misread = []

    def full_of(part, s):
        return full[part % 2 * stages + s] if per_warpgroup else full[s]

    def fill(s, part):
        b = full_of(part, s)
        b.pending -= 1  # arrive.expect_tx
        b.bytes += 1
        copies.append([rnd.randint(1, 40), s, part, b])

    for i in range(min(stages, parts)):
        fill(i, i)

    def warp(wg, w):
        u, s, phase, mine = wg, wg, 0, 0
        for li, (cols, ks, width) in enumerate(shape):
            for c in range(cols):
                active = c * 128 + wg * 64 < width
                for _ in range(ks):
                    if per_warpgroup:
                        b, parity = full[wg * stages + s], mine >> s & 1
                        mine ^= 1 << s
                    else:
                        b, parity = full[s], phase
                    while not b.done(parity):
                        yield "blocked"
                    if held[s] != u:
                        misread.append((wg, w, u, s, held[s]))
                    if active:
                        yield ("products", wg)  # wgmma: the warpgroup's four warps together
                    empty[s].arrive()
                    if w == 0 and u + stages < parts:
                        while not empty[s].done(phase):
                            yield "blocked"
                        fill(s, u + stages)
                    u += 2
                    s += 2
                    if s >= stages:
                        s -= stages
                        phase ^= 1
                if c == cols - 1 and li in over:
                    yield ("block", li, c)  # __syncthreads before the stores
            yield ("block", li)

    warps = [(wg, warp(wg, w)) for wg in range(2) for w in range(4)]
    meeting = [None] * 8  # where each warp waits for others
    done, idle, steps = set(), 0, 0
    while len(done) < 8:
        steps += 1
        if steps > 400000:
            return "too long", misread
        moved = False
        for copy in copies:
            copy[0] -= 1
        for copy in [c for c in copies if c[0] <= 0]:
            copies.remove(copy)
            held[copy[1]] = copy[2]
            copy[3].bytes -= 1
            copy[3].settle()
            moved = True
        order = list(range(8))
        rnd.shuffle(order)
        for i in order:
            if i in done or rnd.random() < 0.5:
                continue
            wg, gen = warps[i]
            if meeting[i] is not None:
                at = meeting[i]
                peers = [j for j in range(8) if warps[j][0] == wg] if at[0] == "products" else range(8)
                if all(meeting[j] == at for j in peers):
                    for j in peers:
                        meeting[j] = None
                    moved = True
                continue
            try:
                r = next(gen)
            except StopIteration:
                done.add(i)
                moved = True
                continue
            if r != "blocked":
                meeting[i] = r
                moved = True
        if moved or copies:
            idle = 0
        else:
            idle += 1
            if idle > 200:
                return "deadlock", misread
    return "ran", misread


SHAPES = {  # hidden layers (in, out), stages, layers written over their inputs
    "deep": ([(192, 512), (512, 256), (256, 64)], 3, {1, 2}),
    "hd": ([(192, 256)], 3, set()),
    "narrow": ([(192, 64), (64, 64), (64, 64), (64, 64)], 3, set()),
    "deep, two stages": ([(192, 512), (512, 256), (256, 64)], 2, set()),
}

if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 60
    for per_warpgroup in (False, True):
        for name, (layers, stages, over) in SHAPES.items():
            ends, misreads = {}, 0
            for seed in range(n):
                end, misread = schedule(per_warpgroup, stages, layers, over, seed)
                ends[end] = ends.get(end, 0) + 1
                misreads += bool(misread)
            layout = "per-warpgroup" if per_warpgroup else "shared"
            print(f"{layout:13} {name:16} {ends} a stage read holding another part: {misreads}")
