"""One run of an agent, split by job.

``loop``: the :class:`Run` (its state and loop) · ``step``: one model step · ``tool_phase``:
approvals, tool calls, their results and errors · ``structured``: structured output ·
``ending``: the run's end and result · ``resume_state``: the state of a run waiting on an approval ·
``tool_suspension``: tools that suspend themselves ·
``hooks``: what a run is given (:class:`ThreadHooks`, the processors' :class:`TripWire`).
"""

from .hooks import ThreadHooks, TripWire, maybe_await
from .loop import Run
from .tool_phase import DECLINED_MESSAGE

__all__ = ["DECLINED_MESSAGE", "Run", "ThreadHooks", "TripWire", "maybe_await"]
