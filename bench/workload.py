"""The URL workload the side benchmarks (cluster.py, replicas.py) seed: ~95-char URLs over
1,000 hosts, written once to a temporary file for the Rust bench runner to read."""

import tempfile
from pathlib import Path


def write_urls(n: int) -> Path:
    """A file of `n` URLs, one per line, spread over 1,000 hosts."""
    path = Path(tempfile.mkdtemp()) / "urls.txt"
    path.write_text("".join(
        f"https://host{i % 1000}.example.com/articles/2026/11/{i}/a-page-title-of-some-length?ref=bench\n"
        for i in range(n)))
    return path
