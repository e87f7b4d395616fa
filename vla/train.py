"""``python -m vla.train``: fine-tune a VLM as a VLA with the VLM4VLA recipe, on one CPU or many GPUs.

The defaults are the published recipe: full fine-tuning (vision tower included), Adam, lr 2e-5, linear
warm-up over 0.25 epoch then cosine decay to 1 % of the peak, gradient clipping at 1.0, bf16 on GPUs that
support it, global batch 128, seed 123. Built on accelerate, so the same command runs on

- one CPU or one GPU:   ``python -m vla.train --backbone DIR --data DIR --output DIR``
- many GPUs / nodes:    ``accelerate launch --multi_gpu --num_processes 8 -m vla.train ...``
  (add ``--num_machines N --machine_rank R --main_process_ip IP --main_process_port 29500`` per node;
  ``accelerate config`` can select DeepSpeed ZeRO-2, which the paper used).

``--batch-size`` is the global batch: it is split over processes and ``--grad-accum`` steps.

Outputs under ``--output``: ``train_config.json``; ``train_log.jsonl`` (one JSON line per logged step);
``checkpoints/<step>/`` (a model directory ``VLAModel.from_pretrained`` and ``--checkpoint`` read, plus
``training_state/`` and ``trainer_state.json`` for ``--resume``); ``checkpoints/last`` points at the newest.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from policies.config_cli import InputError, arg, parse_config, run_cli
from vla.augment import Augment

if TYPE_CHECKING:  # torch and the model are imported when training starts
    import torch

    from vla.data.common import ChunkDataset
    from vla.model import VLAModel
    from vla.normalization import ActionNormalizer

LOG_FILE, STATE_FILE, TRAIN_CONFIG_FILE = "train_log.jsonl", "trainer_state.json", "train_config.json"


@dataclass
class TrainConfig:
    """Fine-tune a VLM backbone + action head (VLM4VLA) on CALVIN, LIBERO or LeRobot v3 demonstrations."""

    backbone: str = arg(
        "",
        "VLM to start from: a directory, a hub id (needs --allow-download), or a tiny-* test model (tiny-qwen2.5-vl, tiny-kosmos2, ...; python -m vla.backbones --list)",
    )
    data: str = arg(
        "",
        "demonstrations: a CALVIN split directory (or its parent with training/), LIBERO .hdf5 file(s), or a LeRobotDataset v3 folder",
    )
    output: str = arg("outputs/vla", "run directory for checkpoints and logs")
    data_format: Literal["auto", "calvin", "libero", "lerobot"] = arg(
        "auto", "demonstration format (auto: detected from the files)"
    )
    chunk_size: int | None = arg(
        None,
        "actions predicted per query (default: 10 CALVIN, 4 LIBERO; LeRobot: by the data's convention)",
        minimum=1,
    )
    cameras: tuple[str, ...] = arg(
        (), "dataset image keys fed to the model, in order (default: rgb_static / agentview_rgb)"
    )
    image_size: int = arg(224, "square image side the samples are resized to", minimum=1)
    augment: str = arg(
        "none",
        "training-image augmentation: none, or a comma list of shift (random shift) and color (colour jitter)",
    )
    num_action_tokens: int = arg(
        1, "copies of the learnable action token appended to the input ('latent')", minimum=1
    )
    position_ids: Literal["mrope", "plain"] = arg(
        "mrope", "Qwen position ids: mrope (correct M-RoPE) or plain (as the public VLM4VLA Qwen code)"
    )
    action_norm: Literal["published", "quantile"] = arg(
        "published",
        "arm normalisation bounds: published (+/-0.65) or quantile (training data's 1st/99th percentiles)",
    )
    norm_max_samples: int = arg(
        20_000, "most frames whose actions are read for normalisation statistics", minimum=1
    )
    epochs: float = arg(2.0, "passes over the data (the paper: 2 on CALVIN)", minimum=0.0001)
    max_steps: int | None = arg(None, "optimizer steps; overrides --epochs", minimum=1)
    time_budget_s: float | None = arg(
        None, "stop (and save) after this many seconds of training", minimum=0.001
    )
    batch_size: int = arg(128, "global batch size (split over processes and accumulation steps)", minimum=1)
    grad_accum: int = arg(1, "gradient-accumulation steps per optimizer step", minimum=1)
    lr: float = arg(2e-5, "peak learning rate (Adam)", minimum=0)
    min_lr_ratio: float = arg(0.01, "cosine decay ends at this fraction of the peak", minimum=0)
    warmup_epochs: float = arg(0.25, "linear warm-up length in epochs", minimum=0)
    warmup_steps: int | None = arg(
        None, "linear warm-up length in steps; overrides --warmup-epochs", minimum=0
    )
    weight_decay: float = arg(0.0, "Adam weight decay", minimum=0)
    grad_clip: float = arg(1.0, "gradient-norm clipping", minimum=0)
    precision: Literal["auto", "bf16", "fp16", "fp32"] = arg(
        "auto", "auto (bf16 on GPUs that support it, else fp16 on GPUs, fp32 on CPU), bf16, fp16 or fp32"
    )
    freeze_backbone: bool = arg(
        False,
        "train only the action token and head (the checkpoint then names the backbone instead of copying it)",
    )
    seed: int = arg(123, "seed for the head's initialisation, data order and dropout")
    num_workers: int = arg(4, "data-loader worker processes per training process", minimum=0)
    log_every: int = arg(10, "optimizer steps between log lines", minimum=1)
    save_every: int = arg(
        1000, "optimizer steps between checkpoints (one is always written at the end)", minimum=1
    )
    keep_checkpoints: int = arg(2, "newest checkpoints kept on disk (0: keep all)", minimum=0)
    resume: bool = arg(False, "continue from <output>/checkpoints/last")
    allow_download: bool = arg(False, "let transformers download a hub id that is not cached locally")

    def check(self) -> None:
        if not self.backbone or not self.data:
            raise ValueError(
                "--backbone and --data are required: the VLM to start from and the demonstrations"
            )
        if self.batch_size < 1 or self.grad_accum < 1:
            raise ValueError(
                f"--batch-size and --grad-accum must be >= 1, got {self.batch_size}, {self.grad_accum}"
            )
        if self.precision not in ("auto", "bf16", "fp16", "fp32"):
            raise ValueError(f"--precision must be auto, bf16, fp16 or fp32, got {self.precision!r}")
        Augment.parse(self.augment)
        self._check_paths()

    def _check_paths(self) -> None:
        """The data reads as CALVIN, LIBERO or LeRobot demonstrations and the backbone is there (nothing loaded)."""
        from policies.preflight import check_path
        from vla.data import detect_format
        from vla.policy import check_backbone

        check_path("--data", self.data, kind="dataset folder")
        try:
            detect_format(self.data)
        except ValueError as error:
            raise ValueError(f"--data {error}") from None
        check_backbone("--backbone", self.backbone, allow_download=self.allow_download)


# ------------------------------------------------------------------------------------------ schedule


def lr_factor(step: int, warmup: int, total: int, min_ratio: float) -> float:
    """Linear warm-up over ``warmup`` steps, then cosine from 1 to ``min_ratio`` at step ``total``."""
    if step < warmup:
        return (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return min_ratio + (1.0 - min_ratio) * 0.5 * (1.0 + math.cos(math.pi * progress))


def mixed_precision(precision: str, cuda: bool) -> str:
    """accelerate's ``mixed_precision`` for ``--precision`` (``auto``: bf16 where supported)."""
    if precision == "auto":
        if not cuda:
            return "no"  # bf16 autocast on CPUs without native bf16 is slower than fp32
        import torch

        return "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    return {"fp32": "no"}.get(precision, precision)


