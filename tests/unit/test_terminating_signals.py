"""SIGHUP/SIGTERM: remembered always, handed to the loop while it listens, given back after."""

from __future__ import annotations

import asyncio
import os
import signal

from explorer.lab.run.signals import TerminatingSignals


async def test_a_signal_is_remembered_and_handed_to_the_listening_loop() -> None:
    before = signal.getsignal(signal.SIGHUP)
    signals = TerminatingSignals()
    heard: list[int] = []
    with signals.installed():
        assert signal.getsignal(signal.SIGHUP) == signals._on_signal  # else the kill ends pytest
        with signals.listening(heard.append):
            os.kill(os.getpid(), signal.SIGHUP)
            for _ in range(100):
                if heard:
                    break
                await asyncio.sleep(0.01)
        os.kill(os.getpid(), signal.SIGTERM)  # nobody listening: only remembered
        await asyncio.sleep(0.05)
    assert heard == [signal.SIGHUP]
    assert (signals.received, signals.name, signals.exit_status) == (signal.SIGHUP, "SIGHUP", 129)
    assert signal.getsignal(signal.SIGHUP) == before, "the previous handler is back"
