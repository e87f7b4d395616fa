"""Success vs simulated inference delay: a VLA trained on one CALVIN task, and the answer-key plan loop.

One command, resumable (everything lands in ``--out`` as it is made, and a rerun with the same settings
reuses it):

1. Data and training come from ``bench/vla_learning.py`` (its functions, not a copy): scripted-expert
   demonstrations of ``--task`` on the play-table, then ``vla.train`` for exactly ``--max-steps`` optimizer
   steps (reproducible, unlike a wall-clock budget; an interrupted run continues from its last checkpoint).
2. The gate: at delay 0 (the frozen-world protocol) the trained model must beat every blind baseline
   (uniform random, a constant "hold still, gripper open", the open-loop replay of the training
   demonstrations) on the same held-out starts, with a one-sided exact McNemar p below ``--alpha`` (paired:
   only the starts one policy solved and the other did not count); otherwise the run stops (status 1),
   since a latency curve of a policy that does not look says nothing about latency.
3. The curve: success vs delay ``d`` control steps per decision (``--latency steps:d``,
   :mod:`benchmarks.core.latency`) in both modes: ``hold`` (the robot holds still while the model
   thinks; the world and the 360-step budget run on) and ``continue`` (the previous chunk's unexecuted
   actions keep running, then holding still). The same held-out starts at every point (paired), 95 %
   Wilson intervals. The curve runs on the first ``--curve-episodes`` of the gate's starts (the gate needs
   more: it compares the model with a replay that solves many starts too).
4. The same curve for the answer-key plan loop (``--policy mllm --model answer-key``, the static camera),
   on the first ``--oracle-episodes`` of those starts. It has nothing pending when asked again, so its
   ``continue`` should equal ``hold``; both are measured.

Outputs in ``--out``: ``data/``, ``run-<backbone>/`` (vla_learning's), ``curve.json`` (settings, every
point with its per-episode results, the gate), ``latency_curve.md`` (tables) and ``latency_curve.png``.

    python bench/latency_curve.py                          # the measurement (about 1 h 45 min on 2 CPU cores)
    python bench/latency_curve.py --tiny --out /tmp/lc     # the whole pipeline at the smallest size

Options not listed by ``--help`` go to ``bench/vla_learning.py`` (``--backbone``, ``--lr``, ``--seed``, ...).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

try:  # imported as bench.latency_curve (the tests), or run as a script with bench/ first on sys.path
    from bench import vla_learning as learning
except ModuleNotFoundError:
    import vla_learning as learning

from benchmarks.core.latency import Latency, parse_latency
from benchmarks.stats.paired import mcnemar_one_sided_p

CONTROL_HZ = 30.0  # CALVIN's control rate
GATE_TEST = "one-sided exact McNemar"  # paired: every policy runs the same held-out starts
#: vla_learning's settings for this measurement (the command line may override each).
DEFAULTS = [
    *["--image-size", "224", "--train-episodes", "100", "--max-steps", "1500", "--min-lr-ratio", "0.05"],
    *["--eval-episodes", "100"],
]
#: ``--tiny``: every stage at the smallest size (a dry run of the pipeline, not a measurement).
TINY = [
    *["--train-episodes", "1", "--max-steps", "2", "--warmup-steps", "1", "--batch-size", "4"],
    *["--image-size", "64", "--feature-cache", "0", "--eval-episodes", "2", "--ep-len", "12"],
]
TINY_CURVE = {"delays": "0,3", "oracle_episodes": 1}
HOLD_STILL_OPEN = [0, 0, 0, 0, 0, 0, 1]  # relative action: no motion, gripper open (CALVIN: 1 = open)
Result = dict[str, Any]
#: held-out starts per VLA curve point (the gate uses them all: comparing two good policies needs more)
CURVE_EPISODES = 30
Evaluate = Callable[[Latency | None, int | None], Result]  # (latency, first n starts or all) -> result


def parse_args(argv: list[str] | None = None) -> tuple[argparse.Namespace, argparse.Namespace]:
    """(this script's options, vla_learning's options) from one command line."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--delays", default="0,2,5,10,20", help="delays per decision, in control steps (30 Hz)")
    p.add_argument("--modes", default="hold,continue", help="what the env does during a delay")
    p.add_argument(
        "--curve-episodes",
        type=int,
        help="held-out starts per VLA curve point: the first N of the gate's (default: 30, at most all)",
    )
    p.add_argument("--oracle-episodes", type=int, default=10, help="answer-key episodes per point (0: none)")
    p.add_argument("--alpha", type=float, default=0.05, help="the gate's one-sided exact McNemar level")
    p.add_argument(
        "--ignore-gate",
        action="store_true",
        help="measure the curve even when the gate fails (recorded, and said in the table)",
    )
    p.add_argument(
        "--policies",
        default="vla,answer-key",
        help="curves to measure (two invocations with one --out may split them between processes)",
    )
    p.add_argument("--out", default="outputs/latency_curve")
    p.add_argument(
        "--tiny", action="store_true", help="smoke run at the smallest size; the gate only reports"
    )
    p.add_argument(
        "--report-only", action="store_true", help="rewrite the table and plot from OUT/curve.json"
    )
    args, rest = p.parse_known_args(argv)
    if args.tiny:
        for key, value in TINY_CURVE.items():
            setattr(args, key, value)
    try:
        args.delays = sorted({int(d) for d in args.delays.split(",")})
        args.modes = [str(parse_latency("steps:1", m).mode) for m in args.modes.split(",")]
    except ValueError as error:
        p.error(f"--delays {args.delays} / --modes {args.modes}: {error}")
    args.policies = args.policies.split(",")
    if not set(args.policies) <= set(LABELS):
        p.error(f"--policies {','.join(args.policies)}: use vla, answer-key or both")
    if args.delays[0] < 0:
        p.error(f"--delays: a delay is a non-negative number of control steps, got {args.delays[0]}")
    vla = learning.parse_args([*DEFAULTS, *(TINY if args.tiny else []), *rest, "--out", args.out])
    if vla.env != "calvin":
        p.error("--env: the latency curve runs on CALVIN")
    if args.curve_episodes is None:
        args.curve_episodes = min(CURVE_EPISODES, vla.eval_episodes)
    if not 1 <= args.curve_episodes <= vla.eval_episodes:
        p.error(f"--curve-episodes {args.curve_episodes}: use 1 to --eval-episodes ({vla.eval_episodes})")
    return args, vla


