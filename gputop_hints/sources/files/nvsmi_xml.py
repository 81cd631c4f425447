"""``nvidia-smi -q -x`` XML documents, one or many appended (``nvidia-smi -q -x -l 5``).

Each document starts with ``<?xml version="1.0" ?>`` and a ``<!DOCTYPE
nvidia_smi_log ...>`` line, then ``<nvidia_smi_log>`` with ``<timestamp>``,
``<driver_version>``, ``<attached_gpus>`` and one ``<gpu id="...">`` per GPU.
The readings are those of the text ``nvidia-smi -q`` (:mod:`.nvsmi_query`) under
other names: each element is mapped to the text form's key and section and
stored by that module's ``_value``, and the snapshots and the stream are that
module's, so a ``-q -x`` log gives what a ``-q`` log of the same readings gives.
A document that does not parse (a file cut mid-write) or that has fewer ``<gpu>``
elements than ``<attached_gpus>`` is a counted bad record; the rest is read.

``xml.etree`` is safe here: the DOCTYPE line is dropped before parsing and
nvidia-smi's documents have no entities of their own.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping
from pathlib import Path

from gputop_hints.sources.files import _datelines as dates
from gputop_hints.sources.files import _values as v
from gputop_hints.sources.files._base import ImportedStream
from gputop_hints.sources.files._incremental import drive
from gputop_hints.sources.files._text import Head
from gputop_hints.sources.files.nvsmi_query import (
    QueryDump,
    QueryPlan,
    _Gpu,
    _value,
    open_dumps,
)
from gputop_hints.sources.files.spec import FormatSpec
from gputop_hints.streams import ALL_METRICS, METRIC_HOST_CPU, METRIC_SUBSECOND

FORMAT = "nvidia-smi-xml"
LABEL = "nvidia-smi -q -x"
ROOT = "nvidia_smi_log"

_FIELDS: dict[tuple[str, ...], tuple[str, str]] = {
    # XML path under <gpu> -> (key, section) as the text -q form prints them.
    ("product_name",): ("product name", ""),
    ("uuid",): ("gpu uuid", ""),
    ("performance_state",): ("performance state", ""),
    ("fb_memory_usage", "total"): ("total", "fb memory usage"),
    ("fb_memory_usage", "used"): ("used", "fb memory usage"),
    ("utilization", "gpu_util"): ("gpu", "utilization"),
    ("utilization", "memory_util"): ("memory", "utilization"),
    ("pci", "pci_gpu_link_info", "pcie_gen", "current_link_gen"): ("current", "pcie generation"),
    ("pci", "pci_gpu_link_info", "link_widths", "current_link_width"): ("current", "link width"),
    ("pci", "tx_util"): ("tx throughput", "pci"),
    ("pci", "rx_util"): ("rx throughput", "pci"),
    ("temperature", "gpu_temp"): ("gpu current temp", "temperature"),
    ("clocks", "sm_clock"): ("sm", "clocks"),
    ("max_clocks", "sm_clock"): ("sm", "max clocks"),
}
_POWER = {
    "power_draw": "power draw",
    "instant_power_draw": "instantaneous power draw",
    "average_power_draw": "average power draw",
    "power_limit": "power limit",
    "current_power_limit": "current power limit",
    "enforced_power_limit": "enforced power limit",
}
_POWER_SECTIONS = {"gpu_power_readings": "gpu power readings", "power_readings": "power readings"}
_REASON_SECTIONS = {
    "clocks_event_reasons": ("clocks event reasons", "clocks_event_reason_"),
    "clocks_throttle_reasons": ("clocks throttle reasons", "clocks_throttle_reason_"),
}
_REASONS = {
    "gpu_idle": "idle",
    "applications_clocks_setting": "applications clocks setting",
    "sw_power_cap": "sw power cap",
    "hw_slowdown": "hw slowdown",
    "hw_thermal_slowdown": "hw thermal slowdown",
    "hw_power_brake_slowdown": "hw power brake slowdown",
    "sync_boost": "sync boost",
    "sw_thermal_slowdown": "sw thermal slowdown",
    "display_clocks_setting": "display clock setting",
}
_PROCESS = {"type": "type", "process_name": "name", "used_memory": "used gpu memory"}


def _text(element: ET.Element | None) -> str:
    return "" if element is None or element.text is None else element.text.strip()


def _gpu(element: ET.Element, on_bad: Callable[[int, str], None], line: int) -> _Gpu:
    gpu = _Gpu(done=element.find("processes") is not None)

    def store(key: str, section: str, raw: str, parent: str = "") -> None:
        try:
            _value(key, section, parent, raw, gpu)
        except v.CellError as exc:
            on_bad(line, str(exc))

    for path, (key, section) in _FIELDS.items():
        found = element.find("/".join(path))
        if found is not None:
            store(key, section, _text(found))
    for tag, section in _POWER_SECTIONS.items():
        for child in element.iterfind(f"{tag}/*"):
            if child.tag in _POWER:
                store(_POWER[child.tag], section, _text(child))
    for tag, (section, prefix) in _REASON_SECTIONS.items():
        for child in element.iterfind(f"{tag}/*"):
            reason = _REASONS.get(child.tag.removeprefix(prefix))
            if reason is not None:
                store(reason, section, _text(child))
    for info in element.iterfind("processes/process_info"):
        pid = _text(info.find("pid"))
        process: dict[str, object] = {"pid": int(pid) if pid.isdigit() else None}
        for tag, key in _PROCESS.items():
            process[key] = _text(info.find(tag))
        gpu.processes.append(process)
    return gpu


def _dump(root: ET.Element, line: int, on_bad: Callable[[int, str], None]) -> QueryDump:
    dump = QueryDump(line=line)
    stamp = _text(root.find("timestamp"))
    dump.timestamp = dates.parse_date(stamp) if stamp else None
    dump.driver = _text(root.find("driver_version")) or None
    attached = _text(root.find("attached_gpus"))
    dump.attached = int(attached) if attached.isdigit() else None
    dump.gpus = [_gpu(g, on_bad, line) for g in root.iterfind("gpu")]
    return dump


class XmlReader:
    """``nvidia-smi -q -x`` lines -> :class:`QueryDump`, one per ``<?xml`` document."""

    def __init__(self, on_bad: Callable[[int, str], None]) -> None:
        self.on_bad = on_bad
        self.start: int | None = None
        self.lines: list[str] = []

    def feed(self, number: int, line: str) -> QueryDump | None:
        if line.lstrip("\ufeff \t").startswith("<?xml"):
            done = self.finish()
            self.start, self.lines = number, [line.lstrip("\ufeff \t")]
            return done
        if self.start is not None:
            self.lines.append(line)
        return None

    def finish(self) -> QueryDump | None:
        start, lines = self.start, self.lines
        self.start, self.lines = None, []
        if start is None:
            return None
        # The DOCTYPE line is blanked, not dropped, so the parser's line numbers stay the file's.
        body = "\n".join("" if x.lstrip().startswith("<!DOCTYPE") else x for x in lines)
        try:
            root = ET.fromstring(body)
        except ET.ParseError as exc:
            where = start + exc.position[0] - 1
            why = str(exc).partition(":")[0]
            self.on_bad(start, f"nvidia-smi -q -x document does not parse ({why} at line {where})")
            return None
        if root.tag != ROOT:
            self.on_bad(start, f"<{root.tag}> document, not <{ROOT}>")
            return None
        dump = _dump(root, start, self.on_bad)
        if not dump.gpus or (dump.attached is not None and len(dump.gpus) < dump.attached):
            self.on_bad(start, f"nvidia-smi -q -x document cut short ({len(dump.gpus)} GPU(s))")
            return None
        return dump


def sniff(head: Head, mapping: Mapping[str, str] | None) -> QueryPlan | str:
    lines = head.nonblank
    if not lines or not lines[0].lstrip("\ufeff \t").startswith("<?xml"):
        return "the first line is not '<?xml'"
    if f"<{ROOT}" not in head.text:
        return f"no <{ROOT}> in the head"
    reader = XmlReader(lambda _n, _r: None)
    return QueryPlan(list(drive(reader, enumerate(head.lines, start=1))))


def open_xml(
    path: Path, plan: QueryPlan, interval_s: float | None, mapping: Mapping[str, str] | None
) -> ImportedStream:
    """The stream of snapshots of appended ``nvidia-smi -q -x`` documents."""
    return open_dumps(path, plan, interval_s, FORMAT, LABEL, XmlReader)


SPEC = FormatSpec(
    id=FORMAT,
    label=LABEL,
    sniff=sniff,
    open=open_xml,
    metrics=frozenset(ALL_METRICS) - {METRIC_HOST_CPU, METRIC_SUBSECOND},
    docs="nvidia-smi -q -x",
)
