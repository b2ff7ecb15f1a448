"""KFD topology in sysfs -> GPU devices, on fake sysfs trees shaped like the kernel's."""

from __future__ import annotations

from pathlib import Path

import pytest
from miopenkernels.detect.device import SourceUnavailable
from miopenkernels.detect.kfd import arch_from_gfx_target_version, read_kfd_topology
from miopenkernels.errors import DetectError

# Node properties as amdkfd prints them (`<key> <value>`, one per line), trimmed of nothing but
# the values that identify the machine.
CPU_NODE = {
    "cpu_cores_count": 16, "simd_count": 0, "mem_banks_count": 1, "caches_count": 0,
    "io_links_count": 1, "p2p_links_count": 0, "cpu_core_id_base": 0, "simd_id_base": 0,
    "max_waves_per_simd": 0, "lds_size_in_kb": 0, "gds_size_in_kb": 0, "num_gws": 0,
    "wave_front_size": 0, "array_count": 0, "simd_arrays_per_engine": 0,
    "cu_per_simd_array": 0, "simd_per_cu": 0, "max_slots_scratch_cu": 0,
    "gfx_target_version": 0, "vendor_id": 0, "device_id": 0, "location_id": 0, "domain": 0,
    "drm_render_minor": 0, "hive_id": 0, "num_sdma_engines": 0, "num_sdma_xgmi_engines": 0,
    "num_sdma_queues_per_engine": 0, "num_cp_queues": 0, "max_engine_clk_ccompute": 3400,
}
RX6900XT_NODE = {
    "cpu_cores_count": 0, "simd_count": 160, "mem_banks_count": 1, "caches_count": 102,
    "io_links_count": 1, "p2p_links_count": 0, "cpu_core_id_base": 0,
    "simd_id_base": 2147487744, "max_waves_per_simd": 16, "lds_size_in_kb": 64,
    "gds_size_in_kb": 0, "num_gws": 64, "wave_front_size": 32, "array_count": 8,
    "simd_arrays_per_engine": 2, "cu_per_simd_array": 10, "simd_per_cu": 2,
    "max_slots_scratch_cu": 32, "gfx_target_version": 100300, "vendor_id": 4098,
    "device_id": 29631, "location_id": 3072, "domain": 0, "drm_render_minor": 128,
    "hive_id": 0, "num_sdma_engines": 4, "num_sdma_xgmi_engines": 0,
    "num_sdma_queues_per_engine": 8, "num_cp_queues": 8, "max_engine_clk_fcompute": 2660,
    "local_mem_size": 0, "fw_version": 104, "capability": 671588992, "debug_prop": 1495,
    "sdma_fw_version": 81, "unique_id": 3705834620473136479, "num_xcc": 1,
    "max_engine_clk_ccompute": 3400,
}
SRAMECC_CAP = 0x04000000
MI250X_GCD_NODE = {
    **RX6900XT_NODE,
    "simd_count": 440, "simd_per_cu": 4, "max_waves_per_simd": 8, "wave_front_size": 64,
    "array_count": 8, "simd_arrays_per_engine": 1, "cu_per_simd_array": 14,
    "gfx_target_version": 90010, "device_id": 29704, "location_id": 49408,
    "drm_render_minor": 136, "hive_id": 17044011414524516361, "num_sdma_xgmi_engines": 3,
    "max_engine_clk_fcompute": 1700, "capability": 0x2B8B2280 | SRAMECC_CAP,
}


def make_node(root: Path, number: int, props: dict[str, int], name: str = "") -> Path:
    """One `nodes/<n>` directory of a fake sysfs tree rooted at `root` (the sysfs root)."""
    node = root / "class" / "kfd" / "kfd" / "topology" / "nodes" / str(number)
    (node / "io_links" / "0").mkdir(parents=True)
    (node / "mem_banks" / "0").mkdir(parents=True)
    (node / "properties").write_text("".join(f"{k} {v}\n" for k, v in props.items()))
    (node / "name").write_text(name + "\n")
    (node / "gpu_id").write_text(("0" if props["simd_count"] == 0 else str(40000 + number))
                                 + "\n")
    topo = node.parent.parent
    (topo / "generation_id").write_text("1\n")
    (topo / "system_properties").write_text("platform_oem 0\nplatform_id 0\nplatform_rev 0\n")
    return node