def precision_name(mixed: str) -> str:
    """What accelerate's ``mixed_precision`` trains in, as ``--precision`` names it (``no``: fp32)."""
    return {"no": "fp32"}.get(mixed, mixed)


def micro_batch(global_batch: int, processes: int, accumulation: int) -> int:
    per_step = processes * accumulation
    if global_batch % per_step:
        raise ValueError(
            f"--batch-size {global_batch} is not divisible by processes x --grad-accum = {processes} x {accumulation}"
        )
    return global_batch // per_step


# ------------------------------------------------------------------------------------------ batches


class Collator:
    """Samples -> model inputs + normalised targets; picklable, so it runs in data-loader workers."""

    def __init__(
        self,
        build_inputs: Callable[..., dict[str, torch.Tensor]],
        normalizer: ActionNormalizer,
        augment: Augment | None = None,
    ) -> None:
        self.build_inputs, self.normalizer = build_inputs, normalizer
        self.augment = augment or Augment()

    def __call__(self, samples: list[Any]) -> dict[str, Any]:
        import torch

        arm, gripper = self.normalizer.targets(np.stack([s.actions for s in samples]))
        images = [s.images for s in samples]
        if self.augment:
            # torch's generator is seeded per run (and per loader worker), so the draws repeat with the seed
            rng = np.random.default_rng(int(torch.randint(2**62, ()).item()))
            images = [[self.augment(img, rng) for img in imgs] for imgs in images]
        inputs = self.build_inputs(images, [s.instruction for s in samples])
        return {"inputs": inputs, "arm": torch.from_numpy(arm), "gripper": torch.from_numpy(gripper)}


