"""A classic-BPF seccomp filter built in Python, for ``bwrap --seccomp FD``.

The program (``struct sock_filter`` entries, native byte order) checks ``seccomp_data.arch``:
x86_64 and aarch64 have their own tables; any other architecture (i386 ``int 0x80``, arm32)
kills the process. On x86_64 an x32 syscall number (bit 30) returns EPERM. Then it returns:

* ``EPERM`` for ``socket()`` of any family but ``AF_UNIX`` (and ``AF_INET``/``AF_INET6`` when the
  network is allowed): no ``AF_INET``, ``AF_INET6``, ``AF_NETLINK``, ``AF_PACKET``, ...;
* ``EPERM`` for ``ptrace``, ``process_vm_readv/writev``, ``keyctl``/``add_key``/``request_key``,
  ``bpf``, ``userfaultfd``, ``perf_event_open``, ``mount``/``umount2``/the new mount API,
  ``pivot_root``, ``chroot``, ``unshare``, ``setns``, ``io_uring_*``, module and kexec loading,
  ``swapon/off``, ``reboot``, and ``clone()`` with namespace flags;
* ``ENOSYS`` for ``clone3`` (its flags are behind a pointer; libc then falls back to ``clone``);
* allow for everything else.
"""

from __future__ import annotations

import errno
import os
import struct

__all__ = [
    "AUDIT_ARCH_AARCH64",
    "AUDIT_ARCH_X86_64",
    "build_filter",
    "filter_fd",
]

AUDIT_ARCH_X86_64 = 0xC000003E
AUDIT_ARCH_AARCH64 = 0xC00000B7

# BPF opcodes
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_JSET_K = 0x45
_RET_K = 0x06

RET_KILL_PROCESS = 0x80000000
RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000

# offsets in struct seccomp_data
_NR, _ARCH, _ARG0_LO = 0, 4, 16

_X32_BIT = 0x40000000
AF_UNIX, AF_INET, AF_INET6 = 1, 2, 10
#: CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET | NEWTIME
_CLONE_NS_FLAGS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000 | 0x80

# syscalls refused with EPERM, per architecture
_DENY_X86_64: dict[str, int] = {
    "ptrace": 101,
    "process_vm_readv": 310,
    "process_vm_writev": 311,
    "add_key": 248,
    "request_key": 249,
    "keyctl": 250,
    "bpf": 321,
    "userfaultfd": 323,
    "perf_event_open": 298,
    "mount": 165,
    "umount2": 166,
    "pivot_root": 155,
    "chroot": 161,
    "unshare": 272,
    "setns": 308,
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
    "open_tree": 428,
    "move_mount": 429,
    "fsopen": 430,
    "fsconfig": 431,
    "fsmount": 432,
    "fspick": 433,
    "mount_setattr": 442,
    "init_module": 175,
    "finit_module": 313,
    "delete_module": 176,
    "kexec_load": 246,
    "kexec_file_load": 320,
    "swapon": 167,
    "swapoff": 168,
    "reboot": 169,
    "acct": 163,
}
_DENY_AARCH64: dict[str, int] = {
    "ptrace": 117,
    "process_vm_readv": 270,
    "process_vm_writev": 271,
    "add_key": 217,
    "request_key": 218,
    "keyctl": 219,
    "bpf": 280,
    "userfaultfd": 282,
    "perf_event_open": 241,
    "mount": 40,
    "umount2": 39,
    "pivot_root": 41,
    "chroot": 51,
    "unshare": 97,
    "setns": 268,
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
    "open_tree": 428,
    "move_mount": 429,
    "fsopen": 430,
    "fsconfig": 431,
    "fsmount": 432,
    "fspick": 433,
    "mount_setattr": 442,
    "init_module": 105,
    "finit_module": 273,
    "delete_module": 106,
    "kexec_load": 104,
    "kexec_file_load": 294,
    "swapon": 224,
    "swapoff": 225,
    "reboot": 142,
    "acct": 89,
}
#: (socket, clone, clone3)
_SPECIAL = {AUDIT_ARCH_X86_64: (41, 56, 435), AUDIT_ARCH_AARCH64: (198, 220, 435)}

Insn = tuple[int, int, int, int]


def _stmt(code: int, k: int) -> Insn:
    return (code, 0, 0, k)


def _jump(code: int, k: int, jt: int, jf: int) -> Insn:
    if not (0 <= jt <= 255 and 0 <= jf <= 255):
        raise ValueError("BPF jump out of range")
    return (code, jt, jf, k)


def _errno(code: int) -> Insn:
    return _stmt(_RET_K, _RET_ERRNO | (code & 0xFFFF))


def _arch_block(arch: int, deny: dict[str, int], families: tuple[int, ...]) -> list[Insn]:
    """The checks for one architecture (the syscall number is loaded first); ends with allow."""
    socket_nr, clone_nr, clone3_nr = _SPECIAL[arch]
    out: list[Insn] = [_stmt(_LD_W_ABS, _NR)]
    if arch == AUDIT_ARCH_X86_64:
        out += [_jump(_JGE_K, _X32_BIT, 0, 1), _errno(errno.EPERM)]
    for nr in sorted(set(deny.values())):
        out += [_jump(_JEQ_K, nr, 0, 1), _errno(errno.EPERM)]
    out += [_jump(_JEQ_K, clone3_nr, 0, 1), _errno(errno.ENOSYS)]
    # clone(flags, ...): namespace flags refused
    out += [
        _jump(_JEQ_K, clone_nr, 0, 4),
        _stmt(_LD_W_ABS, _ARG0_LO),
        _jump(_JSET_K, _CLONE_NS_FLAGS, 0, 1),
        _errno(errno.EPERM),
        _stmt(_RET_K, RET_ALLOW),
    ]
    # socket(family, ...): only the allowed families
    out += [_jump(_JEQ_K, socket_nr, 0, len(families) + 3), _stmt(_LD_W_ABS, _ARG0_LO)]
    for i, family in enumerate(families):
        out.append(_jump(_JEQ_K, family, len(families) - i, 0))
    out += [_errno(errno.EPERM), _stmt(_RET_K, RET_ALLOW)]
    out.append(_stmt(_RET_K, RET_ALLOW))
    return out


def build_filter(*, allow_network: bool = False) -> bytes:
    """The whole program, packed as ``struct sock_filter[]`` (``u16 code, u8 jt, u8 jf, u32 k``)."""
    families = (AF_UNIX, AF_INET, AF_INET6) if allow_network else (AF_UNIX,)
    program: list[Insn] = [_stmt(_LD_W_ABS, _ARCH)]
    for arch, deny in ((AUDIT_ARCH_X86_64, _DENY_X86_64), (AUDIT_ARCH_AARCH64, _DENY_AARCH64)):
        block = _arch_block(arch, deny, families)
        program.append(_jump(_JEQ_K, arch, 0, len(block)))
        program += block
        program.append(_stmt(_LD_W_ABS, _ARCH))  # skipped blocks fall through to the next arch check
    program[-1] = _stmt(_RET_K, RET_KILL_PROCESS)
    if len(program) > 4096:
        raise ValueError("seccomp program too long")
    return b"".join(struct.pack("=HBBI", *insn) for insn in program)


def filter_fd(*, allow_network: bool = False) -> int:
    """A pipe's read end holding the program (the caller passes it with ``pass_fds`` and closes it)."""
    data = build_filter(allow_network=allow_network)
    read_fd, write_fd = os.pipe()
    try:
        os.write(write_fd, data)  # far below the pipe buffer
    except BaseException:
        os.close(read_fd)
        raise
    finally:
        os.close(write_fd)
    return read_fd