def points(delays: list[int], modes: list[str]) -> list[tuple[int, str]]:
    """(delay, mode) per point; delay 0 is the frozen-world protocol, one point for every mode."""
    return [(0, "none")] * (0 in delays) + [(d, m) for d in delays if d > 0 for m in modes]


def point_key(policy: str, delay: int, mode: str) -> str:
    """A point's key in ``curve.json``; delay 0 is one point for every mode."""
    return f"{policy}/d0" if delay == 0 else f"{policy}/d{delay}/{mode}"


def latency_for(delay: int, mode: str) -> Latency | None:
    return None if delay == 0 else parse_latency(f"steps:{delay}", mode, CONTROL_HZ)


def discordant(trained: Result, base: Result) -> tuple[int, int]:
    """(starts only the trained model solved, starts only the baseline solved), episode by episode."""
    pairs = list(zip(trained["per_episode"], base["per_episode"], strict=True))
    return (
        sum(t["success"] and not b["success"] for t, b in pairs),
        sum(b["success"] and not t["success"] for t, b in pairs),
    )


# ------------------------------------------------------------------------------------------ storage


class Store:
    """``curve.json`` in ``--out``: written after every point, reused by a rerun with the same settings.

    Every save merges into the file under a lock, so two invocations with different ``--policies`` can fill
    one curve side by side (each point is still measured once: a point the file holds is reused)."""

    def __init__(self, path: Path, settings: dict[str, Any] | None) -> None:
        """``settings=None``: read ``path`` as it is (for the report)."""
        self.path = path
        old = json.loads(path.read_text()) if path.is_file() else {}
        if old and settings is not None and old.get("settings") != settings:
            print(f"[curve] {path} was made with other settings: starting over", flush=True)
            path.unlink()
            old = {}
        self.data: dict[str, Any] = old or {"settings": settings, "points": {}}

    def point(self, key: str, run: Callable[[], Result]) -> Result:
        self.save()  # (picks up the points another invocation finished meanwhile)
        if key not in self.data["points"]:
            began = time.perf_counter()
            result = run()
            result["wall_s"] = round(time.perf_counter() - began, 1)
            self.data["points"][key] = result
            self.save()
        else:
            found = self.data["points"][key]
            print(f"[curve] {key}: reused ({found['success']}/{found['episodes']})", flush=True)
        return self.data["points"][key]

    def save(self) -> None:
        """Merge this invocation's data with the file's points (its own win) and write it atomically."""
        import fcntl

        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if self.path.is_file():
                on_disk = json.loads(self.path.read_text())
                if on_disk.get("settings") == self.data["settings"]:
                    self.data["points"] = {**on_disk["points"], **self.data["points"]}
            temporary = self.path.with_suffix(".tmp")
            temporary.write_text(json.dumps(self.data, indent=1) + "\n")
            temporary.replace(self.path)


