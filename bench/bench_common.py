"""What every bench script prints beside its numbers."""
import platform


def cpu_name():
    """The CPU model (machines of one kind differ: AVX-512 on some, AVX2 only on others)."""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"
