"""Human evaluation as an annotation campaign (paper §5 "Metrics", Tables 2 and 3).

No Streamlit here: the Annotate and Results pages call these functions.

- :mod:`~segviz.annotate.store`: SQLAlchemy models and :class:`Store` (SQLite by default).
- :mod:`~segviz.annotate.campaign`: sampling (20 inputs per K), blinded per-annotator shuffles,
  resume, uploaded system outputs.
- :mod:`~segviz.annotate.agreement`: the paper's table per system, Krippendorff's alpha,
  checker-vs-human agreement.
- :mod:`~segviz.annotate.io`: CSV / JSONL export and import.
"""

from segviz.annotate.agreement import (
    RESULT_COLUMNS,
    agreement,
    cohen_kappa,
    krippendorff_alpha,
    majority,
    majority_count,
    results_table,
)
from segviz.annotate.campaign import (
    AutoCheck,
    Input,
    Output,
    create_campaign,
    is_done,
    items_for,
    next_item,
    parse_uploaded_outputs,
    progress,
    sample_inputs,
)
from segviz.annotate.io import export_csv, export_jsonl, import_csv, import_file, import_jsonl
from segviz.annotate.store import (
    FLAG_NAMES,
    UNSET,
    AnnotationError,
    Store,
    StoreBusyError,
    default_url,
    display_url,
    user_data_dir,
    validate_annotator,
)

__all__ = [
    "AnnotationError",
    "StoreBusyError",
    "Store",
    "default_url",
    "display_url",
    "user_data_dir",
    "validate_annotator",
    "FLAG_NAMES",
    "UNSET",
    "Input",
    "Output",
    "AutoCheck",
    "create_campaign",
    "sample_inputs",
    "items_for",
    "next_item",
    "progress",
    "is_done",
    "parse_uploaded_outputs",
    "RESULT_COLUMNS",
    "results_table",
    "agreement",
    "krippendorff_alpha",
    "cohen_kappa",
    "majority",
    "majority_count",
    "export_csv",
    "export_jsonl",
    "import_csv",
    "import_jsonl",
    "import_file",
]
