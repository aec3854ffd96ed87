"""What the binary itself costs every thread and every machine it runs on."""
import subprocess

from testing.seedance_process import BIN


def program_headers():
    return subprocess.run(["readelf", "-lW", BIN], capture_output=True, text=True,
                          check=True).stdout


def test_thread_local_storage_stays_small():
    # Each thread's static TLS block is zeroed when the thread starts, so it is resident in
    # every thread, idle or not (a 64 KiB thread_local buffer once cost 64 KiB per thread).
    tls = [l.split() for l in program_headers().splitlines() if l.split()[:1] == ["TLS"]]
    assert len(tls) == 1, tls
    mem_size = int(tls[0][5], 16)  # TLS Offset VirtAddr PhysAddr FileSiz MemSiz Flg Align
    assert mem_size <= 4096, f"static TLS block of {mem_size} bytes per thread"


def test_needs_only_glibc():
    dynamic = subprocess.run(["readelf", "-dW", BIN], capture_output=True, text=True,
                             check=True).stdout
    needed = {l.split("[")[1].rstrip("]") for l in dynamic.splitlines() if "(NEEDED)" in l}
    if any(n.startswith(("libasan", "libubsan")) for n in needed):
        # The sanitizer build links its runtimes; the shipped build must not need them.
        needed -= {n for n in needed if n.startswith(("libasan", "libubsan"))}
    # The dynamic loader is glibc's own (named when the binary calls into it, e.g. for TLS).
    needed -= {n for n in needed if n.startswith("ld-linux")}
    assert needed <= {"libc.so.6", "libm.so.6"}, needed
