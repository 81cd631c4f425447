"""Every log format is complete: a fixture, a docs section, a sniff test, a bad-input test.

A format is one reader module ending in ``SPEC`` (gputop_hints/sources/files/),
listed in :data:`~gputop_hints.sources.files.registry.ALL_FORMATS`. What it
takes to add one is in docs/import.md, "Adding a format"; these tests fail,
naming the format and what it lacks, when any of it is missing.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from gputop_hints.sources.files import FORMATS, open_stream
from gputop_hints.sources.files.registry import ALL_FORMATS, LABELS, PROCESS_FORMATS
from gputop_hints.sources.files.spec import FormatSpec
from gputop_hints.streams import ALL_METRICS, METRIC_MEMORY_ACCESS, METRIC_PROCESSES, METRIC_SM
from tests.support.paths import FIXTURES, REPO

SPECS = pytest.mark.parametrize("spec", ALL_FORMATS, ids=lambda spec: spec.id)

IMPORT_FIXTURES = FIXTURES / "import"
FIXTURE_OF = {
    "recording": "recording_header_only.jsonl",
    "wandb": "wandb_new_keys.jsonl",
    "wandb-run": "run-g7x2k9qa.wandb",
    "mlflow": "mlruns/0/5f1c0e2a9b8d4c7e8a6b3d2f1e0c9b8a",
    "nvidia-smi-dmon": "dmon_pucvmet.log",
    "nvidia-smi-table": "nvsmi_table_nodates.log",
    "nvidia-smi-watch": "nvsmi_watch.log",
    "nvitop": "nvitop_once.log",
    "nvidia-smi-query": "nvsmi_q_two_dumps.log",
    "nvidia-smi-xml": "nvsmi_q_x.xml",
    "nvidia-smi-pmon": "pmon_dt.log",
    "nvidia-smi-apps": "merge_apps.csv",
    "dcgmi-dmon": "dcgmi_dmon.log",
    "dcgm-exporter": "dcgm_exporter_scrapes.log",
    "gpustat": "gpustat.jsonl",
    "jsonl": "script_flat.jsonl",
    "nvidia-smi-csv": "nvsmi_full_2gpu.csv",
    "csv": "generic_quoted.csv",
    "gputil": "gputil_blocks.log",
    "aligned-table": "aligned_banner_units.log",
    "kv-lines": "kv_logging_2gpu.log",
}
"""Format id -> its fixture under tests/fixtures/import/ (detected as that format; a
folder for a format kept as one, an MLflow run)."""

DOCS = (REPO / "docs" / "import.md").read_text(encoding="utf-8")
SECTIONS = set(re.findall(r"^### (.+?)\s*$", DOCS, flags=re.MULTILINE))
DETECTION_TABLE = re.findall(
    r"^\| `([a-z][a-z0-9-]*)` \|",
    DOCS.split("\n## Formats, in detection order\n", 1)[-1].strip().split("\n\n", 1)[0],
    flags=re.MULTILINE,
)
"""The ``--format`` column of docs/import.md's "Formats, in detection order" table."""

BAD_INPUT_MARKERS = (
    "bad_lines",
    "bad_cells",
    "first_bad_line",
    "first_bad_reason",
    "UnrecognisedFormat",
)


def _test_functions() -> list[tuple[str, str]]:
    """(file:name, source) of every test function under tests/, but this file's."""
    out: list[tuple[str, str]] = []
    for path in sorted((REPO / "tests").rglob("test_*.py")):
        if path == Path(__file__).resolve():
            continue
        text = path.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                segment = ast.get_source_segment(text, node) or ""
                out.append((f"{path.relative_to(REPO)}::{node.name}", segment))
    return out


TESTS = _test_functions()


def _names(spec: FormatSpec) -> tuple[str, ...]:
    """How a test names the format: its id as a string, or its fixture's file name."""
    fixture = FIXTURE_OF.get(spec.id)
    return (f'"{spec.id}"',) + ((fixture,) if fixture else ())