@pytest.mark.parametrize(
    ("version", "arch"),
    [(90010, "gfx90a"), (100300, "gfx1030"), (90402, "gfx942"), (110000, "gfx1100"),
     (120001, "gfx1201"), (90012, "gfx90c"), (90008, "gfx908"), (90006, "gfx906"),
     (90000, "gfx900"), (90500, "gfx950"), (110501, "gfx1151")],
)
def test_gfx_target_version_decodes_to_the_arch(version, arch):
    assert arch_from_gfx_target_version(version) == arch


def test_gfx_target_version_with_an_impossible_stepping_is_rejected():
    with pytest.raises(DetectError, match="90099"):
        arch_from_gfx_target_version(90099)


def test_cpu_node_is_skipped_and_rdna_gpu_halves_its_cus(tmp_path):
    make_node(tmp_path, 0, CPU_NODE)
    make_node(tmp_path, 1, RX6900XT_NODE, "navi21")
    (dev,) = read_kfd_topology(tmp_path)
    assert (dev.vendor, dev.name, dev.arch, dev.target_id) == ("amd", "navi21", "gfx1030",
                                                               "gfx1030")
    assert (dev.rocminfo_cu, dev.cu, dev.index) == (80, 40, 0)
    assert dev.target.basename == "gfx1030_40"


def test_two_mi250x_gcds_and_a_radeon_in_node_order(tmp_path):
    make_node(tmp_path, 0, CPU_NODE)
    make_node(tmp_path, 1, CPU_NODE)
    # Node 10 sorts after node 2 numerically, not as text.
    make_node(tmp_path, 10, RX6900XT_NODE, "navi21")
    make_node(tmp_path, 2, MI250X_GCD_NODE, "aldebaran")
    make_node(tmp_path, 3, MI250X_GCD_NODE, "aldebaran")
    devices = read_kfd_topology(tmp_path)
    assert [(d.index, d.arch, d.target_id, d.cu, d.target.basename) for d in devices] == [
        (0, "gfx90a", "gfx90a:sramecc+", 110, "gfx90a6e"),
        (1, "gfx90a", "gfx90a:sramecc+", 110, "gfx90a6e"),
        (2, "gfx1030", "gfx1030", 40, "gfx1030_40"),
    ]


def test_sramecc_off_shows_in_the_target_id(tmp_path):
    make_node(tmp_path, 1, {**MI250X_GCD_NODE, "capability": 0x2B8B2280}, "aldebaran")
    (dev,) = read_kfd_topology(tmp_path)
    assert dev.target_id == "gfx90a:sramecc-"
    assert dev.target.package == "miopenkernels-gfx90a-110"


def test_gpu_node_without_a_name_gets_one_from_its_arch(tmp_path):
    make_node(tmp_path, 1, {**MI250X_GCD_NODE, "gfx_target_version": 90402, "simd_count": 1216},
              "")
    (dev,) = read_kfd_topology(tmp_path)
    assert (dev.name, dev.arch, dev.cu, dev.target.basename) == ("AMD GPU gfx942", "gfx942",
                                                                 304, "gfx942130")


def test_no_topology_means_source_unavailable(tmp_path):
    with pytest.raises(SourceUnavailable, match="not present"):
        read_kfd_topology(tmp_path)


def test_only_cpu_nodes_give_no_device(tmp_path):
    make_node(tmp_path, 0, CPU_NODE)
    assert read_kfd_topology(tmp_path) == []


def test_gpu_node_without_gfx_target_version_is_a_detect_error(tmp_path):
    props = {k: v for k, v in RX6900XT_NODE.items() if k != "gfx_target_version"}
    make_node(tmp_path, 1, props)
    with pytest.raises(DetectError, match="gfx_target_version"):
        read_kfd_topology(tmp_path)


def test_malformed_properties_line_is_a_detect_error(tmp_path):
    node = make_node(tmp_path, 1, RX6900XT_NODE)
    with (node / "properties").open("a") as f:
        f.write("simd_count lots\n")
    with pytest.raises(DetectError, match=r"properties:\d+: simd_count must be an integer"):
        read_kfd_topology(tmp_path)
