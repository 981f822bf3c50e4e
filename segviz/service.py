"""What the app's pages call: one function per user action, no Streamlit (docs/design.md §3).

Pages turn widgets into plain values, call one function here and render what comes back
(dataclasses holding :class:`~segviz.result.GenerationResult` and
:class:`~segviz.faithfulness.FaithReport`). Everything raises :class:`RecordError` /
:class:`OutputFileError` with a message meant for the user on bad input; nothing here imports
Streamlit, so all of it is testable and usable from a notebook.

This module only gathers the names; the code lives with the page it serves:

* :mod:`segviz.rows` -- records <-> editor rows <-> URL, input warnings;
* :mod:`segviz.systems` -- checkpoints of the app, both systems on one input (Playground);
* :mod:`segviz.plans` -- the Plan editor;
* :mod:`segviz.inspector` -- the Hallucination inspector;
* :mod:`segviz.results` -- the Results page.
"""

from __future__ import annotations

from segviz import decode  # noqa: F401 (service.decode.GenerationResult, as before the split)
from segviz.decode.second import second_note
from segviz.decode.seg import resegment_note
from segviz.inspector import (
    FLAG_KINDS,
    SAMPLES,
    Case,
    FlagLocation,
    OutputFileError,
    align_text,
    attribute_counts,
    attribute_of,
    case_label,
    cases_from_outputs,
    flag_intro,
    flag_kinds,
    flag_location,
    flag_summary,
    flagged_rows,
    input_label,
    invented_note,
    numbered_rows,
    parse_output_file,
    parse_output_lines,
    run_systems,
    sample_inputs,
)
from segviz.plans import (
    PlanOverview,
    generate_with_plan,
    log_prob_per_token,
    plan_from_param,
    plan_of,
    plan_overview,
    plan_rows,
    sample_plans,
)
from segviz.records import RecordError
from segviz.rerank import guided_choice
from segviz.results import (
    LEVEL_NAMES,
    NOT_MEASURED,
    RESULT_COLUMNS,
    CheckpointSummary,
    last_epoch_rows,
    metrics_rows,
    results_rows,
    shipped_epoch,
    summarise_checkpoints,
    training_stretches,
)
from segviz.rows import (
    E2E_ATTRIBUTES,
    MAX_OUTPUT_CHARS,
    MAX_RECORDS,
    MAX_SOURCE_TOKENS,
    MAX_VALUE_CHARS,
    ParsedRecords,
    columns,
    input_warnings,
    output_problem,
    plain_rows,
    record_warnings,
    records_from_param,
    records_from_rows,
    records_to_param,
    rows_from_records,
    rows_from_text,
    unknown_words_warning,
)
from segviz.systems import (
    CHECKPOINT_ENV,
    SYSTEM_LABELS,
    Comparison,
    SystemView,
    case_json,
    cased_tokens,
    checkpoint_mismatch,
    checkpoint_path,
    checkpoint_root,
    checkpoint_stamp,
    compare,
    explain_token,
    misplaced_note,
    missing_message,
    segment_rows,
    status_rows,
    text_posterior,
)

__all__ = [
    "guided_choice",
    "second_note",
    "resegment_note",
    "misplaced_note",
    "CHECKPOINT_ENV",
    "MAX_RECORDS",
    "MAX_OUTPUT_CHARS",
    "MAX_SOURCE_TOKENS",
    "MAX_VALUE_CHARS",
    "E2E_ATTRIBUTES",
    "SYSTEM_LABELS",
    "FLAG_KINDS",
    "flag_intro",
    "flag_summary",
    "flag_kinds",
    "SAMPLES",
    "RESULT_COLUMNS",
    "NOT_MEASURED",
    "LEVEL_NAMES",
    "RecordError",
    "OutputFileError",
    "ParsedRecords",
    "SystemView",
    "Comparison",
    "PlanOverview",
    "Case",
    "FlagLocation",
    "CheckpointSummary",
    "checkpoint_root",
    "checkpoint_path",
    "checkpoint_stamp",
    "checkpoint_mismatch",
    "missing_message",
    "columns",
    "rows_from_records",
    "rows_from_text",
    "plain_rows",
    "records_from_rows",
    "record_warnings",
    "unknown_words_warning",
    "input_warnings",
    "output_problem",
    "records_to_param",
    "records_from_param",
    "compare",
    "generate_with_plan",
    "sample_plans",
    "run_systems",
    "parse_output_file",
    "sample_inputs",
    "attribute_of",
    "attribute_counts",
    "case_label",
    "input_label",
    "parse_output_lines",
    "cases_from_outputs",
    "numbered_rows",
    "invented_note",
    "flagged_rows",
    "status_rows",
    "flag_location",
    "plan_of",
    "log_prob_per_token",
    "plan_from_param",
    "plan_overview",
    "plan_rows",
    "segment_rows",
    "text_posterior",
    "case_json",
    "cased_tokens",
    "align_text",
    "explain_token",
    "summarise_checkpoints",
    "metrics_rows",
    "results_rows",
    "training_stretches",
    "shipped_epoch",
    "last_epoch_rows",
]
