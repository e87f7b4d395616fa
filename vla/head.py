"""The FCDecoder action head of VLM4VLA (as in its public code, inherited from RoboVLMs) and its loss.

Shapes, with ``d`` the backbone's hidden size, ``L`` the number of action tokens (``latent``), ``H`` the
head width (1024) and ``C`` the chunk length:

    action-token states (B, L, d) -> flatten (B, L*d) -> Linear(L*d, L*d/2) -> ReLU -> Linear(-> H*L)
        -> arm:     Linear(H*L, 1024) ReLU Linear(1024, 512) ReLU Linear(512, 256) ReLU Linear(256, C*6) tanh
        -> gripper: the same MLP ending in Linear(256, C) (logits; sigmoid in the loss and at inference)

All linear layers start Xavier-uniform with zero bias, as published. Loss: Huber on the 6 normalised arm
values + 0.01 x binary cross-entropy on the gripper ("arm_gripper_loss_ratio": 0.01).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

ARM_DIMS = 6
HEAD_WIDTH = 1024  # "act_head": {"hidden_size": 1024} in the public configs
GRIPPER_LOSS_WEIGHT = 0.01


def _mlp(in_features: int, out_features: int, final: nn.Module | None) -> nn.Sequential:
    layers: list[nn.Module] = []
    for a, b in ((in_features, 1024), (1024, 512), (512, 256)):
        layers += [nn.Linear(a, b), nn.ReLU()]
    layers.append(nn.Linear(256, out_features))
    if final is not None:
        layers.append(final)
    return nn.Sequential(*layers)


class FCDecoder(nn.Module):
    """Action-token hidden states -> (arm ``(B, C, 6)`` in [-1, 1], gripper logits ``(B, C)``)."""

    def __init__(
        self, in_features: int, chunk_size: int, latent: int = 1, hidden_size: int = HEAD_WIDTH
    ) -> None:
        super().__init__()
        if in_features * latent < 2:
            raise ValueError(f"FCDecoder needs in_features * latent >= 2, got {in_features} * {latent}")
        self.chunk_size, self.latent, self.in_features = chunk_size, latent, in_features
        self.mlp = nn.Sequential(
            nn.Linear(in_features * latent, in_features * latent // 2),
            nn.ReLU(),
            nn.Linear(in_features * latent // 2, hidden_size * latent),
        )
        self.actions = _mlp(hidden_size * latent, chunk_size * ARM_DIMS, nn.Tanh())
        self.gripper = _mlp(hidden_size * latent, chunk_size, None)
        self._init_published()

    def _init_published(self) -> None:
        for module in self.modules():
            if isinstance(module, nn.Linear):
                nn.init.xavier_uniform_(module.weight)
                nn.init.zeros_(module.bias)

    def forward(self, action_states: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if action_states.ndim != 3 or action_states.shape[1:] != (self.latent, self.in_features):
            raise ValueError(
                f"FCDecoder expects (batch, {self.latent}, {self.in_features}) action-token states, "
                f"got {tuple(action_states.shape)}"
            )
        features = self.mlp(action_states.flatten(1))
        arm = self.actions(features).view(-1, self.chunk_size, ARM_DIMS)
        return arm, self.gripper(features)


def action_loss(
    arm: torch.Tensor,
    gripper_logits: torch.Tensor,
    arm_target: torch.Tensor,
    gripper_target: torch.Tensor,
    gripper_weight: float = GRIPPER_LOSS_WEIGHT,
) -> dict[str, torch.Tensor]:
    """``loss = huber(arm) + gripper_weight * bce(gripper)``, plus the parts and the gripper accuracy."""
    arm_loss = F.huber_loss(arm.float(), arm_target.float())
    gripper_loss = F.binary_cross_entropy_with_logits(gripper_logits.float(), gripper_target.float())
    accuracy = ((gripper_logits.detach() > 0).float() == gripper_target).float().mean()
    return {
        "loss": arm_loss + gripper_weight * gripper_loss,
        "loss_arm": arm_loss,
        "loss_gripper": gripper_loss,
        "acc_gripper": accuracy,
    }
