"""``nvidia-smi -q -x`` XML logs: the same readings as the text ``-q`` form.

Figures are counted from the fixture with regexes, not with the code under test.
"""

from __future__ import annotations

import re
from pathlib import Path

from gputop_hints.sources.files import FORMATS
from gputop_hints.sources.files._datelines import parse_date
from tests.support.logs import read_log as load
from tests.support.paths import FIXTURES as FIXTURE_ROOT

MIB = 2**20
FIXTURE = FIXTURE_ROOT / "import" / "nvsmi_q_x.xml"




def _numbers(tag: str, text: str) -> list[float | None]:
    """Each ``<tag>N unit</tag>`` in file order; ``N/A`` / ``[N/A]`` -> None."""
    cells = re.findall(rf"<{tag}>([^<]*)</{tag}>", text)
    return [float(c.split()[0]) if c[:1].isdigit() else None for c in cells]


def test_nvidia_smi_q_x_documents_with_a_process_and_a_cut_one() -> None:
    text = FIXTURE.read_text()
    starts = [n for n, line in enumerate(text.splitlines(), start=1) if line.startswith("<?xml")]
    assert len(starts) == 3  # the third is cut mid-write: no </nvidia_smi_log>
    assert text.count("</nvidia_smi_log>") == 2
    whole = text[: text.rindex("</nvidia_smi_log>")]  # the two documents that parse
    snaps, info, counters = load(FIXTURE)
    assert info.format == "nvidia-smi-xml" and info.gpu_count == 2 and info.interval_s == 5
    assert len(snaps) == 2 and all(len(s.gpus) == 2 for s in snaps)
    gpus = [g for s in snaps for g in s.gpus]
    assert [g.sm_percent for g in gpus] == _numbers("gpu_util", whole)
    assert [g.memory_access_percent for g in gpus] == _numbers("memory_util", whole)
    used = _numbers("used", whole)
    assert [g.vram_used_bytes for g in gpus] == [None if u is None else u * MIB for u in used]
    assert [g.vram_total_bytes for g in gpus] == [81920 * MIB] * 4
    assert [g.temperature_c for g in gpus] == _numbers("gpu_temp", whole)
    # Instantaneous draw, else the average (as the text form): GPU 1's second one is N/A.
    instant = _numbers("instant_power_draw", whole)[::2]  # gpu_power_readings, not module_
    average = _numbers("average_power_draw", whole)[::2]
    drawn = [i if i is not None else a for i, a in zip(instant, average, strict=True)]
    assert [g.power_watts for g in gpus] == drawn
    assert None in instant and None not in [g.power_watts for g in gpus]
    assert [g.power_limit_watts for g in gpus] == _numbers("current_power_limit", whole)[::2]
    assert [g.sm_clock_mhz for g in gpus] == _numbers("sm_clock", whole)[0::2]
    assert [g.max_sm_clock_mhz for g in gpus] == _numbers("sm_clock", whole)[1::2]
    assert [g.pcie_generation for g in gpus] == _numbers("current_link_gen", whole)
    assert [g.pcie_width for g in gpus] == [16] * 4
    tx = _numbers("tx_util", whole)
    assert [g.pcie_tx_bytes_per_s for g in gpus] == [None if t is None else t * 1024 for t in tx]
    rx = _numbers("rx_util", whole)
    assert [g.pcie_rx_bytes_per_s for g in gpus] == [None if r is None else r * 1024 for r in rx]
    uuids = re.findall(r"<uuid>([^<]*)</uuid>", whole)
    assert [g.uuid for g in gpus] == uuids
    assert {g.name for g in gpus} == set(re.findall(r"<product_name>([^<]*)<", whole))
    idle, cap = ("gpu_idle",), ("sw_power_cap",)
    assert [g.throttle_reasons for g in gpus] == [(), idle, cap, idle]
    stamps = re.findall(r"<timestamp>([^<]*)</timestamp>", whole)
    assert [s.timestamp for s in snaps] == [parse_date(t) for t in stamps]
    assert {s.driver_version for s in snaps} == set(re.findall(r"<driver_version>([^<]*)<", whole))
    (pid,) = re.findall(r"<pid>(\d+)</pid>", text)
    (vram,) = _numbers("used_memory", text)
    assert vram is not None
    assert snaps[0].processes == ()
    assert [(p.pid, p.gpu_index, p.name, p.vram_bytes) for p in snaps[1].processes] == [
        (int(pid), 0, "python3", vram * MIB)
    ]
    # The cut document is one bad record, at the line of its <?xml.
    assert counters.bad_lines == 1 and counters.first_bad_line == starts[2]
    last = len(text.splitlines())  # cut in its last line, an unclosed tag
    assert f"does not parse (unclosed token at line {last})" in (counters.first_bad_reason or "")
    assert counters.found["perf_states"] == {"0": {"P0": 2}, "1": {"P0": 2}}


