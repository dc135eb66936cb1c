"""What of the host made a pip install fail (issue 42 item 4): an index that does not answer, a full
disk. Such a failure is the environment's, not judged; any other is a verdict on what was installed.
Read from pip's (or uv's) output by the venv step and the CUDA root's install alike."""
from __future__ import annotations

import re


#: What pip and uv say when the index cannot be reached (the network, a proxy, DNS, TLS): the
#: host's fault, not the wheel's (issue 42, item 4). Each is matched in this command's own output.
_UNREACHABLE = re.compile(r"Failed to establish a new connection|NewConnectionError|Connection refused"
                          r"|Temporary failure in name resolution|Name or service not known|Network is unreachable"
                          r"|ConnectTimeoutError|Read timed out|ProxyError|SSLError|CERTIFICATE_VERIFY_FAILED"
                          r"|error sending request|dns error|tcp connect error|Failed to fetch")
_NO_SPACE = re.compile(r"No space left on device|Disk quota exceeded")
#: a download that broke off (pip 25's incomplete-download: seen with TMPDIR on a full tmpfs, and on
#: a dropped connection): the host's, never the requirements' fault
_BROKEN_DOWNLOAD = re.compile(r"incomplete-download|not enough bytes were received|IncompleteRead"
                              r"|Connection broken")


def environment_fault(output: str) -> str | None:
    """What of the host made an install fail, in words, or None when its output names nothing
    of the host (then the wheel or its requirements are at fault: a verdict about the wheel)."""
    if _NO_SPACE.search(output):
        return "the disk is full (No space left on device)"
    m = _BROKEN_DOWNLOAD.search(output)
    if m:
        return f"a download from the package index broke off ({m.group(0)}; a full TMPDIR or the network)"
    m = _UNREACHABLE.search(output)
    if m:
        urls = re.findall(r"(?:Looking in indexes|Looking in links): (\S+)", output)
        where = f" {urls[0]}" if urls else ""
        return f"pip could not reach the package index{where} ({m.group(0)})"
    return None
