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

__all__ = ["WebNLGEntry", "WebNLGError", "read_webnlg", "webnlg_files"]

log = logging.getLogger(__name__)


class WebNLGError(ValueError):
    """A file that is not well-formed WebNLG XML; the message names the file and the line."""


@dataclass
class WebNLGEntry:
    """One triple set with its reference texts."""

    category: str
    eid: str  # unique only within one file
    size: int  # number of triples (k)
    triples: list[str] = field(default_factory=list)  # modified triples "s | p | o"
    lexs: list[str] = field(default_factory=list)  # every <lex> text, in file order
    file: str = ""  # the XML file it was read from
    line: int = 0  # line of its <entry> tag in that file (0: unknown)

    @property
    def where(self) -> str:
        """``FILE, line N (entry eid)`` for messages."""
        return f"{self.file}, line {self.line} (entry {self.eid})" if self.line else f"{self.file} (entry {self.eid})"


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
        data = f.read_bytes()
        try:
            root = ET.fromstring(data)
        except ET.ParseError as e:
            raise WebNLGError(f"{f}: not a well-formed WebNLG XML file ({e})") from None
        found = list(root.iter("entry"))
        lines = [data.count(b"\n", 0, m.start()) + 1 for m in re.finditer(rb"<entry\b", data)]
        if len(lines) != len(found):  # e.g. "<entry" inside a comment: lines unknown
            lines = [0] * len(found)
        for e, line in zip(found, lines, strict=True):
            triples = [" ".join((t.text or "").split()) for t in e.iter("mtriple")]
            lexs = [" ".join((lex.text or "").split()) for lex in e.iter("lex")]
            size = e.get("size") or ""
            size = int(size) if size.isdigit() else len(triples)
            entries.append(WebNLGEntry(e.get("category", ""), e.get("eid", ""), size, triples, lexs, str(f), line))
    log.info("read %d WebNLG entries from %s", len(entries), path)
    return entries
