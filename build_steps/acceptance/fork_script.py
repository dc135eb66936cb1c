"""The fork's ``tools/run_wheel_full_test.sh`` read again: its ``run_shard`` calls, and each way
the shard data file (build_steps.acceptance.suite) disagrees with them, so a selftest can tell
when the script moved on and the data file was not copied over."""
from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass

from .suite import ShardSuite

#: Lane headings of the fork's script ("# ----- DNNL / oneDNN lane ...") -> lane names.
_LANE_WORDS = {"cpu": "cpu", "dnnl": "dnnl", "quantization": "quant", "onnx": "onnx", "gpu": "gpu"}


@dataclass
class ScriptShard:
    id: str
    description: str
    lane: str
    args: list[str]
    only_if_exists: str | None = None
    in_gpu_block: bool = False


def _logical_lines(text: str) -> Iterator[str]:
    buf = ""
    for line in text.splitlines():
        if line.rstrip().endswith("\\"):
            buf += line.rstrip()[:-1] + " "
            continue
        yield buf + line
        buf = ""
    if buf:
        yield buf


def parse_fork_script(text: str) -> list[ScriptShard]:
    """Every ``run_shard <id> <description> -- <args>`` call of run_wheel_full_test.sh, with its
    lane heading, the ``if [ -f/-d path ]`` around it and whether it sits in the GPU block."""
    out: list[ScriptShard] = []
    lane: str | None = None
    #: the open ``if`` blocks, innermost last: the path an ``if [ -f/-d ]`` tests, None for the GPU block
    conds: list[str | None] = []
    in_gpu = False
    for line in _logical_lines(text):
        s = line.strip()
        m = re.match(r"#\s*-{3,}\s*(\w+)", s)
        if m and "lane" in s.lower():
            lane = _LANE_WORDS.get(m.group(1).lower(), m.group(1).lower())
            continue
        if s.startswith("#") or not s:
            continue
        m = re.match(r"if \[ -[fd] (\S+) \]; then$", s)
        if m:
            conds.append(m.group(1))
            continue
        if re.match(r'if \[ "\$\{WHEEL_NUM_GPUS', s):
            conds.append(None)
            in_gpu = True
            continue
        if s == "fi" and conds:
            if conds.pop() is None:
                in_gpu = False
            continue
        if s.startswith("run_shard ") and "()" not in s:
            words = shlex.split(s)
            if "--" not in words:
                continue
            dash = words.index("--")
            shard_id, desc = words[1], " ".join(words[2:dash])
            cond = next((c for c in reversed(conds) if c), None)
            out.append(ScriptShard(shard_id, desc, lane or "?", words[dash + 1:], cond, in_gpu))
    return out


def data_script_differences(suite: ShardSuite, script_shards: list[ScriptShard]) -> list[str]:
    """Each way the data file and the fork's script disagree, in words (empty when they agree)."""
    data = suite.by_id()
    script = {s.id: s for s in script_shards}
    # named with its folder: the default is build_steps/acceptance/shards.toml
    data_file = f"{suite.source.parent.name}/{suite.source.name}"
    diffs = []
    for sid in script.keys() - data.keys():
        diffs.append(f"{sid}: in the fork's script, not in {data_file} (a shard was added: copy it over)")
    for sid in data.keys() - script.keys():
        diffs.append(f"{sid}: in {data_file}, not in the fork's script (a shard was removed or renamed)")
    env_name = {f"$PARALLEL_{k.upper()}": k for k in suite.parallel}
    for sid in sorted(data.keys() & script.keys()):
        d, s = data[sid], script[sid]
        args, workers = list(s.args), None
        if "-n" in args:
            i = args.index("-n")
            workers = env_name.get(args[i + 1], args[i + 1])
            del args[i:i + 2]
        if [*d.paths, *d.args] != args:
            diffs.append(f"{sid}: pytest args differ: data {[*d.paths, *d.args]} vs script {args}")
        if d.workers != workers:
            diffs.append(f"{sid}: -n differs: data workers={d.workers} vs script {workers}")
        if d.lane != s.lane:
            diffs.append(f"{sid}: lane differs: data {d.lane} vs script {s.lane}")
        if (d.lane == "gpu") != s.in_gpu_block:
            diffs.append(f"{sid}: the script {'does' if s.in_gpu_block else 'does not'} run it only when "
                         "the wheel sees a GPU; the data's lane says otherwise")
        if d.only_if_exists != s.only_if_exists:
            diffs.append(f"{sid}: condition differs: data only_if_exists={d.only_if_exists} vs script {s.only_if_exists}")
        if d.description != s.description:
            diffs.append(f"{sid}: description differs: data {d.description!r} vs script {s.description!r}")
    return sorted(diffs)
