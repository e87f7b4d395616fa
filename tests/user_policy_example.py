"""A user-written model with CALVIN's interface, loaded by import path in the tests."""

import numpy as np


class ConstantModel:
    def __init__(self, value: float = 0.5) -> None:
        self.value, self.resets = value, 0

    def reset(self) -> None:
        self.resets += 1

    def step(self, obs, instruction):
        return np.full(7, self.value if "open" in instruction else -self.value)


class CalvinLayoutButtonModel:
    """A model written for CALVIN's ``evaluate_policy``: it reads calvin_env's nested observation
    (``obs["rgb_obs"]["rgb_static"]``, ``obs["depth_obs"]``, ``obs["robot_obs"]``) and presses scene D's
    button with the closed fingers (relative actions), which turns the LED on or off. On the flat layout
    its first read raises ``KeyError: 'rgb_obs'``, as a model from CALVIN's code base does."""

    BUTTON_TOP = np.array([-0.12, -0.12, 0.46 + 0.024 + 0.013])  # CALVIN's button cap under the TCP

    def __init__(self) -> None:
        self.frames: list[tuple] = []
        self.phase = "hover"

    def reset(self) -> None:
        self.phase = "hover"

    def step(self, obs, instruction):
        rgb, depth = obs["rgb_obs"]["rgb_static"], obs["depth_obs"]["depth_static"]
        self.frames.append((rgb.shape, str(rgb.dtype), depth.shape, sorted(obs["rgb_obs"])))
        tcp = np.asarray(obs["robot_obs"][:3])
        goal = self.BUTTON_TOP + (
            np.array([0, 0, 0.05]) if self.phase == "hover" else np.array([0, 0, -0.02])
        )
        if self.phase == "hover" and np.linalg.norm(goal - tcp) < 0.01:
            self.phase = "press"
        move = np.clip((goal - tcp) / 0.02, -1, 1)
        return np.array([*move, 0, 0, 0, -1.0])


class InstructionRecorder:
    """Holds still and appends every instruction it is given to the file ``path`` (one per line)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def reset(self) -> None:
        pass

    def step(self, obs, instruction):
        with open(self.path, "a") as log:
            log.write(f"{instruction}\n")
        return np.array([0, 0, 0, 0, 0, 0, 1.0])
