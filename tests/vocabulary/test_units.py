from assay.units import format_value, from_display, human_bytes, metric_info, to_display


def test_mb_means_1e6_and_mib_2_20():
    assert from_display(1.0, "MB/s") == 1e6
    assert from_display(1.0, "MiB/s") == 2**20
    assert to_display(12.5e9, "Gb/s") == 100.0  # 12.5 GB/s is 100 Gb/s
    assert to_display(2.35e-6, "us") == 2.35


def test_metric_table_and_family_defaults():
    assert metric_info("p2p.latency").better == "lower"
    assert metric_info("memory.triad").unit == "B/s"
    assert metric_info("coll.allreduce").unit == "s"
    assert metric_info("no.such").unit == "1"


def test_formatting():
    assert human_bytes(8192) == "8 KiB"
    assert human_bytes(4194304) == "4 MiB"
    assert human_bytes(1000) == "1000 B"
    assert format_value(12061.33e6, "MB/s") == "12061.33"
    assert format_value(2.4e-9, "us") == "0.0024"


def test_suffix_defaults_give_unit_and_direction():
    assert metric_info("p2p.pingping.latency").better == "lower"
    assert metric_info("gpu.nccl.allreduce.busbw").unit == "B/s"
    assert metric_info("gpu.nccl.allreduce.time").better == "lower"
    assert metric_info("p2p.message_rate").unit == "op/s"
