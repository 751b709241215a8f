"""A workload folder written for a test: its kernel, workload.yaml and reference.py."""

from pathlib import Path


def write_workload(tmp_path: Path, name: str, sasm: str, yaml: str, reference: str) -> str:
    """`tmp_path`/`name` holding `name`.sasm, workload.yaml (`kernel:` line added) and reference.py;
    returns the folder's path, as `load_workload` takes it."""
    folder = tmp_path / name
    folder.mkdir()
    (folder / f"{name}.sasm").write_text(sasm)
    (folder / "workload.yaml").write_text(f"kernel: {name}.sasm\n{yaml}")
    (folder / "reference.py").write_text(reference)
    return str(folder)
