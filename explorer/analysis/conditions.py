"""The conditions a run was measured under: what its environment means for its timings, and
that environment as report text.

Warning thresholds (`warnings`): steal above 5 % of the CPU over the run, or above 10 %
between two trials; a 1-minute load average above 1.5 runnable tasks per CPU at any trial's
end (the workload and the server account for at most about one per CPU on their own).
"""

from __future__ import annotations

from explorer.analysis.units import human_bytes
from explorer.models import Environment

STEAL_RUN = 0.05
"""Share of CPU stolen over the whole run above which the report warns."""
STEAL_INTERVAL = 0.10
"""Share stolen between two trials above which the report warns."""
LOAD_PER_CPU = 1.5
"""1-minute load average per CPU above which the report warns of other load."""


def warnings(env: Environment) -> list[str]:
    """One line per reason the machine may have distorted the timings (see module doc)."""
    cpu = env.cpu
    if cpu is None:
        return []
    out = []
    if cpu.steal > STEAL_RUN or (cpu.steal_max or 0.0) > STEAL_INTERVAL:
        out.append(
            f"CPU steal {cpu.steal:.0%} over the run (worst between two trials "
            f"{cpu.steal_max or 0:.0%}): the hypervisor gave this machine's CPU to others, "
            "so timings are slower and noisier than the hardware"
        )
    cpus = env.cpu_count or 1
    if cpu.loadavg_max is not None and cpu.loadavg_max > LOAD_PER_CPU * cpus:
        out.append(
            f"load average reached {cpu.loadavg_max:.1f} on {cpus} CPU(s): other work "
            "competed with the server; compare only against runs under the same load"
        )
    return out


def describe(env: Environment) -> list[str]:
    """The environment as a few lines of text (markdown-safe), warnings first."""
    lines = [f"**Warning:** {w}" for w in env.warnings]
    if lines:
        lines.append("")
    checksums = {True: "on", False: "off", None: "?"}[env.data_checksums]
    server = f"PostgreSQL {env.server_version}, data checksums {checksums}"
    if env.io_method is not None:
        server += f", io_method {env.io_method}"
    cpu = f"{env.cpu_count or '?'} CPU(s)" + (f" ({env.cpu_model})" if env.cpu_model else "")
    lines.append(f"Environment: pgwx {env.pgwx_version} · {server} · {cpu}")
    system = machine_line(env)
    if system:
        lines.append(system)
    if env.server_programs is not None:
        programs = env.server_programs.replace("`", "'")
        lines.append(f"Server owned by pgwx, made with `{programs}`")
    if env.cpu is not None:
        c = env.cpu
        load = "?" if c.loadavg_max is None else f"{c.loadavg_max:.1f}"
        lines.append(
            f"Machine during the run ({c.seconds:.0f} s, same machine as the server): "
            f"CPU busy {c.busy:.0%}, steal {c.steal:.1%} (worst between trials "
            f"{c.steal_max or 0:.1%}), iowait {c.iowait:.1%}, peak load average {load}"
        )
    elif not env.same_machine:
        lines.append("Machine load: not measured (the server is on another machine)")
    if env.settings:
        lines.append(
            "Server settings at the start: "
            + ", ".join(f"{k}={v}" for k, v in sorted(env.settings.items()))
        )
    return lines


def machine_line(env: Environment) -> str | None:
    """'Machine: Debian 12, kernel 6.1, 7.6 GiB, data on ext4 (/dev/nvme0n1p1), EC2 m5.large';
    None for a run stored before pgwx kept these (each unknown part is left out)."""
    parts = []
    if env.os:
        parts.append(env.os)
    if env.kernel:
        parts.append(f"kernel {env.kernel}")
    if env.memory_bytes:
        parts.append(f"{human_bytes(env.memory_bytes)} memory")
    if env.data_fs:
        parts.append(
            f"data on {env.data_fs}" + (f" ({env.data_device})" if env.data_device else "")
        )
    if env.instance_type:
        parts.append(f"instance {env.instance_type}")
    elif env.machine_model:
        parts.append(env.machine_model)
    return ("Machine: " + ", ".join(parts)) if parts else None
