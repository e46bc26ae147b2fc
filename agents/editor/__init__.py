"""The admin editor: operators change what each code-defined agent's ``editor`` option allows
(instructions, tool membership, tool descriptions) as immutable versions, one of them published.

``models`` (definitions, versions, the generation counter) · ``locks`` (the ``editor`` option's
rules) · ``sync`` (code agents → definitions) · ``services`` (save, publish, roll back, diff) ·
``overrides`` (the runtime's overrides provider with its per-process cache) · ``admin`` and
``dashboard`` (the admin pages).
"""