def test_xml_readings_equal_the_text_query_form(tmp_path: Path) -> None:
    """The same readings printed by ``nvidia-smi -q`` and ``-q -x`` give the same GPU."""
    query = tmp_path / "gpu.log"
    query.write_text(
        "\n==============NVSMI LOG==============\n\n"
        "Timestamp                                 : Tue Dec  3 14:02:11 2024\n"
        "Driver Version                            : 550.90.07\n"
        "Attached GPUs                             : 1\n"
        "GPU 00000000:17:00.0\n"
        "    Product Name                          : NVIDIA A100-SXM4-80GB\n"
        "    GPU UUID                              : GPU-1\n"
        "    FB Memory Usage\n"
        "        Total                             : 81920 MiB\n"
        "        Used                              : 30000 MiB\n"
        "    Utilization\n"
        "        Gpu                               : 45 %\n"
        "        Memory                            : 20 %\n"
        "    Temperature\n"
        "        GPU Current Temp                  : 55 C\n"
        "    GPU Power Readings\n"
        "        Instantaneous Power Draw          : N/A\n"
        "        Average Power Draw                : 250.12 W\n"
        "        Current Power Limit               : 400.00 W\n"
        "    Processes                             : None\n"
    )
    xml = tmp_path / "gpu.xml"
    xml.write_text(
        '<?xml version="1.0" ?>\n<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">\n'
        "<nvidia_smi_log>\n<timestamp>Tue Dec  3 14:02:11 2024</timestamp>\n"
        "<driver_version>550.90.07</driver_version>\n<attached_gpus>1</attached_gpus>\n"
        '<gpu id="00000000:17:00.0">\n<product_name>NVIDIA A100-SXM4-80GB</product_name>\n'
        "<uuid>GPU-1</uuid>\n<fb_memory_usage><total>81920 MiB</total><used>30000 MiB</used>"
        "</fb_memory_usage>\n<utilization><gpu_util>45 %</gpu_util><memory_util>20 %</memory_util>"
        "</utilization>\n<temperature><gpu_temp>55 C</gpu_temp></temperature>\n"
        "<gpu_power_readings><instant_power_draw>[N/A]</instant_power_draw>"
        "<average_power_draw>250.12 W</average_power_draw>"
        "<current_power_limit>400.00 W</current_power_limit></gpu_power_readings>\n"
        "<processes>\n</processes>\n</gpu>\n</nvidia_smi_log>\n"
    )
    (a,), info_a, bad_a = load(query)
    (b,), info_b, bad_b = load(xml)
    assert (info_a.format, info_b.format) == ("nvidia-smi-query", "nvidia-smi-xml")
    assert bad_a.bad_lines == bad_b.bad_lines == 0
    assert a.gpus == b.gpus and a.processes == b.processes
    assert (a.timestamp, a.driver_version) == (b.timestamp, b.driver_version)


def test_an_xml_document_with_too_few_gpus_or_a_bad_cell(tmp_path: Path) -> None:
    path = tmp_path / "gpu.xml"
    head = '<?xml version="1.0" ?>\n<nvidia_smi_log>\n<attached_gpus>2</attached_gpus>\n'
    one_gpu = '<gpu id="0"><utilization><gpu_util>5 %</gpu_util></utilization></gpu>\n'
    path.write_text(
        head + one_gpu + one_gpu + "</nvidia_smi_log>\n"  # whole: read
        + head + one_gpu + "</nvidia_smi_log>\n"  # 1 of 2 GPUs: cut short
        + head + '<gpu id="0"><utilization><gpu_util>banana</gpu_util></utilization></gpu>\n'
        + one_gpu + "</nvidia_smi_log>\n"  # a bad cell: counted, the rest read
    )
    snaps, info, counters = load(path)
    assert info.format == "nvidia-smi-xml" and "nvidia-smi-xml" in FORMATS
    assert [[g.sm_percent for g in s.gpus] for s in snaps] == [[5, 5], [None, 5]]
    assert counters.bad_lines == 2 and counters.first_bad_line == 7  # the second <?xml
    assert "cut short (1 GPU" in (counters.first_bad_reason or "")
