"""Where a row of a per-record status table is in a system's text (click a row of the Playground's
or the inspector's status table: its record's segments are underlined, a hallucinated value's
segment framed).

Built on :func:`segviz.service.flag_location` (the inspector's flags): one rule for both tables.
"""

from __future__ import annotations

from segviz.service import FLAG_KINDS, FlagLocation, SystemView, flag_location

NOT_IN_INPUT = " (not in the input)"  # how service.status_rows names a hallucinated fact


def view_status_rows(view: SystemView) -> list[dict]:
    """One system's status table: ``{"#": k, "record": label, "status": verdict}`` per input record,
    then one row per fact not in the input (``"#"`` None)."""
    if view.report is None:
        return []
    return ([{"#": v.index + 1, "record": v.label, "status": v.status} for v in view.report.per_record]
            + [{"#": None, "record": h + NOT_IN_INPUT, "status": "hallucinated"} for h in view.report.hallucinated])


def status_location(view: SystemView, row: dict) -> FlagLocation | None:
    """The span of status-table ``row`` (``{"#": k or None, "record": label, <view.label> or
    "status": verdict}``) in ``view``'s text, or None when the row says nothing about this system
    (a fact another system hallucinated) or the text has no segments."""
    status = row.get(view.label, row.get("status"))
    if view.result is None or not view.segment_verdicts or status not in (*FLAG_KINDS, "realised"):
        return None
    k = row.get("#")
    k = None if k is None or k != k or k == "" else int(k)  # blank / NaN: a fact not in the input
    label = str(row.get("record", "")).removesuffix(NOT_IN_INPUT)
    return flag_location(view, status, k, label)