# ------------------------------------------------------------------------------------- the policies


def train(vla: argparse.Namespace) -> tuple[Path, dict[str, Any]]:
    """vla_learning's demonstrations and step-budget training (each reused when already in ``--out``)."""
    out = Path(vla.out)
    demos = learning.demonstrations(vla, out / "data")
    tag = vla.backbone.rstrip("/").split("/")[-1]
    backbone = learning.prepared_backbone(vla, out)
    final, training = learning.train_for_budget(vla, backbone, out / "data", out / f"run-{tag}")
    learning.plot_curve(
        training["log"], out / "loss_curve.png", f"{vla.task}: {tag}, {training['steps']} steps"
    )
    return final, {
        "demos": {k: demos[k] for k in ("attempts", "kept", "frames")},
        "training": {k: v for k, v in training.items() if k != "log"},
        "first_loss": training["log"][0]["loss"],
        "final_loss": training["log"][-1]["loss"],
    }


def evaluators(final: Path, vla: argparse.Namespace) -> dict[str, Evaluate]:
    """One closed-loop evaluation per policy (``latency``, ``n`` -> result on the first ``n`` held-out starts,
    or all of them), every policy on the same starts."""
    from policies.baselines import ConstantPolicy, RandomPolicy
    from policies.registry import build_policy
    from vla.model import VLAModel

    starts = learning.held_out_starts(vla)
    trained = learning.vla_policy(VLAModel.from_pretrained(final), vla)
    cameras = learning.env_cameras(trained.model.config.cameras)
    oracle = build_policy("mllm", model="answer-key")

    def run(policy: Any, cams: tuple[str, ...], label: str) -> Evaluate:
        return lambda latency, n: learning.evaluate(policy, starts[:n], vla, cams, label, latency)

    return {
        "vla": run(trained, cameras, "trained"),
        "random": run(RandomPolicy(), (), "random"),
        "constant": run(ConstantPolicy(HOLD_STILL_OPEN), (), "constant"),
        "replay": run(learning.replay_policy(Path(vla.out) / "data", len(starts)), (), "replay"),
        "answer-key": run(oracle, ("static",), "answer-key"),
    }


# ----------------------------------------------------------------------------------------- the run


def gate(store: Store, runs: dict[str, Evaluate], alpha: float) -> dict[str, Any]:
    """The trained model vs each blind baseline at delay 0, paired on the held-out starts (one-sided exact
    McNemar)."""
    trained = store.point("vla/d0", lambda: runs["vla"](None, None))
    rows = {}
    for name in ("random", "constant", "replay"):
        base = store.point(f"{name}/d0", lambda name=name: runs[name](None, None))
        only_trained, only_base = discordant(trained, base)
        p = mcnemar_one_sided_p(only_base, only_trained)
        rows[name] = {
            "success": base["success"],
            "episodes": base["episodes"],
            "only_trained": only_trained,
            "only_baseline": only_base,
            "p": p,
        }
        print(
            f"[gate] trained {trained['success']}/{trained['episodes']} vs {name} "
            f"{base['success']}/{base['episodes']} (solved by trained only {only_trained}, by {name} only "
            f"{only_base}): one-sided exact McNemar p = {p:.2g}",
            flush=True,
        )
    passed = all(row["p"] < alpha for row in rows.values())
    store.data["gate"] = {"alpha": alpha, "passed": passed, "test": GATE_TEST, "baselines": rows}
    store.save()
    print(
        f"[gate] {'passed' if passed else 'NOT passed'}: the trained model "
        f"{'clearly beats' if passed else 'does not clearly beat'} every blind baseline (p < {alpha})",
        flush=True,
    )
    return store.data["gate"]


