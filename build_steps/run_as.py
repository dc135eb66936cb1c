"""Who a run's sandboxed steps run as, and so whose processes and files are a run's own.

As root the sandbox starts each step as an unprivileged uid (build_steps.sandbox, issue 41 item 1):
``nobody``/``nogroup`` (65534 where missing). The harness then finds, stops and removes what its
steps left under that uid as well as its own: a build's processes (build_steps.processes), the
run's private /tmp dirs (build_steps.supervise). As a user, steps run with the user's uid.
"""
from __future__ import annotations

import grp
import os
import pwd


def sandbox_ids() -> tuple[int, int]:
    """(uid, gid) a step runs as when the harness is root."""
    try:
        uid = pwd.getpwnam("nobody").pw_uid
    except KeyError:
        uid = 65534
    try:
        gid = grp.getgrnam("nogroup").gr_gid
    except KeyError:
        gid = 65534
    return uid, gid


def run_uids() -> frozenset[int]:
    """The uids of this run's processes and files: the harness's, and as root its steps'."""
    uids = {os.getuid()}
    if os.geteuid() == 0:
        uids.add(sandbox_ids()[0])
    return frozenset(uids)
