"""The run's wheel pin as a run-once record in the shared dir (harness.plugins.wheel_pin makes it, the end
of the run reads it back once)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import cast

from build_steps.once import run_once
from build_steps.pinning import WheelPin, pin_wheel

PIN_RECORD = "wheel-pin"


def pin_once(shared: Path, wheel: Path) -> WheelPin:
    """The wheel's pin, made once for every xdist worker of the run (build_steps.pinning)."""
    # never None: the record is a pin's JSON (run_once raises for a failed one)
    return cast(WheelPin, WheelPin.from_json(run_once(shared, PIN_RECORD,
                                       lambda: pin_wheel(wheel, shared / "pinned-wheel").to_json())))


def load_pin(shared: Path | None) -> WheelPin | None:
    """The run's pin (None when no wheel was pinned), from the run-once record."""
    record = shared / f"{PIN_RECORD}.json" if shared is not None else None
    if record is None or not record.exists():
        return None
    data = json.loads(record.read_text())
    return None if data.get("failed") else WheelPin.from_json(data["result"])