def curve(store: Store, runs: dict[str, Evaluate], args: argparse.Namespace, policy: str) -> None:
    """Every (delay, mode) point of ``policy``, in order of delay; the report is rewritten after each. The
    VLA's delay 0 is the gate's point (its first ``--curve-episodes`` starts make the curve's reference)."""
    n = args.curve_episodes if policy == "vla" else args.oracle_episodes
    for delay, mode in points(args.delays, args.modes):
        key = point_key(policy, delay, mode)
        result = store.point(key, lambda: runs[policy](latency_for(delay, mode), n))  # noqa: B023 (called at once)
        print(f"[curve] {key}: {result['success']}/{result['episodes']}", flush=True)
        write_report(store, args, Path(args.out))


def main(argv: list[str] | None = None) -> int:
    import torch

    args, vla = parse_args(argv)
    torch.set_num_threads(vla.threads)
    out = Path(args.out)
    if args.report_only:
        if not (out / "curve.json").is_file():
            print(f"--report-only: no {out / 'curve.json'}; run without --report-only first", file=sys.stderr)
            return 2
        write_report(Store(out / "curve.json", None), args, out)
        return 0
    final, trained = train(vla)
    ignored = ("out", "threads", "num_workers", "demo_workers", "eval_only", "skip_baselines")
    settings = {
        "vla_learning": {k: v for k, v in vars(vla).items() if k not in ignored},
        "curve_episodes": args.curve_episodes,
        "oracle_episodes": args.oracle_episodes,
        "checkpoint_step": trained["training"]["steps"],
    }
    store = Store(out / "curve.json", settings)
    store.data["training"] = trained
    if "machine" not in store.data:  # where the first point was measured
        from benchmarks.core.manifest import machine_line

        store.data["machine"] = machine_line()
    store.data["command"] = " ".join(
        ["python bench/latency_curve.py", *(sys.argv[1:] if argv is None else argv)]
    )
    runs = evaluators(final, vla)
    verdict = gate(store, runs, args.alpha)
    if args.ignore_gate and not verdict["passed"]:
        store.data["gate"]["ignored"] = True
        store.save()
    if not verdict["passed"] and not (args.tiny or args.ignore_gate):
        write_report(store, args, out)
        print(
            "[gate] stopping: a latency curve of a policy that does not beat blind ones says nothing; "
            "train longer (--max-steps) or on more demonstrations (--train-episodes), or pass --ignore-gate",
            file=sys.stderr,
        )
        return 1
    for policy in args.policies:
        if policy == "vla" or args.oracle_episodes > 0:
            curve(store, runs, args, policy)
    return 0


# -------------------------------------------------------------------------------------- the report

LABELS = {"vla": "VLA", "answer-key": "answer key"}


def curve_point(store: Store, policy: str, delay: int, mode: str) -> Result | None:
    """The curve's point; the VLA's delay 0 on the starts of its curve (the gate measured it on more)."""
    found = store.data["points"].get(point_key(policy, delay, mode))
    n = store.data["settings"].get("curve_episodes")  # absent from curves measured before it existed
    return first(found, n) if policy == "vla" and delay == 0 and n else found


def first(result: Result | None, n: int) -> Result | None:
    """``result`` on its first ``n`` starts, with its own rate and interval."""
    if result is None or result["episodes"] <= n:
        return result
    return learning.success_rate(result["per_episode"][:n])


def cell(result: Result | None, base: Result | None = None) -> str:
    """``k/n (low-high %)``, with the exact McNemar p against ``base`` (the same starts at delay 0)."""
    if result is None:
        return "not run"
    low, high = result["ci95"]
    text = f"{result['success']}/{result['episodes']} ({100 * low:.0f}-{100 * high:.0f} %)"
    if base is not None:
        from benchmarks.stats.paired import mcnemar_exact

        ok = [e["success"] for e in base["per_episode"][: result["episodes"]]]
        p = mcnemar_exact(ok, [e["success"] for e in result["per_episode"]]).p_value
        text += f", p {p:.2g}" if p is not None else ""
    return text


def curve_table(store: Store, args: argparse.Namespace) -> list[str]:
    columns = [(p, m) for p in LABELS for m in args.modes]
    lines = [
        "| delay per decision (control steps) | at 30 Hz | "
        + " | ".join(f"{LABELS[p]}, {m}" for p, m in columns)
        + " |",
        "|---|---|" + "---|" * len(columns),
    ]
    for delay in args.delays:
        base = [curve_point(store, p, 0, m) if delay else None for p, m in columns]  # p: delay vs delay 0
        cells = [cell(curve_point(store, p, delay, m), b) for (p, m), b in zip(columns, base, strict=True)]
        lines.append(f"| {delay} | {1000 * delay / CONTROL_HZ:.0f} ms | " + " | ".join(cells) + " |")
    return lines


