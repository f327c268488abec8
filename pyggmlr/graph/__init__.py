"""Graphs and memory (layer 3, above optim/): what compiles, captures or measures a step.

- ``memory.py``: the core's memory counters and MemoryReport;
- ``compile.py``: ag_compile and CompiledStep (static graphs: forward, gradients, the optimizer
  step, replayed);
- ``capture.py``: ggmlR's captured functions and steps, eager on the CPU;
- ``estimate.py``: ag_tape_memory (a tape's or a compiled step's report) and
  ag_estimate_training_memory.
"""
