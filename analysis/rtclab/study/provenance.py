"""Where a study's results came from, for the findings page (docs/studies.md, "Provenance"): when its runs ran, on
what machine, with which Chromium, backend and code (the commits, dirty or not), n per point, the true time factor
against the full study, the machine time its attempts took, and the command that makes it again from the repository
root. Read from plan.json, study.json, attempts.jsonl and the used runs' manifest.json only, so that an archived study
(archive.py) gives the same as its directory; a value a manifest does not hold is printed as not recorded, never
guessed."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from . import archive
from .studydir import read_log

NOT_RECORDED = "not recorded"


@dataclass
class MachineTime:
    """What a study's attempts took, from attempts.jsonl: every attempt that ended (valid, invalid, incomplete or
    interrupted) with the wall time of its harness (set-up, call, teardown and analysis)."""
    attempts: int  # attempts that ended
    wall_s: float  # the sum of their wall times
    repetitions: int  # the repetitions planned (plan.json's order)
    fixed_repetitions: int | None  # the study file's own count over its points, when a repetitions plan replaced it

    @property
    def per_repetition_s(self) -> float | None:
        """The study's own cost per repetition (its attempts' wall time over its planned repetitions)."""
        return self.wall_s / self.repetitions if self.repetitions else None


@dataclass
class Provenance:
    started: list[float] = field(default_factory=list)  # each used run's timings.started (epoch s)
    machines: list[str] = field(default_factory=list)
    chromium: list[str] = field(default_factory=list)
    backends: list[str] = field(default_factory=list)
    commits: list[str] = field(default_factory=list)  # manifests' git_commit, "-dirty" kept
    manifests_unread: list[str] = field(default_factory=list)  # "<run dir>: <why>" for each used run's manifest
    n_per_point: dict[str, int] = field(default_factory=dict)
    quick_factor: float = 1.0  # --quick as run
    quick_of: dict[str, Any] | None = None  # plan.json's quick_of: the full study this file shortens by hand
    study_file: str = ""
    repetitions_from: dict[str, Any] | None = None  # plan.json's: the repetitions plan it ran (--repetitions-from)
    machine_time: MachineTime | None = None  # None: the study has no attempts.jsonl

    @property
    def time_factor(self) -> float:
        return (float(self.quick_of["time_factor"]) if self.quick_of else 1.0) * self.quick_factor

    @property
    def runs_without_manifest(self) -> int:
        return len(self.manifests_unread)

    @property
    def dirty(self) -> bool:
        return any(c.endswith("-dirty") for c in self.commits)


def _unique(xs: list[Any]) -> list[str]:
    return sorted({str(x) for x in xs if x})


def machine(m: dict[str, Any]) -> str:
    """The host of a manifest: CPU model, cores, memory, kernel and its tick rate."""
    h = m.get("host") or {}
    kernel = h.get("kernel") or (m.get("versions") or {}).get("kernel")
    hz = h.get("kernel_hz")
    mem = h.get("memory_gib")
    return (f"{h.get('cpu_model') or 'CPU model ' + NOT_RECORDED}, "
            f"{h.get('cpus') if h.get('cpus') is not None else '? (' + NOT_RECORDED + ')'} cores, "
            f"{str(mem) + ' GiB' if mem is not None else 'memory ' + NOT_RECORDED}, "
            f"kernel {kernel or NOT_RECORDED} (HZ {hz if hz is not None else NOT_RECORDED})")


def backend(m: dict[str, Any]) -> str | None:
    b = m.get("backend") or {}
    used = b.get("used")
    if not used:
        return None
    if used == "uml":  # the qdiscs run in the guest's kernel: its release and tick rate matter
        return f"uml (guest kernel {b.get('kernel') or NOT_RECORDED}, HZ {b.get('kernel_hz') or NOT_RECORDED})"
    return str(used)


def read(study_dir: Path, doc: dict[str, Any], plan: dict[str, Any]) -> Provenance:
    manifests = []
    unread = []
    for r in doc.get("runs") or []:
        if not r.get("used"):
            continue
        try:
            m = json.loads((study_dir / r["dir"] / "manifest.json").read_text())
            if not isinstance(m, dict):
                raise ValueError("not a JSON object")
            manifests.append(m)
        except (OSError, ValueError) as e:  # counted and named on the page: its run's provenance is not known
            unread.append(f"{r['dir']}: " + (e.strerror or type(e).__name__ if isinstance(e, OSError) else str(e)))
    started = [float(t) for m in manifests if isinstance(t := (m.get("timings") or {}).get("started"), (int, float))]
    return Provenance(
        started=sorted(started), machines=_unique([machine(m) for m in manifests]),
        chromium=_unique([(m.get("versions") or {}).get("chromium") for m in manifests]),
        backends=_unique([backend(m) for m in manifests]), commits=_unique([m.get("git_commit") for m in manifests]),
        manifests_unread=unread,
        n_per_point={p["name"]: len(p.get("runs_used") or []) for p in doc.get("points") or []},
        quick_factor=float(plan.get("quick_factor") or 1.0), quick_of=plan.get("quick_of"),
        study_file=str(plan.get("study_file") or ""), repetitions_from=plan.get("repetitions_from"),
        machine_time=machine_time(study_dir, plan))


def machine_time(study_dir: Path, plan: dict[str, Any]) -> MachineTime | None:
    if not (study_dir / "attempts.jsonl").exists():
        return None
    walls = [float(w) for recs in read_log(study_dir).records.values()
             if isinstance(w := (recs.get("end") or {}).get("wall_s"), (int, float))]
    fixed = (plan.get("repetitions_from") or {}).get("study_file_repetitions")
    return MachineTime(attempts=len(walls), wall_s=sum(walls), repetitions=len(plan.get("order") or []),
                       fixed_repetitions=int(fixed) * len(plan.get("points") or []) if isinstance(fixed, int) else None)


def duration_text(s: float) -> str:
    """A machine time in hours and minutes ("1 h 05 min", "9 min")."""
    h, m = divmod(round(s / 60), 60)
    return f"{h} h {m:02d} min" if h else f"{m} min"


def machine_time_text(t: MachineTime | None) -> str:
    """The attempts' machine time and, when a repetitions plan replaced the study file's count, what that count would
    have taken at this study's own cost per repetition (its mean attempt times its attempts per repetition)."""
    if t is None:
        return NOT_RECORDED + " (no attempts.jsonl)"
    text = (f"{duration_text(t.wall_s)} over {t.attempts} attempt(s) for {t.repetitions} planned repetition(s) (each "
            "attempt's harness wall time: set-up, call, teardown and analysis)")
    if t.fixed_repetitions is not None and t.attempts and (per_repetition := t.per_repetition_s) is not None:
        text += (f"; the study file's fixed count, {t.fixed_repetitions} repetitions, would have taken about "
                 f"{duration_text(per_repetition * t.fixed_repetitions)} at this study's "
                 f"{duration_text(per_repetition)} per repetition")
    return text


