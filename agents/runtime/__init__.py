"""The agent runtime: plain asyncio, no Django. ``from agents.runtime import Agent, create_tool``."""

from .abort import AbortController, AbortSignal
from .agent import Agent
from .channels import create_github_adapter, create_slack_adapter
from .errors import (AgentConfigError, MastraError, MissingCredentialsError, ModelError, SignalError,
                     StructuredOutputError, ThreadNotFoundError, ToolApprovalError)
from .mastra import Mastra
from .memory import BaseMemory, InMemoryMemory, MemoryThread, MessagePage, ThreadPage
from .options import has_tool_call, step_count_is
from .output import AgentOutput
from .results import GenerateResult, StepResult, Usage
from .tools import Tool, ToolContext, create_tool
from .voice import AudioStream, CompositeVoice, LocalVoice, MastraVoice, VoiceError
from .providers.openai_voice import OpenAIVoice  # imports the openai SDK only when it speaks or listens

__all__ = [
    "AbortController", "AbortSignal", "Agent", "AgentConfigError", "AgentOutput", "AudioStream", "BaseMemory",
    "CompositeVoice", "LocalVoice", "MastraVoice", "OpenAIVoice", "VoiceError",
    "GenerateResult", "InMemoryMemory", "Mastra", "MastraError", "MemoryThread", "MessagePage", "MissingCredentialsError",
    "ModelError", "SignalError", "StepResult", "StructuredOutputError", "ThreadNotFoundError", "ThreadPage", "Tool",
    "ToolApprovalError", "ToolContext", "Usage", "create_github_adapter", "create_slack_adapter", "create_tool",
    "has_tool_call", "step_count_is",
]