# ------------------------------------------------------------------------------------------ trainer


class Trainer:
    """One training run: builds data, model and optimizer, then loops with logging and checkpoints."""

    def __init__(self, config: TrainConfig) -> None:
        import torch
        from accelerate import Accelerator, DataLoaderConfiguration
        from accelerate.utils import set_seed

        config.check()
        self.config, self.out = config, Path(config.output)
        self.augment = Augment.parse(config.augment)
        cuda = torch.cuda.is_available()
        self.accelerator = Accelerator(
            cpu=not cuda,  # CPU-only machines: several processes (torchrun) train with the gloo backend
            mixed_precision=mixed_precision(config.precision, cuda),
            gradient_accumulation_steps=config.grad_accum,
            dataloader_config=DataLoaderConfiguration(use_seedable_sampler=True),
        )
        set_seed(config.seed)
        self.dataset = self._open_data()
        self.model = self._build_model()
        self.loader = self._loader()
        self.optimizer = torch.optim.Adam(
            [p for p in self.model.parameters() if p.requires_grad],
            lr=config.lr,
            weight_decay=config.weight_decay,
        )
        self.model, self.optimizer, self.loader = self.accelerator.prepare(
            self.model, self.optimizer, self.loader
        )
        self._plan_steps()
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lambda s: lr_factor(s, self.warmup, self.total_steps, config.min_lr_ratio)
        )
        # The schedule's state is saved in STATE_FILE (JSON), not with register_for_checkpointing: accelerate
        # loads such objects with torch.load(weights_only=False), which runs any code a checkpoint holds.
        self.step, self.epoch, self.batches_done = 0, 0, 0

    # ---- set-up

    def _open_data(self) -> ChunkDataset:
        from vla.data import open_dataset

        c = self.config
        try:
            return open_dataset(
                c.data,
                data_format=c.data_format,
                chunk_size=c.chunk_size,
                cameras=c.cameras or None,
                image_size=c.image_size,
            )
        except FileNotFoundError as error:  # a dataset folder without a file its layout requires
            raise InputError(f"--data {error}") from None

    def _normalizer(self) -> ActionNormalizer:
        from vla.normalization import ActionNormalizer

        last = self.out / "checkpoints" / "last"
        if self.config.resume and (last / "normalization.json").is_file():
            return ActionNormalizer.load(last / "normalization.json")
        actions = self.dataset.action_samples(self.config.norm_max_samples, self.config.seed)
        return ActionNormalizer.fit(actions, self.config.action_norm, self.dataset.gripper_open_value)

    def _build_model(self) -> VLAModel:
        from vla.model import VLAModel

        c, d = self.config, self.dataset
        model = VLAModel.build(
            c.backbone,
            normalizer=self._normalizer(),
            allow_download=c.allow_download,
            seed=c.seed,
            chunk_size=d.chunk_size,
            cameras=list(d.cameras),
            image_size=c.image_size,
            data_format=d.data_format,
            num_action_tokens=c.num_action_tokens,
            position_ids=c.position_ids,
            backbone_saved=not c.freeze_backbone,
        )
        if c.freeze_backbone:
            model.backbone.requires_grad_(False)
        if self.augment:
            model.backbone.stop_caching()
        return model

    def _loader(self) -> Any:
        from torch.utils.data import DataLoader

        c = self.config
        size = micro_batch(c.batch_size, self.accelerator.num_processes, c.grad_accum)
        if len(self.dataset) < size:
            raise ValueError(
                f"{c.data} has {len(self.dataset)} samples, fewer than one batch of {size}; lower --batch-size"
            )
        collate = Collator(self.model.input_builder(), self.model.normalizer, self.augment)
        return DataLoader(
            self.dataset,
            batch_size=size,
            shuffle=True,
            drop_last=True,
            collate_fn=collate,
            num_workers=c.num_workers,
            persistent_workers=c.num_workers > 0,
        )

    def _plan_steps(self) -> None:
        c = self.config
        self.steps_per_epoch = max(1, len(self.loader) // c.grad_accum)
        self.total_steps = c.max_steps or max(1, math.ceil(c.epochs * self.steps_per_epoch))
        self.warmup = (
            c.warmup_steps if c.warmup_steps is not None else round(c.warmup_epochs * self.steps_per_epoch)
        )
        self.warmup = max(1, min(self.warmup, self.total_steps))

    # ---- loop

    def run(self) -> Path:
        self._start_files()
        if self.config.resume:
            self._resume()
        began, window = time.monotonic(), []
        while self.step < self.total_steps and not self._out_of_time(began):
            self.loader.set_epoch(self.epoch)
            batches = (
                self.accelerator.skip_first_batches(self.loader, self.batches_done)
                if self.batches_done
                else self.loader
            )
            for batch in batches:
                window.append(self._micro_step(batch))
                self.batches_done += 1
                if not self.accelerator.sync_gradients:
                    continue
                self.step += 1
                if self.step % self.config.log_every == 0 or self.step == self.total_steps:
                    self._log(window, began)
                    window = []
                if self.step % self.config.save_every == 0:
                    self.save()
                if self.step >= self.total_steps or self._out_of_time(began):
                    break
            else:
                self.epoch, self.batches_done = self.epoch + 1, 0
        if window:
            self._log(window, began)
        last = self.out / "checkpoints" / f"{self.step:07d}"
        final = last if (last / STATE_FILE).is_file() else self.save()
        self._print(f"final checkpoint: {final}")
        return final

    def _micro_step(self, batch: dict[str, Any]) -> dict[str, float]:
        with self.accelerator.accumulate(self.model):
            losses = self.model(batch["inputs"], batch["arm"], batch["gripper"])
            self.accelerator.backward(losses["loss"])
            grad_norm = None
            if self.accelerator.sync_gradients:
                grad_norm = self.accelerator.clip_grad_norm_(self.model.parameters(), self.config.grad_clip)
            self.optimizer.step()
            if self.accelerator.sync_gradients:
                self.scheduler.step()
            self.optimizer.zero_grad()
        values = {k: float(v.detach()) for k, v in losses.items()}
        if grad_norm is not None:
            values["grad_norm"] = float(grad_norm)
        return values

    def _out_of_time(self, began: float) -> bool:
        budget = self.config.time_budget_s
        if budget is None:
            return False
        import torch

        # every process must stop at the same step, so the main process decides
        flag = torch.tensor([float(time.monotonic() - began > budget)], device=self.accelerator.device)
        return bool(self.accelerator.reduce(flag, reduction="sum").item() > 0)

    # ---- logging

    def _start_files(self) -> None:
        if self.accelerator.is_main_process:
            self.out.mkdir(parents=True, exist_ok=True)
            (self.out / TRAIN_CONFIG_FILE).write_text(json.dumps(asdict(self.config), indent=2) + "\n")
            n = len(self.dataset)
            self._print(
                f"{n} samples, {self.steps_per_epoch} steps/epoch, {self.total_steps} steps, "
                f"warm-up {self.warmup}, {self.accelerator.num_processes} process(es), "
                f"precision {precision_name(self.accelerator.mixed_precision)} (--precision "
                f"{self.config.precision}), device {self.accelerator.device}"
            )

    def _log(self, window: list[dict[str, float]], began: float) -> None:
        import torch

        keys = sorted({k for row in window for k in row})
        means = {k: float(np.mean([row[k] for row in window if k in row])) for k in keys}
        local = torch.tensor([means[k] for k in keys], device=self.accelerator.device)
        means = dict(zip(keys, self.accelerator.reduce(local, reduction="mean").tolist()))
        elapsed = time.monotonic() - began
        record = {
            "step": self.step,
            "epoch": round(self.step / self.steps_per_epoch, 4),
            "lr": self.scheduler.get_last_lr()[0],
            "elapsed_s": round(elapsed, 2),
            **means,
        }
        if not self.accelerator.is_main_process:
            return
        with (self.out / LOG_FILE).open("a") as handle:
            handle.write(json.dumps(record) + "\n")
        self._print(
            f"step {self.step}/{self.total_steps} epoch {record['epoch']:.2f} loss {means['loss']:.4f} "
            f"(arm {means['loss_arm']:.4f}, gripper {means['loss_gripper']:.4f}, acc {means['acc_gripper']:.2f}) "
            f"lr {record['lr']:.2e} {elapsed:.0f}s"
        )

    def _print(self, text: str) -> None:
        if self.accelerator.is_main_process:
            print(f"[vla.train] {text}", flush=True)

    # ---- checkpoints

    def save(self) -> Path:
        """Write ``checkpoints/<step>`` (model + training state) and point ``checkpoints/last`` at it."""
        target = self.out / "checkpoints" / f"{self.step:07d}"
        self.accelerator.wait_for_everyone()
        if self.accelerator.is_main_process:
            self.accelerator.unwrap_model(self.model).save_pretrained(target)
        self.accelerator.save_state(str(target / "training_state"))
        if self.accelerator.is_main_process:
            # plain numbers (the lambda is not saved)
            state = {
                "step": self.step,
                "epoch": self.epoch,
                "batches_done": self.batches_done,
                "scheduler": self.scheduler.state_dict(),
            }
            (target / STATE_FILE).write_text(json.dumps(state) + "\n")
            _point_last(target)
            self._prune()
            self._print(f"saved {target}")
        self.accelerator.wait_for_everyone()
        return target

    def _prune(self) -> None:
        keep = self.config.keep_checkpoints
        steps = sorted(p for p in (self.out / "checkpoints").iterdir() if p.name.isdigit())
        for old in steps[:-keep] if keep > 0 else []:
            shutil.rmtree(old, ignore_errors=True)

    def _restore_schedule(self, saved: dict[str, Any] | None) -> None:
        lrs = [group["lr"] for group in self.optimizer.param_groups]
        self.scheduler.load_state_dict(_schedule_state(saved, self.scheduler.state_dict(), self.step, lrs))

    def _resume(self) -> None:
        last = self.out / "checkpoints" / "last"
        if not (last / STATE_FILE).is_file():
            raise FileNotFoundError(f"--resume: no checkpoint at {last} (train without --resume first)")
        self.accelerator.load_state(str(last.resolve() / "training_state"))
        state = json.loads((last / STATE_FILE).read_text())
        self.step, self.epoch, self.batches_done = state["step"], state["epoch"], state["batches_done"]
        self._restore_schedule(state.get("scheduler"))
        self._print(f"resumed from {last.resolve()} at step {self.step}")


def _schedule_state(
    saved: dict[str, Any] | None, current: dict[str, Any], step: int, lrs: list[float]
) -> dict[str, Any]:
    """The LR schedule's state to resume with: the saved one, or for checkpoints written before it was saved,
    the state after ``step`` scheduler steps (one per optimizer step) at the optimizer's restored rates."""
    if saved is not None:
        return saved
    return {**current, "last_epoch": step, "_step_count": step + 1, "_last_lr": list(lrs)}


def _point_last(target: Path) -> None:
    link = target.parent / "last"
    temporary = target.parent / f".last-{os.getpid()}"
    temporary.unlink(missing_ok=True)
    temporary.symlink_to(target.name)
    os.replace(temporary, link)


def train(config: TrainConfig) -> Path:
    """Run training; returns the final checkpoint directory."""
    return Trainer(config).run()


def main(argv: list[str] | None = None) -> None:
    train(parse_config(TrainConfig, argv, prog="python -m vla.train"))


if __name__ == "__main__":
    sys.exit(run_cli(main))
