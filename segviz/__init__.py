"""segviz: segmentation-and-correspondence data-to-text generation (Shen et al., ACL 2020).

The package imports without Streamlit; only :mod:`segviz.ui` touches it.
"""

__version__ = "0.1.0"
