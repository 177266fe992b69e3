"""Everything simulated, in one wing: nothing here calls a model, and every record it makes says so.

- :mod:`~reliabench.sim.agent`: the ``simulated`` agent kind (real code from a task's
  reference files, really run and scanned; behaviour drawn from a profile).
- :mod:`~reliabench.sim.profiles`: the behaviour profiles and their implied reliability.
- :mod:`~reliabench.sim.mutate`: the AST mutations, hangs and syntax errors it writes.
- :mod:`~reliabench.sim.synthetic`: the synthetic multi-rollout benchmark (``reliabench simulate``).
- :mod:`~reliabench.sim.design`: the adaptive design simulated over many benchmarks
  (coverage, bias and savings of ``reliabench.studies.adaptive``).
- :mod:`~reliabench.sim.simulation_tables`, :mod:`~reliabench.sim.sweep_tables`: their renderers.
- :mod:`~reliabench.sim.command`: ``reliabench simulate``.

The rest of reliabench knows only the ``simulated`` flag of an agent and of a record (and
renders the ``[SIMULATED]`` mark from it, :mod:`reliabench.report.marks`).
"""

__all__: list[str] = []
