"""A checkpoint as one tar file with float16 weights, and back (docs/design.md "Checkpoints").

For moving a checkpoint through a narrow channel (the lent GPU's file return: a few files of at
most 16 MiB): ``model.safetensors`` travels as float16 (half the bytes), the JSON files as they
are; unpacking writes float32 weights again, so the result loads like any checkpoint. Only the
known member names are read, never a path from the archive, and nothing is unpickled.

    python -m segviz.pack DIR OUT.tar            # pack (the resume state in DIR/last is left out)
    python -m segviz.pack --unpack OUT.tar DIR   # unpack into a new DIR
"""

from __future__ import annotations

import argparse
import io
import sys
import tarfile
from pathlib import Path

from safetensors.torch import load, load_file, save, save_file

JSON_FILES = ("config.json", "vocab.json", "history.json", "lexicon.json", "metrics.json")
WEIGHTS_F16 = "model.f16.safetensors"


def pack(ckpt_dir: Path, tar_path: Path) -> None:
    """``ckpt_dir`` -> ``tar_path``: its JSON files and its weights in float16."""
    half = {k: v.half() if v.is_floating_point() else v for k, v in load_file(str(ckpt_dir / "model.safetensors")).items()}
    with tarfile.open(tar_path, "w") as tar:
        _add(tar, WEIGHTS_F16, save(half))
        for name in JSON_FILES:
            if (ckpt_dir / name).exists():
                _add(tar, name, (ckpt_dir / name).read_bytes())


def unpack(tar_path: Path, ckpt_dir: Path) -> None:
    """``tar_path`` -> a new ``ckpt_dir`` with float32 ``model.safetensors``."""
    if ckpt_dir.exists():
        raise FileExistsError(f"{ckpt_dir} exists; unpack into a new folder")
    with tarfile.open(tar_path) as tar:
        members = {m.name: m for m in tar.getmembers() if m.isfile()}
        if WEIGHTS_F16 not in members or "config.json" not in members:
            raise ValueError(f"{tar_path}: not a packed checkpoint (no {WEIGHTS_F16} or config.json)")
        ckpt_dir.mkdir(parents=True)
        weights = load(tar.extractfile(members[WEIGHTS_F16]).read())
        save_file({k: v.float() if v.is_floating_point() else v for k, v in weights.items()}, str(ckpt_dir / "model.safetensors"))
        for name in JSON_FILES:
            if name in members:
                (ckpt_dir / name).write_bytes(tar.extractfile(members[name]).read())


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m segviz.pack", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--unpack", action="store_true", help="SRC is a tar, DST a new checkpoint folder")
    p.add_argument("src", type=Path)
    p.add_argument("dst", type=Path)
    a = p.parse_args(argv)
    try:
        unpack(a.src, a.dst) if a.unpack else pack(a.src, a.dst)
    except (OSError, ValueError, tarfile.TarError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
