from __future__ import annotations

import os
import struct

from homarus.sandbox.seccomp import AUDIT_ARCH_AARCH64, AUDIT_ARCH_X86_64, build_filter, filter_fd


def _insns(data: bytes) -> list[tuple[int, int, int, int]]:
    return [struct.unpack("=HBBI", data[i : i + 8]) for i in range(0, len(data), 8)]


def test_program_shape() -> None:
    prog = _insns(build_filter())
    assert prog[0] == (0x20, 0, 0, 4)  # load arch
    assert prog[-1] == (0x06, 0, 0, 0x80000000)  # unknown arch: kill
    ks = {k for _, _, _, k in prog}
    assert {AUDIT_ARCH_X86_64, AUDIT_ARCH_AARCH64, 0x40000000, 101, 321, 425} <= ks
    # every jump lands inside the program
    for i, (code, jt, jf, _) in enumerate(prog):
        if code & 0x07 == 0x05:
            assert i + 1 + max(jt, jf) < len(prog)


def test_network_variant_allows_inet() -> None:
    closed, opened = _insns(build_filter()), _insns(build_filter(allow_network=True))
    assert len(opened) > len(closed)


def test_filter_fd_readable() -> None:
    fd = filter_fd()
    try:
        data = os.read(fd, 1 << 16)
    finally:
        os.close(fd)
    assert data == build_filter()