def gate_table(store: Store) -> list[str]:
    gate, trained = store.data.get("gate"), store.data["points"].get("vla/d0")
    if gate is None or trained is None:
        return ["(the gate has not run yet)"]
    test = gate.get("test", "one-sided Fisher exact")  # curves measured before the gate was paired
    lines = [
        f"| policy (delay 0) | success (95 % Wilson) | solved by trained only / baseline only | trained better: {test} p |",
        "|---|---|---|---|",
        f"| trained VLA | {cell(trained)} | | |",
    ]
    for name, row in gate["baselines"].items():
        pairs = f"{row['only_trained']} / {row['only_baseline']}" if "only_trained" in row else ""
        base = cell(store.data["points"][f"{name}/d0"])
        lines.append(f"| {name} (blind) | {base} | {pairs} | {row['p']:.2g} |")
    verdict = "passed" if gate["passed"] else "NOT passed"
    lines += ["", f"Gate {verdict} (every p < {gate['alpha']})."]
    if gate.get("ignored"):
        lines[-1] += " The curve below was measured anyway (`--ignore-gate`)."
    return lines


def setup_line(store: Store) -> str:
    """The measurement's setting in one sentence (the table's head, the results file's ``setup``)."""
    t = store.data["training"]
    s = store.data["settings"]["vla_learning"]
    n = store.data["settings"].get("curve_episodes") or s["eval_episodes"]
    starts = (
        f"the first {n} at every point of the curve" if n < s["eval_episodes"] else "the same at every point"
    )
    return (
        f"Task `{s['task']}`; {t['demos']['kept']} demonstrations ({t['demos']['frames']} frames); "
        f"`{s['backbone']}` trained {t['training']['steps']} optimizer steps (batch {s['batch_size']}, lr "
        f"{s['lr']:g}; loss {t['first_loss']:.3g} -> {t['final_loss']:.3g}); {s['eval_episodes']} held-out "
        f"starts (seed {s['seed']} + 1000) for the gate, {starts}; {s['ep_len']} steps per episode; "
        f"chunk executed {s['execute_steps']} at a time."
    )


def write_report(store: Store, args: argparse.Namespace, out: Path) -> None:
    """``latency_curve.md``, ``latency_curve.png`` and ``latency_curve.json`` (a results file with its
    provenance, as ``bench/results/`` keeps them) from the points finished so far."""
    import datetime

    from benchmarks.core.manifest import machine_line

    body = [setup_line(store), "", *gate_table(store), "", *curve_table(store, args), ""]
    body.append("p: exact McNemar against delay 0 on the same starts. Points not run yet read 'not run'.")
    (out / "latency_curve.md").write_text("\n".join(body) + "\n")
    write_plot(store, args, out / "latency_curve.png")
    results = {
        "title": "VLA latency curve: success vs inference delay on the play-table",
        "date": datetime.date.today().isoformat(),
        "machine": store.data.get("machine") or machine_line(),
        "source": "bench/latency_curve.py",
        "command": store.data.get("command") or "python bench/latency_curve.py",
        "setup": setup_line(store),
        "delays": args.delays,
        "modes": args.modes,
        "gate": store.data.get("gate"),
        "points": store.data["points"],
    }
    (out / "latency_curve.json").write_text(json.dumps(results, indent=1) + "\n")


def write_plot(store: Store, args: argparse.Namespace, path: Path) -> None:
    """Success (%) vs delay, one line per policy and mode, its 95 % Wilson interval shaded."""
    from benchmarks.core.plots import line_plot

    series, bands = {}, {}
    for policy, label in LABELS.items():
        for mode in args.modes:
            found = [curve_point(store, policy, d, mode) for d in args.delays]
            series[f"{label}, {mode}"] = [None if r is None else 100 * r["rate"] for r in found]
            bands[f"{label}, {mode}"] = tuple(
                [None if r is None else 100 * r["ci95"][i] for r in found] for i in (0, 1)
            )
    task = store.data["settings"]["vla_learning"]["task"]
    line_plot(
        path,
        args.delays,
        series,
        bands=bands,
        dashed=[label for label in series if label.endswith(", continue")],
        xlabel="delay per decision (control steps, 30 Hz)",
        ylabel="success (%)",
        title=f"{task}: success vs inference delay",
        ylim=(-3, 103),
    )


if __name__ == "__main__":
    sys.exit(main())
