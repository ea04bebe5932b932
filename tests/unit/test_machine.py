"""The machine's facts read from local files: what a file says, and None (unknown) where it
says nothing — never a guess, never a network call."""

from __future__ import annotations

from pathlib import Path

import pytest

from explorer.lab.measure import machine


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(machine, "ROOT", tmp_path)
    return tmp_path


def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_ec2_says_its_instance_type_and_the_data_directory_its_mount(root: Path) -> None:
    _write(root, "etc/os-release", 'NAME="Debian"\nPRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\n')
    _write(root, "proc/meminfo", "MemTotal:       8048576 kB\nMemFree: 1 kB\n")
    _write(root, "sys/class/dmi/id/sys_vendor", "Amazon EC2\n")
    _write(root, "sys/class/dmi/id/product_name", "m5.large\n")
    _write(
        root,
        "proc/self/mounts",
        "/dev/root / ext4 rw 0 0\n"
        "/dev/nvme1n1 /var/lib/postgresql xfs rw 0 0\n"
        "/dev/nvme2n1 /var/lib/postgresql\\040old ext4 rw 0 0\n",
    )
    assert machine.os_name() == "Debian GNU/Linux 12 (bookworm)"
    assert machine.memory_bytes() == 8048576 * 1024
    assert machine.instance_type() == "m5.large"
    assert machine.machine_model() == "Amazon EC2 m5.large"
    found = machine.mount_of("/var/lib/postgresql/18/main")
    assert found == machine.Mount("/var/lib/postgresql", "/dev/nvme1n1", "xfs")
    assert machine.mount_of("/var/lib/postgresql old/x") == machine.Mount(
        "/var/lib/postgresql old", "/dev/nvme2n1", "ext4"
    )
    assert machine.mount_of("/var/lib/postgresqlx") == machine.Mount("/", "/dev/root", "ext4")


def test_what_the_machine_does_not_say_is_unknown(root: Path) -> None:
    _write(root, "sys/class/dmi/id/sys_vendor", "Google\n")
    _write(root, "sys/class/dmi/id/product_name", "Google Compute Engine\n")
    assert machine.instance_type() is None  # GCE keeps its type in a metadata service
    assert machine.machine_model() == "Google Google Compute Engine"
    assert machine.memory_bytes() is None
    assert machine.mount_of("/anything") is None