def machine_time_total_text(times: list[MachineTime | None]) -> str:
    """Every study's machine time added up, beside what the studies would have cost had each run its study file's
    fixed count: a study a repetitions plan set is priced at its own cost per repetition (machine_time_text), the
    others at what they took. A study without attempts.jsonl is said, never counted as 0."""
    known = [t for t in times if t is not None]
    if not known:
        return NOT_RECORDED + " (no study has attempts.jsonl)"
    spent = sum(t.wall_s for t in known)
    text = (f"{duration_text(spent)} over {sum(t.attempts for t in known)} attempt(s) for "
            f"{sum(t.repetitions for t in known)} planned repetition(s) in {len(known)} stud(ies)")
    if len(known) < len(times):
        text += f" ({len(times) - len(known)} more without attempts.jsonl: not recorded, not counted)"
    planned = [t for t in known if t.fixed_repetitions is not None and t.attempts and t.per_repetition_s is not None]
    if planned:
        fixed = spent + sum((t.per_repetition_s or 0) * (t.fixed_repetitions or 0) - t.wall_s for t in planned)
        text += (f"; with every study file's fixed count, about {duration_text(fixed)} (the {len(planned)} "
                 f"stud(ies) a repetitions plan set took {duration_text(sum(t.wall_s for t in planned))}, their files' "
                 f"counts priced at each one's own cost per repetition)")
    return text


def short_commit(c: str) -> str:
    """A manifest's git_commit shortened, keeping "-dirty" (a run made with uncommitted changes in the tree)."""
    return c[:12] + ("-dirty" if c.endswith("-dirty") else "")


def _utc(t: float) -> str:
    return datetime.fromtimestamp(t, tz=timezone.utc).strftime("%Y-%m-%d %H:%M")


def dates(p: Provenance) -> str:
    if not p.started:
        return NOT_RECORDED
    first, last = _utc(p.started[0]), _utc(p.started[-1])
    return f"{first} UTC" if first == last else f"{first} to {last} UTC (first and last run's start)"


def code(p: Provenance) -> str:
    if not p.commits:
        return NOT_RECORDED
    text = ", ".join(f"`{short_commit(c)}`" for c in p.commits)
    notes = []
    if len(p.commits) > 1:
        notes.append(f"the runs came from {len(p.commits)} code states")
    if p.dirty:
        notes.append("DIRTY: some runs were made from a tree with uncommitted changes (--allow-dirty), the code that "
                     "made them is not in git")
    return text + (f" ({'; '.join(notes)})" if notes else " (clean)")


