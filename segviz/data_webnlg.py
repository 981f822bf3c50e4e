"""Read WebNLG 2017 challenge XML files (see ``shared/data/README.md``).

Entries come in *document order*: files sorted by (triple-set size k, file name), entries in
file order. System output files for WebNLG list one text per entry in this same order.
"""

from __future__ import annotations

import logging
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["WebNLGEntry", "read_webnlg", "webnlg_files"]

log = logging.getLogger(__name__)


@dataclass
class WebNLGEntry:
    """One triple set with its reference texts."""

    category: str
    eid: str  # unique only within one file
    size: int  # number of triples (k)
    triples: list[str] = field(default_factory=list)  # modified triples "s | p | o"
    lexs: list[str] = field(default_factory=list)  # every <lex> text, in file order


def _file_size_key(path: Path) -> tuple[int, str]:
    m = re.match(r"(\d+)triple", path.name)
    return (int(m.group(1)) if m else 0, path.name)


def webnlg_files(path: str | Path) -> list[Path]:
    """The XML files under ``path`` (or ``path`` itself) sorted by (size k, file name)."""
    path = Path(path)
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise FileNotFoundError(f"WebNLG path not found: {path}")
    files = sorted(path.rglob("*.xml"), key=_file_size_key)
    if not files:
        raise FileNotFoundError(f"no .xml files under {path}")
    return files


def read_webnlg(path: str | Path) -> list[WebNLGEntry]:
    """All entries of a WebNLG XML file or folder tree, in document order."""
    entries: list[WebNLGEntry] = []
    for f in webnlg_files(path):
        root = ET.parse(f).getroot()
        for e in root.iter("entry"):
            triples = [" ".join((t.text or "").split()) for t in e.iter("mtriple")]
            lexs = [" ".join((lex.text or "").split()) for lex in e.iter("lex")]
            size = int(e.get("size") or len(triples))
            entries.append(WebNLGEntry(e.get("category", ""), e.get("eid", ""), size, triples, lexs))
    log.info("read %d WebNLG entries from %s", len(entries), path)
    return entries