def sniff_tests(spec: FormatSpec) -> list[str]:
    """Tests asserting that a file is detected as ``spec`` (``.format == "<id>"``)."""
    detected = re.compile(rf"""(\.format|\["format"\])\s*==\s*"{re.escape(spec.id)}\"""")
    return [name for name, src in TESTS if detected.search(src)]


def bad_input_tests(spec: FormatSpec) -> list[str]:
    """Tests that name the format and check what becomes of malformed input."""
    return [
        name
        for name, src in TESTS
        if any(n in src for n in _names(spec)) and any(m in src for m in BAD_INPUT_MARKERS)
    ]


def test_format_ids_are_unique_and_formats_follow_the_registry() -> None:
    ids = [spec.id for spec in ALL_FORMATS]
    assert len(set(ids)) == len(ids)
    assert list(FORMATS) == ids
    assert {spec.id: spec.label for spec in ALL_FORMATS} == LABELS


def test_docs_detection_table_lists_the_formats_in_detection_order() -> None:
    absent = [f for f in FORMATS if f not in DETECTION_TABLE]
    extra = [f for f in DETECTION_TABLE if f not in FORMATS]
    assert not absent and not extra, (
        f"docs/import.md's detection-order table lacks {absent}, has unknown {extra}"
    )
    assert list(FORMATS) == DETECTION_TABLE, (
        "docs/import.md's detection-order table is not in ALL_FORMATS' order"
    )


@SPECS
def test_format_has_a_fixture_detected_as_itself(spec: FormatSpec) -> None:
    name = FIXTURE_OF.get(spec.id)
    assert name, (
        f"{spec.id}: no fixture: add one under tests/fixtures/import/ and name it in "
        "FIXTURE_OF (tests/sources/files/test_format_specs.py)"
    )
    path = IMPORT_FIXTURES / name
    assert path.is_file() or (spec.sniff_folder is not None and path.is_dir()), (
        f"{spec.id}: fixture {path} does not exist"
    )
    stream = open_stream(path)
    try:
        assert stream.info.format == spec.id, (
            f"{spec.id}: {name} is detected as {stream.info.format}"
        )
        carried = set(ALL_METRICS) - set(stream.info.missing)
        assert carried <= spec.metrics, (
            f"{spec.id}: {name} carries {sorted(carried - spec.metrics)}, not in SPEC.metrics"
        )
    finally:
        stream.close()


@SPECS
def test_format_has_a_section_in_docs_import(spec: FormatSpec) -> None:
    assert spec.docs in SECTIONS, (
        f"{spec.id}: docs/import.md has no '### {spec.docs}' section (SPEC.docs)"
    )
    assert spec.id in DETECTION_TABLE, (
        f"{spec.id}: no '| `{spec.id}` |' row in docs/import.md's detection-order table"
    )


@SPECS
def test_format_has_a_sniff_test(spec: FormatSpec) -> None:
    assert sniff_tests(spec), (
        f"{spec.id}: no test under tests/ asserts a file is detected as it "
        f'(`.format == "{spec.id}"`)'
    )


@SPECS
def test_format_has_a_bad_input_test(spec: FormatSpec) -> None:
    assert bad_input_tests(spec), (
        f'{spec.id}: no test under tests/ names it ("{spec.id}" or its fixture) and checks '
        f"malformed input (one of {', '.join(BAD_INPUT_MARKERS)})"
    )


@SPECS
def test_format_metrics_and_per_process_agree(spec: FormatSpec) -> None:
    assert spec.metrics, f"{spec.id}: SPEC.metrics is empty"
    assert spec.label, f"{spec.id}: SPEC.label is empty"
    if spec.per_process:
        # Processes, and at most the GPU figures a GPU's only process gives (pmon).
        derivable = {METRIC_PROCESSES, METRIC_SM, METRIC_MEMORY_ACCESS}
        assert METRIC_PROCESSES in spec.metrics and spec.metrics <= derivable, (
            f"{spec.id}: a per-process log carries processes (and SM/memory % of a GPU's "
            f"only process), not {sorted(spec.metrics)}"
        )
    assert (spec.id in PROCESS_FORMATS) == spec.per_process
