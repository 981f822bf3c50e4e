"""Human evaluation as an annotation campaign (paper §5 "Metrics", Tables 2 and 3).

No Streamlit here: the Annotate and Results pages call these functions.

- :mod:`~segviz.annotate.store`: :class:`Store` (SQLite by default) over the SQLAlchemy models and
  validation of :mod:`~segviz.annotate.schema`.
- :mod:`~segviz.annotate.campaign`: sampling (20 inputs per K), blinded per-annotator shuffles,
  resume, uploaded system outputs.
- :mod:`~segviz.annotate.agreement`: the paper's table per system, Krippendorff's alpha,
  checker-vs-human agreement.
- :mod:`~segviz.annotate.io`: CSV / JSONL export and import.
"""

from segviz.annotate import agreement as _agreement
from segviz.annotate import campaign as _campaign
from segviz.annotate import io as _io
from segviz.annotate import store as _store
from segviz.annotate.agreement import *  # noqa: F403
from segviz.annotate.campaign import *  # noqa: F403
from segviz.annotate.io import *  # noqa: F403
from segviz.annotate.store import *  # noqa: F403

# the public names of each module, as its own __all__ lists them
__all__ = [*_store.__all__, *_campaign.__all__, *_agreement.__all__, *_io.__all__]
