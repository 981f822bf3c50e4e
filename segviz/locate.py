"""Where a row of the per-record status table is in each system's text (the Playground's status
table: click a row, its record's segments are underlined, a hallucinated value's segment framed).

Built on :func:`segviz.service.flag_location` (the inspector's flags): one rule for both tables.
"""

from __future__ import annotations

from segviz.service import FLAG_KINDS, FlagLocation, SystemView, flag_location

NOT_IN_INPUT = " (not in the input)"  # how service.status_rows names a hallucinated fact


def status_location(view: SystemView, row: dict) -> FlagLocation | None:
    """The span of status-table ``row`` (``{"#": k or None, "record": label, <view.label>: status}``)
    in ``view``'s text, or None when the row says nothing about this system (a fact another
    system hallucinated) or the text has no segments."""
    status = row.get(view.label)
    if view.result is None or not view.segment_verdicts or status not in (*FLAG_KINDS, "realised"):
        return None
    k = row.get("#")
    k = None if k is None or k != k or k == "" else int(k)  # blank / NaN: a fact not in the input
    label = str(row.get("record", "")).removesuffix(NOT_IN_INPUT)
    return flag_location(view, status, k, label)
