"""A syrupy extension that compares numeric snapshots with a stated tolerance.

Snapshots are JSON; floats match when |a - b| <= atol + rtol * |b|. The tolerance is written into
every snapshot (key ``_tolerance``), so a diff shows the numbers that moved and the bound they broke.
"""

from __future__ import annotations

import json
import math

from syrupy.extensions.json import JSONSnapshotExtension

RTOL = 1e-3  # CPU fp32 reruns agree far tighter; this flags real drift from a transformers/torch/harness change
ATOL = 1e-6


def close(a, b, rtol: float = RTOL, atol: float = ATOL) -> bool:
    """Recursive tolerant equality of JSON-like data (NaN equals NaN)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(close(a[k], b[k], rtol, atol) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(close(x, y, rtol, atol) for x, y in zip(a, b))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return abs(a - b) <= atol + rtol * abs(b)
    return a == b


class TolerantJSONSnapshot(JSONSnapshotExtension):
    def serialize(self, data, **kwargs):
        return super().serialize({"_tolerance": {"rtol": RTOL, "atol": ATOL}, **data}, **kwargs)

    def matches(self, *, serialized_data, snapshot_data) -> bool:
        try:
            return close(json.loads(serialized_data), json.loads(snapshot_data))
        except (TypeError, ValueError):
            return serialized_data == snapshot_data
