"""One run of an agent, split by job.

``state``: the :class:`Run` (its state and loop) · ``step``: one model step · ``tool_phase``:
approvals, tool calls, their results and errors · ``structured``: structured output ·
``ending``: the run's end and result · ``suspended``: the state of a run waiting on an approval ·
``hooks``: what a run is given (:class:`ThreadHooks`, the processors' :class:`TripWire`).
"""

from .hooks import ThreadHooks, TripWire, maybe_await
from .state import Run
from .tool_phase import DECLINED_MESSAGE

__all__ = ["DECLINED_MESSAGE", "Run", "ThreadHooks", "TripWire", "maybe_await"]
