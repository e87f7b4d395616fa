"""SpatialAgent: Plan-Execute and ReAct over typed spatial perception tools with swappable backends
(SpatialScore Sec. 3.3-3.4). ``core`` runs the paradigms, ``tools`` holds the specs and the toolbox,
``calls`` parses the core's output, ``prompts`` the role prompts, ``cv_tools`` the OpenCV backend."""

from policies.agent.core import PARADIGMS, AgentConfig, AgentResult, SpatialAgent
from policies.agent.tools import SPECS, ToolBackend, Toolbox, ToolCall, ToolContext, ToolError

__all__ = [
    "PARADIGMS",
    "SPECS",
    "AgentConfig",
    "AgentResult",
    "SpatialAgent",
    "ToolBackend",
    "ToolCall",
    "ToolContext",
    "ToolError",
    "Toolbox",
]