def n_text(p: Provenance) -> str:
    ns = list(p.n_per_point.values())
    if not ns:
        return "no point"
    if min(ns) == max(ns):
        return f"{ns[0]} on each of {len(ns)} point(s)"
    return f"{min(ns)} to {max(ns)} over {len(ns)} points (" + ", ".join(f"{k} {v}" for k, v in
                                                                      p.n_per_point.items()) + ")"


def time_factor_text(p: Provenance) -> str:
    parts = []
    if p.quick_of:
        parts.append(f"the file's times are x{float(p.quick_of['time_factor']):g} those of `{p.quick_of['file']}`")
    parts.append(f"--quick {p.quick_factor:g}")
    return f"{p.time_factor:g} (" + "; ".join(parts) + ")"


def planned_text(p: Provenance) -> str:
    """Where a study's repetitions per point came from, when a repetitions plan set them: its file and hash, the pilots
    and the method (docs/studies.md, "Planning repetitions from a pilot")."""
    r = p.repetitions_from or {}
    m = r.get("method") or {}
    pilots = ", ".join(f"`{x.get('study')}` ({x.get('dir')})" for x in r.get("pilots") or []) or NOT_RECORDED
    return (f"planned from a pilot: `{r.get('file')}` (sha256 {str(r.get('sha256'))[:12]}), pilot(s) {pilots}, power "
            f"{m.get('power', NOT_RECORDED)}, cap {m.get('cap', NOT_RECORDED)}, in place of the study file's "
            f"{r.get('study_file_repetitions', NOT_RECORDED)} per point")


def command(name: str, p: Provenance, accept_invalid: list[str]) -> str:
    """The commands that make this study and its archive again from the repository root: the run into its default
    directory (results/studies/<name>[-quick<F>]; <name>-planned[-quick<F>], given as --out, for a study planned from
    a pilot of its own name), its aggregation when INVALID runs were accepted (study.json accept_invalid), then the
    archive."""
    # A study planned from a pilot of its own name runs into a directory of its own (the pilot's default one may hold
    # the pilot's runs, which the runner will not pool), named as its archive is.
    default = f"results/studies/{archive.dir_name(name, p.quick_factor, None)}"
    out = f"results/studies/{archive.dir_name(name, p.quick_factor, p.repetitions_from)}"
    cmd = f"rtclab study run {p.study_file}" + ("" if p.quick_factor == 1.0 else f" --quick {p.quick_factor:g}")
    if p.repetitions_from:
        cmd += f" --repetitions-from {p.repetitions_from.get('file')}" + (f" --out {out}" if out != default else "")
    if accept_invalid:
        cmd += f" && rtclab study aggregate {out} --accept-invalid {','.join(accept_invalid)}"
    return f"{cmd} && rtclab study archive {out}"


def markdown(name: str, where: str, p: Provenance, runs_used: int, invalid_used: int,
             accept_invalid: list[str], pilot_of: str | None = None) -> list[str]:
    """The page's lines for one study; for a pilot set aside (`pilot_of`: the directory of the same study whose
    repetitions were planned from it, which the claims read instead), a heading and a line that say so."""
    cmd = command(name, p, accept_invalid)
    outside = Path(p.study_file).is_absolute()
    return [
        f"### `{name}`" + (" (pilot)" if pilot_of else ""), "",
        *([f"- the pilot of `{pilot_of}`, the same study with its repetitions planned from these runs: no claim reads "
           "it; listed for its runs and machine time"] if pilot_of else []),
        f"- read from `{where}`; runs used {runs_used} ({invalid_used} INVALID among them)"
        + (f", {p.runs_without_manifest} without a readable manifest.json ({'; '.join(p.manifests_unread)}): "
           "the lines below leave them out" if p.manifests_unread else ""),
        f"- runs: {dates(p)}; n per point: {n_text(p)}",
        *([f"- repetitions: {planned_text(p)}"] if p.repetitions_from else []),
        f"- machine: {'; '.join(p.machines) or NOT_RECORDED}",
        f"- Chromium: {', '.join(p.chromium) or NOT_RECORDED}; backend: {', '.join(p.backends) or NOT_RECORDED}",
        f"- code: {code(p)}",
        f"- time factor against the full study: {time_factor_text(p)}",
        f"- machine time: {machine_time_text(p.machine_time)}",
        f"- command: `{cmd}`" + (" (its study file is outside the repository: it runs only where that file is)"
                                 if outside else ""),
    ]
