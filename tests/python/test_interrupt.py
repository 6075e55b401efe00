"""Ctrl-C (SIGINT) stops a long run, a long sweep and a long stepper move with KeyboardInterrupt
within seconds, and the module goes on working afterwards."""

import os
import signal
import threading
import time

import pytest

import toysim

# About 3.2 billion instructions: 20 s in Release, minutes under the sanitizers.
LONG = ("programs/matmul_inner.toy", {"n": 1024})


def interrupted_after(seconds, action):
    """Runs `action`, sending this process SIGINT after `seconds` from another thread; returns how
    long after the signal KeyboardInterrupt came."""
    sent = []

    def send():
        sent.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGINT)

    timer = threading.Timer(seconds, send)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            action()
    finally:
        timer.cancel()
    assert sent, "the action ended before the signal was sent"
    return time.monotonic() - sent[0]


def test_ctrl_c_stops_a_long_run():
    p = toysim.load(LONG[0], **LONG[1])
    assert interrupted_after(0.5, p.run) < 5
    assert toysim.load("programs/p1_c00.toy").run().passed  # still usable


def test_ctrl_c_stops_a_long_sweep():
    p = toysim.load(LONG[0])
    assert interrupted_after(0.5, lambda: p.sweep(n=[8, 1024])) < 5


def test_ctrl_c_stops_a_long_continue():
    s = toysim.Session(toysim.load(LONG[0], **LONG[1]))
    assert interrupted_after(0.5, s.continue_) < 5
    assert 0 < s.position < 3_300_000_000
    s.back(3)  # the session goes on from where it stopped
