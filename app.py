"""segviz: the Streamlit app's entry point (``streamlit run app.py``, or ``bash scripts/app.sh``).

It only names the pages (``st.navigation``), so that the first one is called "Playground" in
the sidebar and every page keeps its deep link (``/Plan_editor?records=…``,
``/Annotate?annotator=…``). Each page is a thin script in ``pages/`` (docs/design.md §4).
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

PAGES = Path(__file__).resolve().parent / "pages"

st.navigation([
    st.Page(PAGES / "0_Playground.py", title="Playground", default=True),
    st.Page(PAGES / "1_Plan_editor.py", title="Plan editor", url_path="Plan_editor"),
    st.Page(PAGES / "2_Hallucination_inspector.py", title="Hallucination inspector", url_path="Hallucination_inspector"),
    st.Page(PAGES / "3_Results.py", title="Results", url_path="Results"),
    st.Page(PAGES / "4_Annotate.py", title="Annotate", url_path="Annotate"),
]).run()
